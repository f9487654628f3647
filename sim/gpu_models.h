// The table of simulated GPU models and their limits (memory, power, clocks, thermals, links, PCIe,
// MIG profiles). Values follow NVIDIA data sheets and typical `nvidia-smi -q` output; sim/README.md lists
// them with their sources.
//
// Thread-safety: immutable static data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::sim {

struct MigProfile {
  std::string name;     // "1g.10gb"
  unsigned slices = 0;  // compute slices out of 7
  unsigned long long memory_mib = 0;
};

struct GpuModel {
  std::string key;   // scenario spelling: "h100-sxm"
  std::string name;  // nvmlDeviceGetName: "NVIDIA H100 80GB HBM3"
  unsigned long long memory_mib = 0;
  unsigned long long reserved_mib = 0;  // what the driver keeps (nvmlMemory_v2_t.reserved)
  double tdp_w = 0;
  double min_power_limit_w = 0;
  double idle_power_w = 0;
  unsigned sm_max_mhz = 0;
  unsigned sm_base_mhz = 0;
  unsigned sm_idle_mhz = 0;
  unsigned mem_mhz = 0;
  unsigned video_max_mhz = 0;
  double slowdown_temp_c = 0;     // SW thermal slowdown from here
  double hw_slowdown_temp_c = 0;  // HW thermal slowdown from here
  double shutdown_temp_c = 0;
  double memory_temp_offset_c = 0;   // HBM runs this much hotter than the GPU sensor
  double thermal_rise_at_tdp_c = 0;  // steady-state rise over ambient at TDP
  double thermal_time_constant_s = 0;
  unsigned nvlinks = 0;
  double nvlink_link_gbps = 0;  // GB/s per direction per link
  unsigned pcie_gen = 0;
  unsigned pcie_width = 0;
  double pcie_gbps = 0;  // usable GB/s per direction at full link
  bool gpm = false;
  unsigned pci_device_id = 0;
  unsigned pci_subsystem_id = 0;
  std::vector<unsigned> hgx_buses;  // PCI bus numbers of an 8-GPU HGX board, by index
  std::vector<MigProfile> mig_profiles;
};

// The model for a scenario key or alias ("h100-sxm", "h100", "a100-sxm4-80gb", "a100", "h200");
// nullptr when unknown.
const GpuModel* FindGpuModel(std::string_view key);

// Every known scenario key, for error messages.
std::string KnownGpuModelKeys();

// The MIG profile of that model by name ("3g.40gb"); nullptr when the model has none of that name.
const MigProfile* FindMigProfile(const GpuModel& model, std::string_view name);

}  // namespace gpuscope::sim
