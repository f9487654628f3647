#include "src/node/device_map.h"

#include <filesystem>
#include <system_error>

#include "src/core/log.h"
#include "src/platform/file.h"

namespace gpuscope {

std::string RenderDeviceMap(const GpuInventory& inventory) {
  std::string lines;
  size_t gpus = 0;
  for (const GpuDeviceInventory& device : inventory.devices) {
    if (!device.opened || device.uuid.empty()) continue;  // not opened yet: no identity to publish
    lines += std::to_string(device.index) + " " + std::to_string(device.minor) + " " + device.pci_bus_id +
             " " + device.uuid + "\n";
    ++gpus;
  }
  if (gpus == 0) return "";
  return "# nvml_index minor pci_bus_id uuid (written by gpuscope-agent)\n" + lines;
}

void DeviceMapWriter::Write(const GpuInventory& inventory) {
  if (path_.empty()) return;
  std::string content = RenderDeviceMap(inventory);
  if (content.empty() || content == written_) return;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
  if (WriteFileAtomically(path_, content).ok()) {
    written_ = std::move(content);
    Log(LogLevel::kInfo, "device map written", {{"path", path_}});
  } else {
    Log(LogLevel::kWarn, "cannot write the device map", {{"path", path_}});
  }
}

}  // namespace gpuscope
