// GPU identity labels: the label set every GPU series carries, built once per GPU (and per MIG
// instance) at init so that collection cycles only copy ready vectors. Pure functions.
//
// Order (dcgm-exporter's): gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID],
// Hostname|hostname, DCGM_FI_DRIVER_VERSION.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <string_view>

#include "src/core/metric.h"

namespace gpuscope {

// What NVML tells about a GPU once, at init.
struct GpuIdentity {
  unsigned int index = 0;
  std::string uuid;        // "GPU-5f3e..."
  std::string pci_bus_id;  // "00000000:18:00.0"
  unsigned int minor = 0;  // /dev/nvidia<minor>
  std::string model_name;  // "NVIDIA H100 80GB HBM3"
  std::string serial;
  std::string driver_version;
};

struct MigInstanceLabels {
  std::string profile;  // "1g.10gb"
  unsigned int gpu_instance_id = 0;
};

struct HostLabel {
  std::string name;   // "Hostname" or "hostname"
  std::string value;  // the node's host name
};

// The common label set of one GPU. `mig` null: the whole GPU; with `mig_slots` the GPU_I_PROFILE and
// GPU_I_ID labels are present with empty values (Prometheus treats an empty label as absent, so the
// series is the one dcgm-exporter writes without them) to keep one label set per family.
Labels BuildGpuLabels(const GpuIdentity& id, const HostLabel& host, const MigInstanceLabels* mig,
                      bool mig_slots);

// The label set (names as BuildGpuLabels without MIG) of GPU `index` whose identity is unknown because
// it could not be opened: gpu="<index>", the host label and DCGM_FI_DRIVER_VERSION; UUID, pci_bus_id,
// device and modelName are empty (absent for Prometheus).
Labels PlaceholderGpuLabels(unsigned int index, const HostLabel& host, std::string_view driver_version);

// The MIG profile ("1g.10gb") of a MIG device from its NVML name ("NVIDIA A100-SXM4-40GB MIG 1g.10gb");
// empty when the name carries none.
std::string MigProfileFromDeviceName(std::string_view name);

// "nvidia<minor>", the device label.
std::string DeviceLabel(unsigned int minor);

}  // namespace gpuscope
