// The C API surface: every entry point of GPUSCOPE_NVML_FUNCTIONS (src/platform/nvml/nvml_api.h) plus
// nvmlErrorString, answering from the Simulator. Including nvml_api.h makes the compiler check each
// definition against the agent's declarations. This file holds init/shutdown, the system and device-count
// calls, the handles and the fault gates (sim/nvml_entry.h); the device calls are in one file per area:
// nvml_device_identity.cc, nvml_clocks_power.cc, nvml_memory_links.cc, nvml_processes.cc,
// nvml_events.cc, nvml_gpm.cc.
//
// Thread-safety: every entry point may be called from any thread. The Simulator is held by a
// shared_ptr: nvmlShutdown drops it, calls in flight keep their copy until they return.
#include "sim/nvml_entry.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>  // std::once_flag
#include <thread>

#include "sim/control.h"
#include "src/core/mutex.h"

using gpuscope::sim::kMaxGpus;
using gpuscope::sim::Simulator;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::CopyString;
using gpuscope::sim::nvml::Current;
using gpuscope::sim::nvml::Handle;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

namespace {

constexpr unsigned kSlots = 8;  // the GPU and up to 7 MIG instances

nvmlDevice_st g_handles[kMaxGpus][kSlots] = {};
std::once_flag g_handles_once;

gpuscope::Mutex g_mu;
std::shared_ptr<Simulator> g_sim GUARDED_BY(g_mu);
int g_refs GUARDED_BY(g_mu) = 0;

}  // namespace

// A simulated node of the fleet runner (sim/control.h): its scenario and clock, and the Simulator between
// its first nvmlInit_v2 and its last nvmlShutdown.
struct gpuscopeSimNode {
  gpuscope::sim::Scenario scenario;
  gpuscope::sim::TimeBase time;
  gpuscope::Mutex mu;
  std::shared_ptr<Simulator> sim GUARDED_BY(mu);
  int refs GUARDED_BY(mu) = 0;
};

namespace {

// The node the calling thread's NVML calls go to; null: the process's own simulator.
thread_local gpuscopeSimNode* t_node = nullptr;

bool Resolve(nvmlDevice_t device, unsigned& gpu, int& mig) {
  const auto first = reinterpret_cast<uintptr_t>(&g_handles[0][0]);
  const auto p = reinterpret_cast<uintptr_t>(device);
  if (p < first || p >= first + sizeof(g_handles) || (p - first) % sizeof(nvmlDevice_st) != 0) return false;
  gpu = device->gpu;
  mig = device->mig;
  return true;
}

}  // namespace

namespace gpuscope::sim::nvml {

nvmlDevice_t Handle(unsigned gpu, int mig) {
  std::call_once(g_handles_once, [] {
    for (unsigned g = 0; g < kMaxGpus; ++g) {
      for (unsigned s = 0; s < kSlots; ++s) g_handles[g][s] = {g, static_cast<int>(s) - 1};
    }
  });
  return &g_handles[gpu][mig + 1];
}

std::shared_ptr<Simulator> Current() {
  if (gpuscopeSimNode* node = t_node) {
    gpuscope::MutexLock lock(&node->mu);
    return node->sim;
  }
  gpuscope::MutexLock lock(&g_mu);
  return g_sim;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

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

}  // namespace gpuscope::sim::nvml

extern "C" {

// The simulator's one control beside the NVML entry points (sim/control.h): moves frozen time.
SIM_EXPORT void gpuscopeSimSetTime(double seconds) {
  if (auto sim = Current()) sim->SetFrozenTime(seconds);
}

SIM_EXPORT gpuscopeSimNode* gpuscopeSimNodeCreate(const char* scenario_yaml, unsigned long long seed,
                                                  double start_offset, double speed, char* error,
                                                  unsigned error_size) {
  auto fail = [&](const std::string& message) -> gpuscopeSimNode* {
    if (error != nullptr && error_size > 0) {
      const size_t n = std::min<size_t>(message.size(), error_size - 1);
      std::memcpy(error, message.data(), n);
      error[n] = '\0';
    }
    return nullptr;
  };
  if (scenario_yaml == nullptr) return fail("no scenario");
  if (!(start_offset >= 0)) return fail("start_offset must be a non-negative number of seconds");
  if (!(speed >= 0) || speed > 1e6) return fail("speed must be a positive number (0: the scenario's)");
  auto parsed = gpuscope::sim::ParseScenario(scenario_yaml);
  if (auto* bad = std::get_if<gpuscope::sim::ScenarioError>(&parsed)) return fail(bad->message);
  auto node = std::make_unique<gpuscopeSimNode>();
  node->scenario = std::move(std::get<gpuscope::sim::Scenario>(parsed));
  node->scenario.seed = seed;
  node->scenario.kernel_log.clear();
  node->scenario.proc_processes = {};
  node->time = {.speed = speed > 0 ? speed : node->scenario.speed,
                .start_offset = start_offset,
                .frozen = std::nullopt};
  return node.release();
}

SIM_EXPORT void gpuscopeSimNodeDestroy(gpuscopeSimNode* node) {
  if (node == nullptr) return;
  {
    gpuscope::MutexLock lock(&node->mu);
    if (node->sim) node->sim->Shutdown();  // wakes calls hung in a simulated hang
  }
  delete node;
}

SIM_EXPORT void gpuscopeSimBindThread(void* node) { t_node = static_cast<gpuscopeSimNode*>(node); }

SIM_EXPORT nvmlReturn_t nvmlInit_v2() {
  if (gpuscopeSimNode* node = t_node) {
    gpuscope::MutexLock lock(&node->mu);
    if (node->refs++ == 0) node->sim = std::make_shared<Simulator>(node->scenario, node->time);
    return NVML_SUCCESS;
  }
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
  if (gpuscopeSimNode* node = t_node) {
    gpuscope::MutexLock lock(&node->mu);
    if (node->refs == 0) return NVML_ERROR_UNINITIALIZED;
    if (--node->refs == 0) {
      node->sim->Shutdown();
      node->sim.reset();
    }
    return NVML_SUCCESS;
  }
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
