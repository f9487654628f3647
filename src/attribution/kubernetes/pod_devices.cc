#include "src/attribution/kubernetes/pod_devices.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "podresources/v1/api.pb.h"
#include "src/node/gpu_directory.h"

namespace gpuscope {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// NVIDIA's resource names for GPUs and MIG devices: nvidia.com/gpu, nvidia.com/gpu.shared (renamed
// replicas), nvidia.com/mig-1g.10gb, ...
bool IsGpuResource(std::string_view resource) {
  return resource.starts_with("nvidia.com/gpu") || resource.starts_with("nvidia.com/mig-");
}

// "0" or "0:1" (a MIG device by GPU and MIG index), as deviceIDStrategy index writes them.
bool IsIndexId(std::string_view id) {
  const size_t colon = id.find(':');
  if (colon == std::string_view::npos) return AllDigits(id);
  return AllDigits(id.substr(0, colon)) && AllDigits(id.substr(colon + 1));
}

void AddContainerDevices(const v1::ContainerDevices& group, const std::string& namespace_name,
                         const std::string& pod, const std::string& container, PodDevicesUpdate& out) {
  for (const std::string& raw : group.device_ids()) {
    KubeletDeviceId id = ParseKubeletDeviceId(group.resource_name(), raw);
    out.allocations.push_back(
        {std::move(id.id), group.resource_name(), id.replica, namespace_name, pod, container});
  }
}

}  // namespace

KubeletDeviceId ParseKubeletDeviceId(std::string_view resource, std::string_view raw) {
  KubeletDeviceId out;
  std::string_view id = raw;
  // The device plugin names replica n of a shared device "<id>::<n>" (time-slicing and MPS alike).
  if (const size_t sep = id.rfind("::"); sep != std::string_view::npos && AllDigits(id.substr(sep + 2))) {
    id = id.substr(0, sep);
    out.replica = true;
  }
  out.id = std::string(id);
  if (id.starts_with("GPU-")) {
    out.kind = KubeletDeviceKind::kGpuUuid;
  } else if (id.starts_with("MIG-")) {
    out.kind = KubeletDeviceKind::kMigUuid;
  } else if (!IsGpuResource(resource)) {
    out.kind = KubeletDeviceKind::kOther;
  } else if (IsIndexId(id)) {
    out.kind = KubeletDeviceKind::kIndex;
  } else {
    out.kind = KubeletDeviceKind::kUnknown;
  }
  return out;
}

bool IsGpuDeviceId(std::string_view resource, std::string_view id) {
  KubeletDeviceKind kind = ParseKubeletDeviceId(resource, id).kind;
  return kind == KubeletDeviceKind::kGpuUuid || kind == KubeletDeviceKind::kMigUuid;
}

PodDevicesUpdate PodDevicesFromKubelet(const v1::ListPodResourcesResponse& list,
                                       const v1::AllocatableResourcesResponse& allocatable) {
  PodDevicesUpdate out;
  for (const v1::PodResources& pod : list.pod_resources()) {
    out.pods.push_back({pod.namespace_(), pod.name()});
    for (const v1::ContainerResources& container : pod.containers()) {
      for (const v1::ContainerDevices& group : container.devices()) {
        AddContainerDevices(group, pod.namespace_(), pod.name(), container.name(), out);
      }
    }
  }
  // The kubelet lists a device once per NUMA node it sits on: each raw id counts once per resource.
  std::set<std::pair<std::string, std::string>> seen;                // (resource, raw id)
  std::map<std::pair<std::string, std::string>, uint32_t> replicas;  // (resource, id) -> distinct raw ids
  for (const v1::ContainerDevices& group : allocatable.devices()) {
    for (const std::string& raw : group.device_ids()) {
      if (!seen.emplace(group.resource_name(), raw).second) continue;
      ++replicas[{group.resource_name(), ParseKubeletDeviceId(group.resource_name(), raw).id}];
    }
  }
  for (const auto& [key, count] : replicas) out.allocatable.push_back({key.second, key.first, count});
  return out;
}

std::map<std::pair<std::string, std::string>, size_t> IgnoredDevices(const PodDevicesUpdate& update,
                                                                     const GpuDirectory* gpus) {
  const bool check_uuids = gpus != nullptr && !gpus->Current()->devices.empty();
  std::set<std::tuple<std::string, std::string, std::string>> ignored;  // (resource, reason, id)
  auto consider = [&](const std::string& resource, const std::string& id) {
    const char* reason = nullptr;
    switch (ParseKubeletDeviceId(resource, id).kind) {
      case KubeletDeviceKind::kGpuUuid:
      case KubeletDeviceKind::kMigUuid:
        if (check_uuids && !gpus->GpuKeyOfUuid(id)) reason = "unknown_device";
        break;
      case KubeletDeviceKind::kIndex:
        reason = "index_id";
        break;
      case KubeletDeviceKind::kUnknown:
        reason = "unknown_device";
        break;
      case KubeletDeviceKind::kOther:
        reason = "other_resource";
        break;
    }
    if (reason != nullptr) ignored.emplace(resource, reason, id);
  };
  for (const PodDeviceAllocation& a : update.allocations) consider(a.resource, a.device_id);
  for (const AllocatableDevice& d : update.allocatable) consider(d.resource, d.device_id);
  std::map<std::pair<std::string, std::string>, size_t> out;
  for (const auto& [resource, reason, id] : ignored) ++out[{resource, reason}];
  return out;
}

}  // namespace gpuscope
