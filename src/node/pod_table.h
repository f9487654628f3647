// PodTable: which Kubernetes pod (namespace, pod, container) holds which device of this node, what the
// node's device plugins advertise, and what the API server says about each pod (owner, allow-listed
// labels), as data every output path reads the same way. It is the Kubernetes sibling of JobTable: two
// sources each publish their whole current view, and the table merges them into an immutable View that
// is swapped atomically, so a reader never sees half an update and never waits for a source.
//   - the kubelet's pod-resources API (KubeletPodSource): devices allocated to containers, and the
//     node's allocatable devices, with UpdateDevices();
//   - the API server (PodMetadataSource): each pod's owner and labels, with UpdateMetadata().
//
// Device ids are kept as the device plugin wrote them, less a time-slicing/MPS replica suffix ("::3"):
// "GPU-<uuid>", "MIG-<uuid>", or another plugin's id. Readers turn GPU and MIG UUIDs into JobTable GPU
// keys ("3", "3.1") with GpuDirectory::GpuKeyOfUuid in their own cycle, so a MIG reconfiguration needs no
// new answer from the kubelet.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "src/core/mutex.h"

namespace gpuscope {

struct PodRef {
  std::string namespace_name;
  std::string pod;
  // Ordered by namespace, then pod (spelled out: clang-tidy misreads a defaulted <=> as a 0 literal).
  bool operator==(const PodRef&) const = default;
  bool operator<(const PodRef& other) const {
    return std::tie(namespace_name, pod) < std::tie(other.namespace_name, other.pod);
  }
};

// One device held by one container.
struct PodDeviceAllocation {
  std::string device_id;  // as advertised, replica suffix removed ("GPU-...", "MIG-...", "fpga-1")
  std::string resource;   // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ...
  bool replica = false;   // the id carried a "::N" replica suffix (time-slicing or MPS)
  std::string namespace_name;
  std::string pod;
  std::string container;
};

// One device the node advertises (GetAllocatableResources).
struct AllocatableDevice {
  std::string device_id;  // replica suffix removed, as above
  std::string resource;
  uint32_t replicas = 1;  // how many "::N" ids the plugin advertised for it (1 without sharing)
};

struct PodDevicesUpdate {
  // Deduplicated by (device_id, resource, namespace, pod, container, replica); a device listed once per
  // NUMA node counts once.
  std::vector<PodDeviceAllocation> allocations;
  std::vector<AllocatableDevice> allocatable;
  std::vector<PodRef> pods;  // every pod the kubelet listed, with or without devices
};

struct PodMetadata {
  PodRef ref;
  std::string uid;
  std::string owner_kind;  // the controller at the top: "Deployment", "StatefulSet", "Job", "CronJob", ...
  std::string owner_name;  // "" for a bare pod
  // Allow-listed pod labels, as (label name as the pod has it, value), sorted by name.
  std::vector<std::pair<std::string, std::string>> labels;
};

class PodTable {
 public:
  struct View {
    uint64_t version = 0;
    bool devices_known = false;  // the kubelet answered at least once since the agent started
    // Sorted by (device_id, namespace, pod, container); unique per (device_id, resource, pod, container).
    std::vector<PodDeviceAllocation> allocations;
    std::vector<AllocatableDevice> allocatable;  // sorted by (resource, device_id)
    std::vector<PodRef> pods;                    // sorted, unique
    std::map<PodRef, PodMetadata> metadata;      // for pods in `pods` only

    // The containers holding `device_id` (replica suffix already removed), in (namespace, pod,
    // container) order; empty when none.
    std::vector<const PodDeviceAllocation*> HoldersOf(std::string_view device_id) const;
    const PodMetadata* Metadata(const PodRef& pod) const;
  };

  PodTable();

  // Replaces what the kubelet said before and publishes a new View. Metadata of pods no longer listed is
  // dropped from the View (the metadata source keeps its own cache).
  void UpdateDevices(PodDevicesUpdate update);
  // Replaces what the API server said before and publishes a new View.
  void UpdateMetadata(std::vector<PodMetadata> metadata);

  // The latest View; never null.
  std::shared_ptr<const View> Current() const;

 private:
  void Rebuild() REQUIRES(mu_);

  mutable Mutex mu_;
  PodDevicesUpdate devices_ GUARDED_BY(mu_);
  bool devices_known_ GUARDED_BY(mu_) = false;
  std::vector<PodMetadata> metadata_ GUARDED_BY(mu_);
  std::shared_ptr<const View> current_ GUARDED_BY(mu_);
  uint64_t next_version_ GUARDED_BY(mu_) = 1;
};

}  // namespace gpuscope
