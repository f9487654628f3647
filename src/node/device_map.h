// The device map the Slurm prolog reads (deploy/slurm/prolog.sh) to turn the /dev/nvidiaN minors Slurm
// hands a job into NVML indices: one "nvml_index minor pci_bus_id uuid" line per opened GPU, after a
// comment line. Rendered from the GPU inventory; written by NodeState on the GPU collector's cycle, only
// when its content changes, atomically (rename), so the prolog never reads half a file.
//
// Thread-safety: RenderDeviceMap is pure; a DeviceMapWriter is used by one thread at a time.
#pragma once

#include <string>

#include "src/node/gpu_inventory.h"

namespace gpuscope {

// The file's content; empty when no GPU is opened yet (nothing to publish).
std::string RenderDeviceMap(const GpuInventory& inventory);

class DeviceMapWriter {
 public:
  // `path` empty: writes nothing.
  explicit DeviceMapWriter(std::string path) : path_(std::move(path)) {}
  // Writes the map of `inventory` when it differs from the last one written (creating the directory).
  // A failure is logged (warn) and retried on the next call.
  void Write(const GpuInventory& inventory);

 private:
  std::string path_;
  std::string written_;  // content last written
};

}  // namespace gpuscope
