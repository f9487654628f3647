#include "src/node/gpu_directory.h"

#include <utility>

#include "src/parsers/pci.h"

namespace gpuscope {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

GpuDirectory::GpuDirectory() {
  auto view = std::make_shared<View>();
  view->inventory = std::make_shared<const GpuInventory>();
  MutexLock lock(&mu_);
  current_ = std::move(view);
}

void GpuDirectory::Publish(std::shared_ptr<const GpuInventory> inventory) {
  if (inventory == nullptr) inventory = std::make_shared<const GpuInventory>();  // no GPUs
  auto view = std::make_shared<View>();
  for (const GpuDeviceInventory& device : inventory->devices) {
    if (!device.opened) continue;  // no identity yet
    std::optional<std::string> bus = CanonicalPciBusId(device.pci_bus_id);
    if (device.uuid.empty() || !bus) continue;
    const std::string index = std::to_string(device.index);
    view->by_bus[*bus] = GpuIdentityRef{index, device.uuid};
    view->by_uuid[Lower(device.uuid)] = index;
    for (const MigInstanceInventory& mig : device.mig) {
      for (const std::string& uuid : mig.uuids) {
        view->by_uuid[Lower(uuid)] = index + "." + std::to_string(mig.gpu_instance_id);
      }
    }
  }
  view->inventory = std::move(inventory);
  MutexLock lock(&mu_);
  const bool changed = view->by_bus != current_->by_bus || view->by_uuid != current_->by_uuid;
  current_ = std::move(view);
  if (changed) version_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const GpuDirectory::View> GpuDirectory::Snapshot() const {
  MutexLock lock(&mu_);
  return current_;
}

std::shared_ptr<const GpuInventory> GpuDirectory::Current() const { return Snapshot()->inventory; }

std::optional<GpuIdentityRef> GpuDirectory::Find(std::string_view pci_bus_id) const {
  std::optional<std::string> bus = CanonicalPciBusId(pci_bus_id);
  if (!bus) return std::nullopt;
  std::shared_ptr<const View> view = Snapshot();
  auto it = view->by_bus.find(*bus);
  if (it == view->by_bus.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> GpuDirectory::GpuKeyOfUuid(std::string_view uuid) const {
  if (uuid.empty()) return std::nullopt;
  std::shared_ptr<const View> view = Snapshot();
  auto it = view->by_uuid.find(Lower(uuid));
  if (it == view->by_uuid.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpuscope
