#include "src/attribution/gpu_directory.h"

#include <algorithm>
#include <utility>

#include "src/parsers/pci.h"

namespace gpuscope {
namespace {

bool SameUuid(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    return lower(x) == lower(y);
  });
}

}  // namespace

void GpuDirectory::Publish(std::map<std::string, GpuIdentityRef> by_bus) {
  std::lock_guard lock(mu_);
  if (by_bus == by_bus_) return;
  by_bus_ = std::move(by_bus);
  version_.fetch_add(1, std::memory_order_release);
}

std::optional<GpuIdentityRef> GpuDirectory::Find(std::string_view pci_bus_id) const {
  std::optional<std::string> bus = CanonicalPciBusId(pci_bus_id);
  if (!bus) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = by_bus_.find(*bus);
  if (it == by_bus_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> GpuDirectory::GpuKeyOfUuid(std::string_view uuid) const {
  if (uuid.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  for (const auto& [bus, gpu] : by_bus_) {
    if (SameUuid(gpu.uuid, uuid)) return gpu.index;
    for (const MigDeviceRef& mig : gpu.mig) {
      if (SameUuid(mig.uuid, uuid)) return gpu.index + "." + mig.gpu_instance_id;
    }
  }
  return std::nullopt;
}

}  // namespace gpuscope
