// GpuDirectory: the GPUs of this node as the GPU collector last published them (the latest
// GpuInventory), and lookups by PCI bus id for the event path: a kernel-log line that names a GPU by bus
// id ("NVRM: Xid (PCI:0000:18:00): 79") is tied to the GPU's index and UUID, and through the JobTable to a
// job. Written by NodeState::PublishGpuInventory (the GPU collector's thread); read by anyone.
//
// Thread-safety: all methods are safe to call concurrently; Current() returns an immutable view.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "src/node/gpu_inventory.h"

namespace gpuscope {

struct GpuIdentityRef {
  std::string index;  // NVML index ("3"), the JobTable's GPU key
  std::string uuid;
};

class GpuDirectory {
 public:
  GpuDirectory();
  // Replaces the directory with `inventory` (its opened GPUs become findable by bus id).
  void Publish(std::shared_ptr<const GpuInventory> inventory);
  // The latest inventory; never null (empty before the first publish).
  std::shared_ptr<const GpuInventory> Current() const;
  // The GPU at `pci_bus_id` (any spelling), nullopt when unknown.
  std::optional<GpuIdentityRef> Find(std::string_view pci_bus_id) const;

 private:
  struct View {
    std::shared_ptr<const GpuInventory> inventory;
    std::map<std::string, GpuIdentityRef, std::less<>> by_bus;  // canonical PCI bus id -> GPU
  };
  std::shared_ptr<const View> Snapshot() const;

  mutable std::mutex mu_;
  std::shared_ptr<const View> current_;  // guarded by mu_
};

}  // namespace gpuscope
