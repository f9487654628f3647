// NVML entry points for memory, ECC errors, retired pages and remapped rows, PCIe (replays, throughput,
// link generation and width), NVLink state and error counters, and nvmlDeviceGetFieldValues.
//
// Thread-safety: every entry point may be called from any thread.
#include <cmath>

#include "sim/nvml_entry.h"

using gpuscope::sim::GpuState;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::FillList;
using gpuscope::sim::nvml::kEpochS;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    if (memory == nullptr || memory->version != nvmlMemory_v2) return NVML_ERROR_INVALID_ARGUMENT;
    constexpr unsigned long long kMiB = 1024ULL * 1024;
    const auto& m = *c.config().model;
    const GpuState st = c.State();
    double used_gib = st.mem_used_gib;
    unsigned long long total = m.memory_mib * kMiB;
    unsigned long long reserved = m.reserved_mib * kMiB;
    if (c.mig >= 0) {
      const auto& inst = c.config().mig[c.mig];
      used_gib = gpuscope::sim::MigInstanceMemoryGib(st, inst);
      total = inst.profile->memory_mib * kMiB;
      reserved = 0;
    }
    memory->total = total;
    memory->reserved = reserved;
    memory->used = std::min(total - reserved, static_cast<unsigned long long>(used_gib * 1024 * kMiB));
    memory->free = total - reserved - memory->used;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *value = static_cast<unsigned>(CountersAt(c.sim->scenario(), c.gpu, c.State().t).pcie_replays);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                    unsigned int* kbps) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (kbps == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState st = c.State();
    if (counter == NVML_PCIE_UTIL_TX_BYTES) {
      *kbps = static_cast<unsigned>(st.pcie_tx_kibps);
    } else if (counter == NVML_PCIE_UTIL_RX_BYTES) {
      *kbps = static_cast<unsigned>(st.pcie_rx_kibps);
    } else {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (gen == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *gen = c.State().pcie_gen;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (gen == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *gen = c.config().model->pcie_gen;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (width == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *width = c.State().pcie_width;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (width == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *width = c.config().model->pcie_width;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                                    nvmlEccCounterType_t counter_type,
                                                    unsigned long long* count) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto e = CountersAt(c.sim->scenario(), c.gpu, c.State().t);
    const bool corrected = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (!corrected && error_type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) return NVML_ERROR_INVALID_ARGUMENT;
    if (counter_type == NVML_VOLATILE_ECC) {
      *count = corrected ? e.sbe_volatile : e.dbe_volatile;
    } else if (counter_type == NVML_AGGREGATE_ECC) {
      *count = corrected ? e.sbe_aggregate : e.dbe_aggregate;
    } else {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                  unsigned int* page_count, unsigned long long* addresses) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    std::vector<unsigned long long> pages;
    if (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) {
      for (uint64_t a : CountersAt(c.sim->scenario(), c.gpu, c.State().t).retired_dbe_pages)
        pages.push_back(a);
    } else if (cause != NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    return FillList(pages, page_count, addresses);
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                               nvmlEnableState_t* is_pending) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (is_pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const bool pending = CountersAt(c.sim->scenario(), c.gpu, c.State().t).retirement_pending;
    *is_pending = pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr_rows,
                                                  unsigned int* unc_rows, unsigned int* is_pending,
                                                  unsigned int* failure_occurred) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (!corr_rows || !unc_rows || !is_pending || !failure_occurred) return NVML_ERROR_INVALID_ARGUMENT;
    const auto e = CountersAt(c.sim->scenario(), c.gpu, c.State().t);
    *corr_rows = 0;
    *unc_rows = e.remapped_uncorrectable;
    *is_pending = e.remap_pending ? 1 : 0;
    *failure_occurred = e.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                 nvmlEnableState_t* is_active) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (is_active == nullptr || link >= c.config().model->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *is_active = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                        nvmlNvLinkErrorCounter_t counter,
                                                        unsigned long long* value) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (value == nullptr || link >= c.config().model->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    const auto e = CountersAt(c.sim->scenario(), c.gpu, c.State().t);
    switch (counter) {
      case NVML_NVLINK_ERROR_DL_REPLAY:
        *value = e.replay[link];
        return NVML_SUCCESS;
      case NVML_NVLINK_ERROR_DL_RECOVERY:
        *value = e.recovery[link];
        return NVML_SUCCESS;
      case NVML_NVLINK_ERROR_DL_CRC_FLIT:
        *value = e.crc_flit[link];
        return NVML_SUCCESS;
      case NVML_NVLINK_ERROR_DL_CRC_DATA:
        *value = e.crc_data[link];
        return NVML_SUCCESS;
      case NVML_NVLINK_ERROR_DL_ECC_DATA:
        *value = 0;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (count < 0 || (count > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState st = c.State();
    const auto& m = *c.config().model;
    const long long timestamp = static_cast<long long>((kEpochS + st.t) * 1e6);
    for (int i = 0; i < count; ++i) {
      nvmlFieldValue_t& f = values[i];
      f.timestamp = timestamp;
      f.latencyUsec = 0;
      f.nvmlReturn = NVML_SUCCESS;
      f.value.ullVal = 0;
      const bool per_link = f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
                            f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
      if (f.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
        f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        f.value.uiVal =
            static_cast<unsigned>(std::lround(st.temp_c + m.memory_temp_offset_c + 4 * st.raw.dram));
      } else if (f.fieldId == NVML_FI_DEV_NVLINK_LINK_COUNT) {
        f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        f.value.uiVal = m.nvlinks;
      } else if (per_link) {
        const auto& kib =
            f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? st.nvlink_tx_kib : st.nvlink_rx_kib;
        f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        if (f.scopeId < m.nvlinks) {
          f.value.ullVal = static_cast<unsigned long long>(kib[f.scopeId]);
        } else if (f.scopeId == 0xFFFFFFFFu) {  // all links together
          double total = 0;
          for (unsigned l = 0; l < m.nvlinks; ++l) total += kib[l];
          f.value.ullVal = static_cast<unsigned long long>(total);
        } else {
          f.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
        }
      } else {
        f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      }
    }
    return NVML_SUCCESS;
  });
}

}  // extern "C"
