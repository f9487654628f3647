// Clock event ("throttle") reasons and violation policies: the tables that turn NVML's bitmask and
// perf-policy counters into labelled series. Pure data and functions.
//
// Thread-safety: immutable tables.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "src/platform/nvml/nvml_api.h"

namespace gpuscope {

struct ClockEventReason {
  uint64_t bit;           // nvmlClocksEventReason* mask bit
  std::string_view name;  // value of the reason label, e.g. "sw_power_cap"
};

// Every reason gpuscope reports as gpuscope_gpu_clock_event_active{reason}, in bit order.
std::span<const ClockEventReason> ClockEventReasons();

// Whether `reason_name` is active in `mask`; false for unknown names.
bool ClockEventActive(uint64_t mask, std::string_view reason_name);

struct ViolationPolicy {
  nvmlPerfPolicyType_t policy;
  std::string_view dcgm_name;  // "DCGM_FI_DEV_POWER_VIOLATION"
  std::string_view reason;     // label value of gpuscope_gpu_clock_event_seconds_total, e.g. "power"
  std::string_view what;       // words for help texts, e.g. "power constraints"
};

// The six policies DCGM exports as *_VIOLATION, in DCGM's order.
std::span<const ViolationPolicy> ViolationPolicies();

}  // namespace gpuscope
