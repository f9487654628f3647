// NVML entry points for clocks, temperature, power, energy, utilization (GPU, encoder, decoder), clock
// event reasons and violation times.
//
// Thread-safety: every entry point may be called from any thread.
#include <cmath>

#include "sim/nvml_entry.h"

using gpuscope::sim::GpuState;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::kEpochS;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (mhz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& m = *c.config().model;
    const GpuState st = c.State();
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *mhz = st.sm_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *mhz = m.mem_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *mhz = static_cast<unsigned>(std::lround(1.0 * m.video_max_mhz * st.sm_mhz / m.sm_max_mhz));
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                  unsigned int* mhz) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (mhz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& m = *c.config().model;
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *mhz = m.sm_max_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *mhz = m.mem_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *mhz = m.video_max_mhz;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                                 unsigned int* temp) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (temp == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = static_cast<unsigned>(std::lround(std::max(0.0, c.State().temp_c)));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *milliwatts = static_cast<unsigned>(std::lround(c.State().power_w * 1000));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* milliwatts) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *milliwatts = static_cast<unsigned>(std::lround(c.config().power_limit_w * 1000));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                            unsigned long long* millijoules) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (millijoules == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *millijoules = static_cast<unsigned long long>(c.State().energy_mj);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.config().mig.empty()) return NVML_ERROR_NOT_SUPPORTED;  // as on real NVML with MIG enabled
    const GpuState st = c.State();
    utilization->gpu = static_cast<unsigned>(std::lround(st.raw.util * 100));
    utilization->memory = static_cast<unsigned>(std::lround(st.raw.dram * 100));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                        unsigned int* sampling_period_us) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (utilization == nullptr || sampling_period_us == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = static_cast<unsigned>(std::lround(c.State().raw.encoder));
    *sampling_period_us = 167000;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                        unsigned int* sampling_period_us) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (utilization == nullptr || sampling_period_us == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = static_cast<unsigned>(std::lround(c.State().raw.decoder));
    *sampling_period_us = 167000;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                               unsigned long long* reasons) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = c.State().reasons;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                  unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t policy,
                                                     nvmlViolationTime_t* time) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    const unsigned p = static_cast<unsigned>(policy);
    if (time == nullptr || p >= gpuscope::sim::kPolicyCount || (p > 5 && p < 10))
      return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState st = c.State();
    time->referenceTime = static_cast<unsigned long long>((kEpochS + st.t) * 1e6);
    time->violationTime = static_cast<unsigned long long>(st.violation_ns[p]);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
