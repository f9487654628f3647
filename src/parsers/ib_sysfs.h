// Pure parsers of the value formats found under /sys/class/infiniband/<dev>/ports/<n>/ (see the kernel's
// Documentation/ABI/stable/sysfs-class-infiniband): counters ("12345", or "N/A (no PMA)" from drivers
// without a Performance Management Agent), enumerated states ("4: ACTIVE", "5: LinkUp"), the link rate
// ("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)"). PCI addresses and sysfs numbers: src/parsers/pci.h.
// No I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/parsers/pci.h"

namespace gpuscope {

// What a counter file held.
struct IbCounterValue {
  enum class Kind { kValue, kNotAvailable, kMalformed };
  Kind kind = Kind::kMalformed;
  uint64_t value = 0;  // meaningful for kValue only
};

// Parses a counter file: a decimal unsigned 64-bit number with optional surrounding whitespace yields
// kValue; "N/A (no PMA)" (or any text starting with "N/A") yields kNotAvailable, which callers treat as
// absent, never as zero; anything else (empty, negative, overflow, trailing junk) yields kMalformed.
IbCounterValue ParseIbCounter(std::string_view content);

// An enumerated attribute such as state ("4: ACTIVE") or phys_state ("5: LinkUp").
struct IbEnumValue {
  int code = 0;
  std::string name;  // "ACTIVE", "LinkUp"; "unknown" when the file had only a number
};

// Parses "<code>: <name>" (also a bare "<code>"). Returns nullopt for malformed content (no leading
// decimal code, code above 255, control characters in the name).
std::optional<IbEnumValue> ParseIbEnum(std::string_view content);

// The link rate as the kernel prints it: "%d[.5] Gb/sec (%dX[ SPEED])".
struct IbRate {
  double gbit_per_second = 0;  // signalling data rate as printed, 200 for "200 Gb/sec"
  int width_lanes = 0;         // 4 for "4X"; 0 when the parenthesised part is missing
  std::string speed;           // "HDR", "EDR", ...; empty when absent
  double BytesPerSecond() const { return gbit_per_second * 1e9 / 8; }
};

// Parses a rate file. Returns nullopt when the "<number> Gb/sec" prefix is missing or malformed; a
// missing or malformed "(4X HDR)" part leaves width_lanes 0 and speed empty.
std::optional<IbRate> ParseIbRate(std::string_view content);

// Turns a driver counter file name into a stable label value: characters outside [A-Za-z0-9_] become
// '_', and the result is cut at 128 bytes. Returns "_" for an empty name.
std::string SanitizeIbCounterName(std::string_view name);

}  // namespace gpuscope
