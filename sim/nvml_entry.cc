// The C API surface: every entry point of GPUSCOPE_NVML_FUNCTIONS (src/platform/nvml/nvml_api.h) plus
// nvmlErrorString, answering from the Simulator. Including nvml_api.h makes the compiler check each
// definition against the agent's declarations.
//
// Thread-safety: every entry point may be called from any thread. The Simulator is held by a
// shared_ptr: nvmlShutdown drops it, calls in flight keep their copy until they return.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>  // std::once_flag
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/control.h"
#include "sim/simulator.h"
#include "src/core/mutex.h"
#include "src/platform/nvml/nvml_api.h"

#define SIM_EXPORT __attribute__((visibility("default")))

using gpuscope::sim::ActivityIntegrals;
using gpuscope::sim::FaultEffects;
using gpuscope::sim::GpuConfig;
using gpuscope::sim::GpuState;
using gpuscope::sim::Simulator;

// Device handles point into a fixed table that outlives every init/shutdown cycle, so a stale handle
// is an invalid argument, never a dangling pointer.
struct nvmlDevice_st {
  unsigned gpu;
  int mig;  // -1: the GPU itself; else the MIG instance's index in the scenario
};

// A GPM sample: the simulated time and the activity integrals (already scaled to the GPU or the MIG
// instance) when it was taken, plus the instantaneous activity for zero-length intervals.
struct nvmlGpmSample_st {
  bool taken = false;
  unsigned gpu = 0;
  int mig = -1;
  double t = 0;
  ActivityIntegrals integrals;
  ActivityIntegrals rates;  // per second, at t
};

namespace {

constexpr unsigned kMaxGpus = 64;
constexpr unsigned kSlots = 8;            // the GPU and up to 7 MIG instances
constexpr double kEpochS = 1700000000.0;  // simulated t = 0 is this Unix time
constexpr unsigned kNoInstance = 0xFFFFFFFFu;

nvmlDevice_st g_handles[kMaxGpus][kSlots] = {};
std::once_flag g_handles_once;

gpuscope::Mutex g_mu;
std::shared_ptr<Simulator> g_sim GUARDED_BY(g_mu);
int g_refs GUARDED_BY(g_mu) = 0;
std::set<nvmlGpmSample_st*> g_samples GUARDED_BY(g_mu);

nvmlDevice_t Handle(unsigned gpu, int mig) {
  std::call_once(g_handles_once, [] {
    for (unsigned g = 0; g < kMaxGpus; ++g) {
      for (unsigned s = 0; s < kSlots; ++s) g_handles[g][s] = {g, static_cast<int>(s) - 1};
    }
  });
  return &g_handles[gpu][mig + 1];
}

bool Resolve(nvmlDevice_t device, unsigned& gpu, int& mig) {
  const auto first = reinterpret_cast<uintptr_t>(&g_handles[0][0]);
  const auto p = reinterpret_cast<uintptr_t>(device);
  if (p < first || p >= first + sizeof(g_handles) || (p - first) % sizeof(nvmlDevice_st) != 0) return false;
  gpu = device->gpu;
  mig = device->mig;
  return true;
}

std::shared_ptr<Simulator> Current() {
  gpuscope::MutexLock lock(&g_mu);
  return g_sim;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

enum class Scope { kGpuOnly, kMigToo };

// One call on a device, after the fault gates.
struct Call {
  std::shared_ptr<Simulator> sim;
  unsigned gpu = 0;
  int mig = -1;
  double now = 0;
  const GpuConfig& config() const { return sim->scenario().gpus[gpu]; }
  GpuState State() const { return sim->StateAt(gpu, now); }
};

// Checks init and the handle, then applies the GPU's faults: lost -> GPU_IS_LOST, slow calls sleep,
// a hang blocks until it ends (in simulated time) or nvmlShutdown.
nvmlReturn_t Enter(nvmlDevice_t device, Scope scope, Call& call) {
  call.sim = Current();
  if (!call.sim) return NVML_ERROR_UNINITIALIZED;
  if (!Resolve(device, call.gpu, call.mig) || call.gpu >= call.sim->gpu_count())
    return NVML_ERROR_INVALID_ARGUMENT;
  if (call.mig >= 0 && static_cast<size_t>(call.mig) >= call.config().mig.size())
    return NVML_ERROR_INVALID_ARGUMENT;
  Simulator& sim = *call.sim;
  double now = sim.Now();
  sim.PumpKernelLog(now);
  FaultEffects fx = EffectsAt(sim.scenario(), call.gpu, now);
  if (fx.lost) return NVML_ERROR_GPU_IS_LOST;
  if (fx.slow_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(fx.slow_ms));
  while (fx.hang) {
    if (sim.shut_down()) return NVML_ERROR_UNINITIALIZED;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fx = EffectsAt(sim.scenario(), call.gpu, sim.Now());
  }
  if (call.mig >= 0 && scope == Scope::kGpuOnly) return NVML_ERROR_NOT_SUPPORTED;
  call.now = sim.Now();
  return NVML_SUCCESS;
}

template <typename Fn>
nvmlReturn_t OnDevice(nvmlDevice_t device, Scope scope, Fn fn) {
  Call call;
  const nvmlReturn_t r = Enter(device, scope, call);
  if (r != NVML_SUCCESS) return r;
  return fn(call);
}

// Fills *count / infos following NVML's protocol: too small -> INSUFFICIENT_SIZE with the needed count.
template <typename T>
nvmlReturn_t FillList(const std::vector<T>& items, unsigned* count, T* out) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned capacity = *count;
  *count = static_cast<unsigned>(items.size());
  if (items.empty()) return NVML_SUCCESS;
  if (capacity < items.size() || out == nullptr) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::copy(items.begin(), items.end(), out);
  return NVML_SUCCESS;
}

std::vector<nvmlProcessInfo_t> Processes(const Call& c, const GpuState& st) {
  const GpuConfig& g = c.config();
  const unsigned n = g.workload.processes;
  std::vector<nvmlProcessInfo_t> list;
  constexpr double kGiBytes = 1024.0 * 1024 * 1024;
  if (c.sim->scenario().proc_processes.enabled) {
    // Real marked processes replace the scenario's made-up ones (whole GPUs only; MIG handles get none).
    if (c.mig >= 0) return list;
    const auto memory =
        static_cast<unsigned long long>(c.sim->scenario().proc_processes.memory_gib * kGiBytes);
    const std::vector<std::vector<unsigned>> by_gpu = c.sim->ProcProcessesByGpu();
    for (unsigned pid : by_gpu[c.gpu]) list.push_back({pid, memory, kNoInstance, kNoInstance});
    return list;
  }
  if (n == 0) return list;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (g.mig.empty()) {
    for (unsigned i = 0; i < n; ++i) {
      list.push_back({c.sim->Pid(c.gpu, i), static_cast<unsigned long long>(st.mem_used_gib * kGiB / n),
                      kNoInstance, kNoInstance});
    }
    return list;
  }
  for (size_t i = 0; i < g.mig.size(); ++i) {
    if ((c.mig >= 0 && static_cast<size_t>(c.mig) != i) || g.mig[i].load <= 0) continue;
    list.push_back({c.sim->Pid(c.gpu, static_cast<unsigned>(i)),
                    static_cast<unsigned long long>(gpuscope::sim::MigInstanceMemoryGib(st, g.mig[i]) * kGiB),
                    g.mig[i].gpu_instance_id, g.mig[i].compute_instance_id});
  }
  return list;
}

ActivityIntegrals Scaled(ActivityIntegrals a, double f) {
  for (double* v : {&a.util, &a.sm_active, &a.occupancy, &a.tensor, &a.dram, &a.fp64, &a.fp32, &a.fp16,
                    &a.integer, &a.pcie_tx_bytes, &a.pcie_rx_bytes, &a.nvlink_tx_bytes, &a.nvlink_rx_bytes}) {
    *v *= f;
  }
  return a;
}

nvmlReturn_t TakeSample(const Call& c, int mig, double scale, nvmlGpmSample_t sample) {
  {
    gpuscope::MutexLock lock(&g_mu);
    if (g_samples.count(sample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!c.config().model->gpm) return NVML_ERROR_NOT_SUPPORTED;
  const GpuState st = c.State();
  nvmlGpmSample_st& s = *sample;
  s.taken = true;
  s.gpu = c.gpu;
  s.mig = mig;
  s.t = st.t;
  s.integrals = Scaled(st.integrals, scale);
  const gpuscope::sim::Activity& r = st.raw;
  double nvlink_bytes_per_s = 0;
  for (unsigned l = 0; l < c.config().model->nvlinks; ++l) nvlink_bytes_per_s += st.nvlink_kibps[l] * 1024;
  const double share_inv = st.mig_share > 0 ? 1 / st.mig_share : 0;
  ActivityIntegrals rates{r.util,
                          r.sm_active,
                          r.occupancy,
                          r.tensor,
                          r.dram,
                          r.fp64,
                          r.fp32,
                          r.fp16,
                          r.integer,
                          st.pcie_tx_kibps * 1024 * share_inv,
                          st.pcie_rx_kibps * 1024 * share_inv,
                          nvlink_bytes_per_s * share_inv,
                          nvlink_bytes_per_s * 0.98 * share_inv};
  s.rates = Scaled(rates, scale);
  return NVML_SUCCESS;
}

struct MetricInfo {
  unsigned id;
  const char* short_name;
  const char* unit;
};

char* Text(const char* s) { return const_cast<char*>(s); }  // NVML's struct has char*; callers only read

}  // namespace

extern "C" {

// The simulator's one control beside the NVML entry points (sim/control.h): moves frozen time.
SIM_EXPORT void gpuscopeSimSetTime(double seconds) {
  if (auto sim = Current()) sim->SetFrozenTime(seconds);
}

SIM_EXPORT nvmlReturn_t nvmlInit_v2() {
  gpuscope::MutexLock lock(&g_mu);
  if (g_refs > 0) {
    ++g_refs;
    return NVML_SUCCESS;
  }
  auto created = Simulator::FromEnvironment();
  if (auto* error = std::get_if<std::string>(&created)) {
    std::fprintf(stderr, "gpuscope-sim: %s\n", error->c_str());
    return NVML_ERROR_LIBRARY_NOT_FOUND;
  }
  g_sim = std::move(std::get<std::unique_ptr<Simulator>>(created));
  g_refs = 1;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlShutdown() {
  gpuscope::MutexLock lock(&g_mu);
  if (g_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_refs == 0) {
    g_sim->Shutdown();
    g_sim.reset();
  }
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  return CopyString(sim->scenario().driver_version, version, length);
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  return CopyString(sim->scenario().nvml_version, version, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = sim->gpu_count();
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= sim->gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
  // A lost GPU is still counted, but its handle cannot be had (as on real NVML).
  return OnDevice(Handle(index, -1), Scope::kGpuOnly, [&](Call&) {
    *device = Handle(index, -1);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    std::string value = c.config().model->name;
    if (c.mig >= 0) value += " MIG " + c.config().mig[c.mig].profile->name;
    return CopyString(value, name, length);
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    return CopyString(c.mig >= 0 ? c.sim->MigUuid(c.gpu, c.mig) : c.sim->Uuid(c.gpu), uuid, length);
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return OnDevice(device, Scope::kGpuOnly,
                  [&](Call& c) { return CopyString(c.sim->Serial(c.gpu), serial, length); });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = nvmlPciInfo_t{};
    const unsigned bus = c.sim->PciBus(c.gpu);
    std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", bus);
    std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", bus);
    pci->domain = 0;
    pci->bus = bus;
    pci->device = 0;
    pci->pciDeviceId = c.config().model->pci_device_id;
    pci->pciSubSystemId = c.config().model->pci_subsystem_id;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = c.sim->Minor(c.gpu);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = c.gpu;
    return NVML_SUCCESS;
  });
}

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

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                nvmlProcessInfo_t* infos) {
  return OnDevice(device, Scope::kMigToo,
                  [&](Call& c) { return FillList(Processes(c, c.State()), count, infos); });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return OnDevice(device, Scope::kMigToo, [&](Call&) {
    return FillList(std::vector<nvmlProcessInfo_t>{}, count, infos);  // compute nodes run no graphics
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current_mode,
                                             unsigned int* pending_mode) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (current_mode == nullptr || pending_mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *current_mode = c.config().mig.empty() ? NVML_DEVICE_MIG_DISABLE : NVML_DEVICE_MIG_ENABLE;
    *pending_mode = *current_mode;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = c.config().mig.empty() ? 0 : 7;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t* mig_device) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (mig_device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= c.config().mig.size()) return NVML_ERROR_NOT_FOUND;
    *mig_device = Handle(c.gpu, static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    if (id == nullptr || c.mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *id = c.config().mig[c.mig].gpu_instance_id;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    if (id == nullptr || c.mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *id = c.config().mig[c.mig].compute_instance_id;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = reinterpret_cast<nvmlEventSet_t>(sim->CreateEventSet());
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                         unsigned long long* event_types) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call&) {
    if (event_types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *event_types = nvmlEventTypeXidCriticalError;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                                 nvmlEventSet_t set) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
    if (!c.sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
    c.sim->RegisterEvents(state, c.gpu, event_types);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                            unsigned int timeout_ms) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
  if (data == nullptr || !sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
  sim->PumpKernelLog(sim->Now());
  gpuscope::sim::SimEvent event;
  switch (sim->WaitEvent(state, timeout_ms, &event)) {
    case Simulator::WaitResult::kEvent:
      data->device = Handle(event.gpu, -1);
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = event.xid;
      data->gpuInstanceId = kNoInstance;
      data->computeInstanceId = kNoInstance;
      sim->PumpKernelLog(sim->Now());
      return NVML_SUCCESS;
    case Simulator::WaitResult::kTimeout:
      return NVML_ERROR_TIMEOUT;
    case Simulator::WaitResult::kShutdown:
      break;
  }
  return NVML_ERROR_UNINITIALIZED;
}

SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
  if (!sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
  sim->FreeEventSet(state);
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (support == nullptr || support->version != NVML_GPM_SUPPORT_VERSION)
      return NVML_ERROR_INVALID_ARGUMENT;
    support->isSupportedDevice = c.config().model->gpm ? 1 : 0;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (!Current()) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* s = new nvmlGpmSample_st();
  gpuscope::MutexLock lock(&g_mu);
  g_samples.insert(s);
  *sample = s;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  gpuscope::MutexLock lock(&g_mu);
  if (g_samples.erase(sample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return OnDevice(device, Scope::kGpuOnly,
                  [&](Call& c) { return TakeSample(c, -1, gpuscope::sim::MigShare(c.config()), sample); });
}

SIM_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpu_instance_id,
                                            nvmlGpmSample_t sample) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    const auto& mig = c.config().mig;
    for (size_t i = 0; i < mig.size(); ++i) {
      if (mig[i].gpu_instance_id == gpu_instance_id)
        return TakeSample(c, static_cast<int>(i), mig[i].load, sample);
    }
    return c.config().model->gpm ? NVML_ERROR_NOT_FOUND : NVML_ERROR_NOT_SUPPORTED;
  });
}

SIM_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metrics_get) {
  if (!Current()) return NVML_ERROR_UNINITIALIZED;
  if (metrics_get == nullptr || metrics_get->version != NVML_GPM_METRICS_GET_VERSION ||
      metrics_get->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  nvmlGpmSample_st s1;
  nvmlGpmSample_st s2;
  {
    gpuscope::MutexLock lock(&g_mu);
    if (g_samples.count(metrics_get->sample1) == 0 || g_samples.count(metrics_get->sample2) == 0) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    s1 = *metrics_get->sample1;
    s2 = *metrics_get->sample2;
  }
  if (!s1.taken || !s2.taken || s1.gpu != s2.gpu || s1.mig != s2.mig) return NVML_ERROR_INVALID_ARGUMENT;
  // Over the interval between the samples; for two samples at the same instant (frozen time), the
  // instantaneous rates.
  const double dt = s2.t - s1.t;
  auto rate = [&](double ActivityIntegrals::*field) {
    return dt != 0 ? (s2.integrals.*field - s1.integrals.*field) / dt : s2.rates.*field;
  };
  constexpr double kMiB = 1024.0 * 1024;
  static const MetricInfo kInfo[] = {
      {NVML_GPM_METRIC_GRAPHICS_UTIL, "gr_util", "%"},
      {NVML_GPM_METRIC_SM_UTIL, "sm_util", "%"},
      {NVML_GPM_METRIC_SM_OCCUPANCY, "sm_occupancy", "%"},
      {NVML_GPM_METRIC_INTEGER_UTIL, "integer_util", "%"},
      {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "any_tensor_util", "%"},
      {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, "dfma_tensor_util", "%"},
      {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, "hmma_tensor_util", "%"},
      {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, "imma_tensor_util", "%"},
      {NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_bw_util", "%"},
      {NVML_GPM_METRIC_FP64_UTIL, "fp64_util", "%"},
      {NVML_GPM_METRIC_FP32_UTIL, "fp32_util", "%"},
      {NVML_GPM_METRIC_FP16_UTIL, "fp16_util", "%"},
      {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcie_tx", "MiB/sec"},
      {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcie_rx", "MiB/sec"},
      {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "nvlink_total_rx", "MiB/sec"},
      {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "nvlink_total_tx", "MiB/sec"},
  };
  for (unsigned i = 0; i < metrics_get->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = metrics_get->metrics[i];
    metric.nvmlReturn = NVML_SUCCESS;
    metric.value = 0;
    metric.metricInfo = {};
    switch (metric.metricId) {
      case NVML_GPM_METRIC_GRAPHICS_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::util);
        break;
      case NVML_GPM_METRIC_SM_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::sm_active);
        break;
      case NVML_GPM_METRIC_SM_OCCUPANCY:
        metric.value = 100 * rate(&ActivityIntegrals::occupancy);
        break;
      case NVML_GPM_METRIC_INTEGER_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::integer);
        break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
      case NVML_GPM_METRIC_HMMA_TENSOR_UTIL:  // the simulated workloads use half-precision tensor cores
        metric.value = 100 * rate(&ActivityIntegrals::tensor);
        break;
      case NVML_GPM_METRIC_DFMA_TENSOR_UTIL:
      case NVML_GPM_METRIC_IMMA_TENSOR_UTIL:
        break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::dram);
        break;
      case NVML_GPM_METRIC_FP64_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::fp64);
        break;
      case NVML_GPM_METRIC_FP32_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::fp32);
        break;
      case NVML_GPM_METRIC_FP16_UTIL:
        metric.value = 100 * rate(&ActivityIntegrals::fp16);
        break;
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        metric.value = rate(&ActivityIntegrals::pcie_tx_bytes) / kMiB;
        break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        metric.value = rate(&ActivityIntegrals::pcie_rx_bytes) / kMiB;
        break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
        metric.value = rate(&ActivityIntegrals::nvlink_rx_bytes) / kMiB;
        break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
        metric.value = rate(&ActivityIntegrals::nvlink_tx_bytes) / kMiB;
        break;
      default:
        metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        continue;
    }
    for (const MetricInfo& info : kInfo) {
      if (info.id == metric.metricId)
        metric.metricInfo = {Text(info.short_name), Text(info.short_name), Text(info.unit)};
    }
  }
  return NVML_SUCCESS;
}

SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_UNKNOWN:
      break;
  }
  return "Unknown Error";
}

}  // extern "C"
