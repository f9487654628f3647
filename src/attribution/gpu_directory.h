// GpuDirectory: which GPUs this node has, by PCI bus id, as the GPU collector last saw them (index, UUID
// and the UUIDs of the MIG devices in each GPU instance). The event path uses it to tie a kernel-log line
// that names a GPU by bus id ("NVRM: Xid (PCI:0000:18:00): 79") to the GPU's index and UUID, and through
// the JobTable to a job; the mapping directory source uses it to turn files named by a GPU or MIG UUID
// (Princeton jobstats' /run/gpustat/GPU-<uuid>, MIG-<uuid>) into JobTable keys. AttributedCollector
// publishes it after each GPU cycle.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

// One MIG device (a compute instance) of a GPU instance: several can share one GPU instance.
struct MigDeviceRef {
  std::string gpu_instance_id;  // "1": the JobTable key of the instance is "<index>.<gpu_instance_id>"
  std::string uuid;             // "MIG-..."
  bool operator==(const MigDeviceRef&) const = default;
};

struct GpuIdentityRef {
  std::string index;                   // NVML index ("3"), the JobTable's GPU key
  std::string uuid;                    // "GPU-..."
  std::vector<MigDeviceRef> mig = {};  // empty unless MIG is enabled
  bool operator==(const GpuIdentityRef&) const = default;
};

class GpuDirectory {
 public:
  // Replaces the directory: canonical PCI bus id (NVML spelling) -> GPU. Version() changes when the
  // content differs from the previous one.
  void Publish(std::map<std::string, GpuIdentityRef> by_bus);
  // The GPU at `pci_bus_id` (any spelling), nullopt when unknown.
  std::optional<GpuIdentityRef> Find(std::string_view pci_bus_id) const;
  // The JobTable key of the GPU ("3") or MIG device ("3.1") whose NVML UUID is `uuid` ("GPU-...",
  // "MIG-...", hex digits in either case); nullopt when no GPU of this node shows it (yet).
  std::optional<std::string> GpuKeyOfUuid(std::string_view uuid) const;
  // Starts at 0 and grows each time Publish() changes the content.
  uint64_t Version() const { return version_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::map<std::string, GpuIdentityRef> by_bus_;  // guarded by mu_
  std::atomic<uint64_t> version_{0};
};

}  // namespace gpuscope
