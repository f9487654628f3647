// Parser of Linux pressure stall information, /proc/pressure/{cpu,memory,io}
// (Documentation/accounting/psi.rst):
//   some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=7890
// The averages are percentages of wall time over 10 s, 60 s and 300 s; total is cumulative microseconds.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpuscope {

struct PressureLine {
  double avg10 = 0;   // percent, 0..100
  double avg60 = 0;   // percent
  double avg300 = 0;  // percent
  uint64_t total_us = 0;
};

struct PressureFile {
  std::optional<PressureLine> some;
  std::optional<PressureLine> full;  // absent in the cpu file of kernels before 5.13
};

// Parses a whole pressure file. Lines other than "some"/"full" are ignored (forward compatibility); a
// "some"/"full" line missing a field or with a malformed number, a negative or above-100 average, or a file
// with neither line returns nullopt.
std::optional<PressureFile> ParsePressureFile(std::string_view content);

}  // namespace gpuscope
