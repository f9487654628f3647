// GpuDirectory: the GPUs of this node as the GPU collector last published them (the latest
// GpuInventory), with two lookups:
// - by PCI bus id, for the event path: a kernel-log line that names a GPU by bus id ("NVRM: Xid
//   (PCI:0000:18:00): 79") is tied to the GPU's index and UUID, and through the JobTable to a job;
// - by GPU or MIG device UUID, for the mapping directory source: files named by UUID (Princeton jobstats'
//   /run/gpustat/GPU-<uuid>, MIG-<uuid>) become JobTable keys ("3", "3.1").
// Written by NodeState::PublishGpuInventory (the GPU collector's thread); read by anyone.
//
// Thread-safety: all methods are safe to call concurrently; Current() returns an immutable view.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/mutex.h"
#include "src/node/gpu_inventory.h"

namespace gpuscope {

struct GpuIdentityRef {
  std::string index;  // NVML index ("3"), the JobTable's GPU key
  std::string uuid;
  bool operator==(const GpuIdentityRef&) const = default;
};

class GpuDirectory {
 public:
  GpuDirectory();
  // Replaces the directory with `inventory` (its opened GPUs become findable by bus id and UUID; null
  // means no GPUs).
  // Version() grows when the identities (bus ids, GPU and MIG device UUIDs) differ from the last ones.
  void Publish(std::shared_ptr<const GpuInventory> inventory);
  // The latest inventory; never null (empty before the first publish).
  std::shared_ptr<const GpuInventory> Current() const;
  // The GPU at `pci_bus_id` (any spelling), nullopt when unknown.
  std::optional<GpuIdentityRef> Find(std::string_view pci_bus_id) const;
  // The JobTable key of the GPU ("3") or MIG device ("3.1") whose NVML UUID is `uuid` ("GPU-...",
  // "MIG-...", hex digits in either case); nullopt when no GPU of this node shows it (yet).
  std::optional<std::string> GpuKeyOfUuid(std::string_view uuid) const;
  // Starts at 0 and grows each time Publish() changes the identities.
  uint64_t Version() const { return version_.load(std::memory_order_acquire); }

 private:
  struct View {
    std::shared_ptr<const GpuInventory> inventory;
    std::map<std::string, GpuIdentityRef, std::less<>> by_bus;  // canonical PCI bus id -> GPU
    std::map<std::string, std::string, std::less<>> by_uuid;    // lower-case UUID -> JobTable key
  };
  std::shared_ptr<const View> Snapshot() const;

  mutable Mutex mu_;
  std::shared_ptr<const View> current_ GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};
};

}  // namespace gpuscope
