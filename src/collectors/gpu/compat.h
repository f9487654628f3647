// dcgm-exporter compatibility: the few places where gpuscope's drop-in output depends on which
// dcgm-exporter release a site migrates from, and the unit conversions between NVML and DCGM fields.
// All functions are pure.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuscope {

enum class DcgmCompat {
  kDcgm3,   // dcgm-exporter 3.x: label "Hostname", *_VIOLATION in microseconds
  kDcgm49,  // dcgm-exporter 4.9: label "hostname", *_VIOLATION in nanoseconds
};

// Parses "3" / "dcgm3" / "4.9" / "dcgm4.9". Returns true and sets `*out` on success; false otherwise.
bool ParseDcgmCompat(std::string_view text, DcgmCompat* out);
std::string_view DcgmCompatName(DcgmCompat compat);  // "3" or "4.9"

// Name of the host label on every series: "Hostname" (3.x) or "hostname" (4.9).
std::string_view HostnameLabelName(DcgmCompat compat);

// A DCGM_FI_DEV_*_VIOLATION value from NVML's violationTime (nanoseconds): microseconds for 3.x,
// nanoseconds for 4.9.
double ViolationValue(DcgmCompat compat, uint64_t violation_ns);
// Unit word used in the *_VIOLATION help text: "us" or "ns".
std::string_view ViolationUnit(DcgmCompat compat);

// Unit conversions, named after what they do.
constexpr double MilliwattsToWatts(uint64_t mw) { return static_cast<double>(mw) / 1000.0; }
constexpr double MillijoulesToJoules(uint64_t mj) { return static_cast<double>(mj) / 1000.0; }
// DCGM reports frame buffer sizes as whole MiB (bytes >> 20).
constexpr double BytesToWholeMiB(uint64_t bytes) { return static_cast<double>(bytes >> 20); }
constexpr double KiBToBytes(uint64_t kib) { return static_cast<double>(kib) * 1024.0; }
// nvmlDeviceGetPcieThroughput reports KB/s where NVML's KB is 1024 bytes.
constexpr double PcieKBpsToBytesPerSecond(uint64_t kbps) { return static_cast<double>(kbps) * 1024.0; }
// GPM rates are MiB/s.
constexpr double MiBpsToBytesPerSecond(double mibps) { return mibps * 1048576.0; }
// GPM utilisations are percent (0..100); DCGM_FI_PROF_* are ratios (0..1).
constexpr double PercentToRatio(double percent) { return percent / 100.0; }
constexpr double NanosecondsToSeconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace gpuscope
