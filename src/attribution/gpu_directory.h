// GpuDirectory: which GPUs this node has, by PCI bus id, as the GPU collector last saw them (index and
// UUID). The event path uses it to tie a kernel-log line that names a GPU by bus id ("NVRM: Xid
// (PCI:0000:18:00): 79") to the GPU's index and UUID, and through the JobTable to a job.
// AttributedCollector publishes it after each GPU cycle.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope {

struct GpuIdentityRef {
  std::string index;  // NVML index ("3"), the JobTable's GPU key
  std::string uuid;
};

class GpuDirectory {
 public:
  // Replaces the directory: canonical PCI bus id (NVML spelling) -> GPU.
  void Publish(std::map<std::string, GpuIdentityRef> by_bus);
  // The GPU at `pci_bus_id` (any spelling), nullopt when unknown.
  std::optional<GpuIdentityRef> Find(std::string_view pci_bus_id) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, GpuIdentityRef> by_bus_;  // guarded by mu_
};

}  // namespace gpuscope
