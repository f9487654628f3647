// GpuProcessTable: the processes NVML saw on each GPU in the latest GPU cycle, with the GPU's PCI address
// and the process's job, for collectors that need them without calling NVML themselves (e.g. the host
// collector's NUMA placement check). Node state (src/node/node_state.h): written by attribution after each
// GPU cycle (it knows the jobs), read by anyone.
//
// Thread-safety: Update() and Current() may be called from any thread; Current() returns an immutable
// snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/mutex.h"

namespace gpuscope {

struct GpuProcessRef {
  std::string gpu;         // NVML index ("3"), as the gpu label
  std::string pci_bus_id;  // "00000000:18:00.0", as the pci_bus_id label
  uint32_t pid = 0;
  std::string hpc_job;  // empty when the process belongs to no known job
};

class GpuProcessTable {
 public:
  void Update(std::vector<GpuProcessRef> processes) {
    auto next = std::make_shared<const std::vector<GpuProcessRef>>(std::move(processes));
    MutexLock lock(&mu_);
    current_ = std::move(next);
  }
  std::shared_ptr<const std::vector<GpuProcessRef>> Current() const {
    MutexLock lock(&mu_);
    return current_;
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const std::vector<GpuProcessRef>> current_ GUARDED_BY(mu_) =
      std::make_shared<const std::vector<GpuProcessRef>>();
};

}  // namespace gpuscope
