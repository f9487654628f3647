#include "src/node/pod_table.h"

#include <algorithm>
#include <tuple>

namespace gpuscope {
namespace {

auto AllocationKey(const PodDeviceAllocation& a) {
  return std::tie(a.device_id, a.namespace_name, a.pod, a.container, a.resource, a.replica);
}

}  // namespace

std::vector<const PodDeviceAllocation*> PodTable::View::HoldersOf(std::string_view device_id) const {
  std::vector<const PodDeviceAllocation*> out;
  auto it =
      std::lower_bound(allocations.begin(), allocations.end(), device_id,
                       [](const PodDeviceAllocation& a, std::string_view id) { return a.device_id < id; });
  for (; it != allocations.end() && it->device_id == device_id; ++it) out.push_back(&*it);
  return out;
}

const PodMetadata* PodTable::View::Metadata(const PodRef& pod) const {
  auto it = metadata.find(pod);
  return it == metadata.end() ? nullptr : &it->second;
}

PodTable::PodTable() {
  MutexLock lock(&mu_);
  current_ = std::make_shared<const View>();
}

void PodTable::UpdateDevices(PodDevicesUpdate update) {
  MutexLock lock(&mu_);
  devices_ = std::move(update);
  devices_known_ = true;
  Rebuild();
}

void PodTable::UpdateMetadata(std::vector<PodMetadata> metadata) {
  MutexLock lock(&mu_);
  metadata_ = std::move(metadata);
  Rebuild();
}

std::shared_ptr<const PodTable::View> PodTable::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

void PodTable::Rebuild() {
  auto view = std::make_shared<View>();
  view->version = next_version_++;
  view->devices_known = devices_known_;
  view->allocations = devices_.allocations;
  std::erase_if(view->allocations, [](const PodDeviceAllocation& a) {
    return a.device_id.empty() || a.namespace_name.empty() || a.pod.empty();
  });
  std::sort(view->allocations.begin(), view->allocations.end(),
            [](const auto& a, const auto& b) { return AllocationKey(a) < AllocationKey(b); });
  view->allocations.erase(
      std::unique(view->allocations.begin(), view->allocations.end(),
                  [](const auto& a, const auto& b) { return AllocationKey(a) == AllocationKey(b); }),
      view->allocations.end());
  view->allocatable = devices_.allocatable;
  std::sort(view->allocatable.begin(), view->allocatable.end(), [](const auto& a, const auto& b) {
    return std::tie(a.resource, a.device_id) < std::tie(b.resource, b.device_id);
  });
  view->pods = devices_.pods;
  for (const PodDeviceAllocation& a : view->allocations) view->pods.push_back({a.namespace_name, a.pod});
  std::sort(view->pods.begin(), view->pods.end());
  view->pods.erase(std::unique(view->pods.begin(), view->pods.end()), view->pods.end());
  for (const PodMetadata& m : metadata_) {
    if (std::binary_search(view->pods.begin(), view->pods.end(), m.ref))
      view->metadata.insert_or_assign(m.ref, m);
  }
  current_ = std::move(view);
}

}  // namespace gpuscope
