// The kubelet's pod-resources answers (List, GetAllocatableResources) as the PodTable's PodDevicesUpdate,
// and the device ids the agent cannot join to a GPU, by resource name and reason. Pure functions on the
// generated protobuf messages: no gRPC, no I/O.
//
// Device id schemes (NVIDIA's device plugin; docs/design/kubernetes.md):
//   "GPU-<uuid>"        a whole GPU (deviceIDStrategy uuid, the default), any resource name
//   "MIG-<uuid>"        a MIG device (nvidia.com/mig-<profile>, or nvidia.com/gpu with the single strategy)
//   "<id>::<n>"         replica n of <id> under time-slicing or MPS: the suffix is removed, replica set
//   "0", "0:1"          NVML indexes (deviceIDStrategy index): not joined, counted as index_id
//   anything else       under an nvidia.com/gpu* or nvidia.com/mig-* resource: unknown_device; under
//                       another resource (example.com/fpga, RDMA devices): other_resource
// A GPU or MIG UUID that no GPU of this node shows is unknown_device too. Ids are joined by their form,
// not by the resource name, so renamed resources (nvidia.com/gpu.shared) join as well.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "src/node/pod_table.h"

namespace v1 {
class ListPodResourcesResponse;
class AllocatableResourcesResponse;
}  // namespace v1

namespace gpuscope {

class GpuDirectory;

enum class KubeletDeviceKind {
  kGpuUuid,  // "GPU-..."
  kMigUuid,  // "MIG-..."
  kIndex,    // an NVML index under a GPU resource name ("0", "0:1")
  kUnknown,  // under a GPU resource name, of no form the agent knows
  kOther,    // another plugin's device
};

struct KubeletDeviceId {
  std::string id;        // replica suffix removed
  bool replica = false;  // it had one
  KubeletDeviceKind kind = KubeletDeviceKind::kOther;
};

// Splits one id as the device plugin advertised it under `resource`.
KubeletDeviceId ParseKubeletDeviceId(std::string_view resource, std::string_view raw);

// True for ids the agent joins to GPUs by UUID (kGpuUuid, kMigUuid).
bool IsGpuDeviceId(std::string_view resource, std::string_view id);

// Every container's devices and every pod of `list`, and the devices of `allocatable`, with replica
// suffixes removed; a device the kubelet lists once per NUMA node counts once (the PodTable dedupes
// allocations; allocatable devices are deduplicated here, replicas counted once per distinct id).
PodDevicesUpdate PodDevicesFromKubelet(const v1::ListPodResourcesResponse& list,
                                       const v1::AllocatableResourcesResponse& allocatable);

// (resource, reason) -> distinct device ids of `update` (allocated or allocatable) that are not joined to
// a GPU: reason "other_resource", "index_id" or "unknown_device". `gpus` may be null, or hold no GPU yet:
// then GPU and MIG UUIDs are not checked against it.
std::map<std::pair<std::string, std::string>, size_t> IgnoredDevices(const PodDevicesUpdate& update,
                                                                     const GpuDirectory* gpus);

}  // namespace gpuscope
