// GpuInventory: what the GPU collector saw on this node in one cycle, as typed data: the devices (NVML
// index, /dev/nvidia minor, UUID, PCI bus id, model, MIG instances), the processes on each, their
// utilisation, and the XIDs NVML reported since the previous cycle. The GPU collector builds one per cycle
// and publishes it through NodeState; attribution, the event path and the device map read it. Nobody
// parses rendered metric text to learn these facts.
//
// Thread-safety: a value type; a published inventory is immutable (shared_ptr<const GpuInventory>).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

struct MigInstanceInventory {
  uint32_t gpu_instance_id = 0;    // GPU_I_ID
  std::string profile;             // "1g.10gb"
  std::vector<std::string> uuids;  // of its MIG devices, one per compute instance ("MIG-..."); may be empty
  // Ratio of time the instance's SMs were active (GPM, Hopper+); nullopt when unknown.
  std::optional<double> sm_active;
};

struct GpuDeviceInventory {
  uint32_t index = 0;   // NVML index
  bool opened = false;  // identity known (false: NVML could not open it yet; identity fields are empty)
  bool up = false;      // answered this cycle
  uint32_t minor = 0;   // /dev/nvidia<minor>
  std::string uuid;
  std::string pci_bus_id;  // NVML spelling, "00000000:18:00.0"
  std::string model;
  // The identity label set the GPU collector renders this GPU's series with (gpu, UUID, ..., host,
  // driver version), for series that must join them (gpuscope_gpu_allocation_info). Copied, never parsed.
  Labels labels;
  std::vector<MigInstanceInventory> mig;
  bool processes_listed = false;  // NVML listed this GPU's processes this cycle
  // This cycle's utilisation as ratios (0..1): SM active (GPM, Hopper+) and NVML's GPU utilisation (time
  // a kernel ran); nullopt when not read.
  std::optional<double> sm_active;
  std::optional<double> gpu_utilization;
};

struct GpuProcessObservation {
  uint32_t gpu = 0;                             // NVML index
  int32_t gpu_instance = SampleSubject::kNone;  // MIG GPU instance id, kNone without MIG
  uint32_t pid = 0;
  uint64_t memory_bytes = 0;
};

// One XID NVML reported since the previous cycle.
struct XidObservation {
  std::string pci_bus_id;
  uint32_t xid = 0;
  double time_seconds = 0;  // Unix time
};

struct GpuInventory {
  uint64_t cycle = 0;      // increases with every published inventory
  std::string host_label;  // the node's host label name as rendered ("Hostname", "hostname" in 4.9 compat)
  std::string hostname;
  std::vector<GpuDeviceInventory> devices;  // by NVML index
  std::vector<GpuProcessObservation> processes;
  std::vector<XidObservation> xids;

  const GpuDeviceInventory* Device(uint32_t index) const {
    return index < devices.size() && devices[index].index == index ? &devices[index] : nullptr;
  }
};

}  // namespace gpuscope
