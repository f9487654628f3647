#include "src/collectors/gpu/labels.h"

namespace gpuscope {

Labels BuildGpuLabels(const GpuIdentity& id, const HostLabel& host, const MigInstanceLabels* mig,
                      bool mig_slots) {
  Labels labels;
  labels.reserve(9);
  labels.emplace_back("gpu", std::to_string(id.index));
  labels.emplace_back("UUID", id.uuid);
  labels.emplace_back("pci_bus_id", id.pci_bus_id);
  labels.emplace_back("device", DeviceLabel(id.minor));
  labels.emplace_back("modelName", id.model_name);
  if (mig != nullptr) {
    labels.emplace_back("GPU_I_PROFILE", mig->profile);
    labels.emplace_back("GPU_I_ID", std::to_string(mig->gpu_instance_id));
  } else if (mig_slots) {
    labels.emplace_back("GPU_I_PROFILE", "");
    labels.emplace_back("GPU_I_ID", "");
  }
  labels.emplace_back(host.name, host.value);
  labels.emplace_back("DCGM_FI_DRIVER_VERSION", id.driver_version);
  return labels;
}

Labels PlaceholderGpuLabels(unsigned int index, const HostLabel& host, std::string_view driver_version) {
  Labels labels;
  labels.reserve(7);
  labels.emplace_back("gpu", std::to_string(index));
  labels.emplace_back("UUID", "");
  labels.emplace_back("pci_bus_id", "");
  labels.emplace_back("device", "");
  labels.emplace_back("modelName", "");
  labels.emplace_back(host.name, host.value);
  labels.emplace_back("DCGM_FI_DRIVER_VERSION", std::string(driver_version));
  return labels;
}

std::string MigProfileFromDeviceName(std::string_view name) {
  constexpr std::string_view kMarker = " MIG ";
  size_t at = name.rfind(kMarker);
  if (at == std::string_view::npos) return "";
  std::string_view profile = name.substr(at + kMarker.size());
  while (!profile.empty() && (profile.back() == ' ' || profile.back() == '\0')) profile.remove_suffix(1);
  return std::string(profile);
}

std::string DeviceLabel(unsigned int minor) { return "nvidia" + std::to_string(minor); }

}  // namespace gpuscope
