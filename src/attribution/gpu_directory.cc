#include "src/attribution/gpu_directory.h"

#include <utility>

#include "src/parsers/pci.h"

namespace gpuscope {

void GpuDirectory::Publish(std::map<std::string, GpuIdentityRef> by_bus) {
  std::lock_guard lock(mu_);
  by_bus_ = std::move(by_bus);
}

std::optional<GpuIdentityRef> GpuDirectory::Find(std::string_view pci_bus_id) const {
  std::optional<std::string> bus = CanonicalPciBusId(pci_bus_id);
  if (!bus) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = by_bus_.find(*bus);
  if (it == by_bus_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpuscope
