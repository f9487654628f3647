#include "src/node/gpu_directory.h"

#include <utility>

#include "src/parsers/pci.h"

namespace gpuscope {

GpuDirectory::GpuDirectory() {
  auto view = std::make_shared<View>();
  view->inventory = std::make_shared<const GpuInventory>();
  current_ = std::move(view);
}

void GpuDirectory::Publish(std::shared_ptr<const GpuInventory> inventory) {
  auto view = std::make_shared<View>();
  for (const GpuDeviceInventory& device : inventory->devices) {
    if (!device.opened) continue;  // no identity yet
    std::optional<std::string> bus = CanonicalPciBusId(device.pci_bus_id);
    if (device.uuid.empty() || !bus) continue;
    view->by_bus[*bus] = GpuIdentityRef{std::to_string(device.index), device.uuid};
  }
  view->inventory = std::move(inventory);
  std::lock_guard lock(mu_);
  current_ = std::move(view);
}

std::shared_ptr<const GpuDirectory::View> GpuDirectory::Snapshot() const {
  std::lock_guard lock(mu_);
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

}  // namespace gpuscope
