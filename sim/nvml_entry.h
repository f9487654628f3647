// What the files of the C API surface share (nvml_entry.cc and the nvml_*.cc beside it, one per area):
// device handles, the current Simulator, the fault gates every device call passes, and NVML's list and
// string protocols. Internal to libnvidia-ml.so.1: nothing here is exported (exports.map lists the
// entry points, GPUSCOPE_NVML_FUNCTIONS in src/platform/nvml/nvml_api.h declares them).
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "src/platform/nvml/nvml_api.h"

#define SIM_EXPORT __attribute__((visibility("default")))

// Device handles point into a fixed table that outlives every init/shutdown cycle, so a stale handle
// is an invalid argument, never a dangling pointer.
struct nvmlDevice_st {
  unsigned gpu;
  int mig;  // -1: the GPU itself; else the MIG instance's index in the scenario
};

namespace gpuscope::sim::nvml {

constexpr double kEpochS = 1700000000.0;  // simulated t = 0 is this Unix time
constexpr unsigned kNoInstance = 0xFFFFFFFFu;

// The handle of GPU `gpu` (mig -1) or of its MIG instance `mig`.
nvmlDevice_t Handle(unsigned gpu, int mig);

// The Simulator between nvmlInit and the last nvmlShutdown; null otherwise.
std::shared_ptr<Simulator> Current();

// Copies `value` with its terminator, or INSUFFICIENT_SIZE when `length` is too small.
nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length);

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
nvmlReturn_t Enter(nvmlDevice_t device, Scope scope, Call& call);

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

}  // namespace gpuscope::sim::nvml
