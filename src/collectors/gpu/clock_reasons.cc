#include "src/collectors/gpu/clock_reasons.h"

namespace gpuscope {
namespace {

constexpr ClockEventReason kReasons[] = {
    {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
};

constexpr ViolationPolicy kPolicies[] = {
    {NVML_PERF_POLICY_POWER, "DCGM_FI_DEV_POWER_VIOLATION", "power", "power constraints"},
    {NVML_PERF_POLICY_THERMAL, "DCGM_FI_DEV_THERMAL_VIOLATION", "thermal", "thermal constraints"},
    {NVML_PERF_POLICY_SYNC_BOOST, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "sync_boost", "sync-boost constraints"},
    {NVML_PERF_POLICY_BOARD_LIMIT, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "board_limit",
     "board limit constraints"},
    {NVML_PERF_POLICY_LOW_UTILIZATION, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", "low_utilization",
     "low utilization"},
    {NVML_PERF_POLICY_RELIABILITY, "DCGM_FI_DEV_RELIABILITY_VIOLATION", "reliability",
     "reliability constraints"},
};

}  // namespace

std::span<const ClockEventReason> ClockEventReasons() { return kReasons; }

bool ClockEventActive(uint64_t mask, std::string_view reason_name) {
  for (const ClockEventReason& reason : kReasons) {
    if (reason.name == reason_name) return (mask & reason.bit) != 0;
  }
  return false;
}

std::span<const ViolationPolicy> ViolationPolicies() { return kPolicies; }

}  // namespace gpuscope
