#include "sim/gpu_models.h"

namespace gpuscope::sim {
namespace {

const std::vector<GpuModel>& Models() {
  static const std::vector<GpuModel> models = {
      {
          .key = "a100-sxm4-80gb",
          .name = "NVIDIA A100-SXM4-80GB",
          .memory_mib = 81920,
          .reserved_mib = 593,
          .tdp_w = 400,
          .min_power_limit_w = 100,
          .idle_power_w = 60,
          .sm_max_mhz = 1410,
          .sm_base_mhz = 1275,
          .sm_idle_mhz = 210,
          .mem_mhz = 1593,
          .video_max_mhz = 1290,
          .slowdown_temp_c = 89,
          .hw_slowdown_temp_c = 90,
          .shutdown_temp_c = 92,
          .memory_temp_offset_c = 3,
          .thermal_rise_at_tdp_c = 40,
          .thermal_time_constant_s = 50,
          .nvlinks = 12,
          .nvlink_link_gbps = 25,
          .pcie_gen = 4,
          .pcie_width = 16,
          .pcie_gbps = 25,
          .gpm = false,
          .pci_device_id = 0x20B210DE,
          .pci_subsystem_id = 0x147F10DE,
          .hgx_buses = {0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD},
          .mig_profiles = {{"1g.10gb", 1, 9728},
                           {"1g.20gb", 1, 19968},
                           {"2g.20gb", 2, 19968},
                           {"3g.40gb", 3, 40192},
                           {"4g.40gb", 4, 40192},
                           {"7g.80gb", 7, 80896}},
      },
      {
          .key = "h100-sxm",
          .name = "NVIDIA H100 80GB HBM3",
          .memory_mib = 81559,
          .reserved_mib = 553,
          .tdp_w = 700,
          .min_power_limit_w = 200,
          .idle_power_w = 70,
          .sm_max_mhz = 1980,
          .sm_base_mhz = 1590,
          .sm_idle_mhz = 345,
          .mem_mhz = 2619,
          .video_max_mhz = 1755,
          .slowdown_temp_c = 87,
          .hw_slowdown_temp_c = 90,
          .shutdown_temp_c = 92,
          .memory_temp_offset_c = 6,
          .thermal_rise_at_tdp_c = 42,
          .thermal_time_constant_s = 45,
          .nvlinks = 18,
          .nvlink_link_gbps = 25,
          .pcie_gen = 5,
          .pcie_width = 16,
          .pcie_gbps = 50,
          .gpm = true,
          .pci_device_id = 0x233010DE,
          .pci_subsystem_id = 0x16C110DE,
          .hgx_buses = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB},
          .mig_profiles = {{"1g.10gb", 1, 9856},
                           {"1g.20gb", 1, 19968},
                           {"2g.20gb", 2, 19968},
                           {"3g.40gb", 3, 40448},
                           {"4g.40gb", 4, 40448},
                           {"7g.80gb", 7, 80896}},
      },
      {
          .key = "h200",
          .name = "NVIDIA H200",
          .memory_mib = 143771,
          .reserved_mib = 591,
          .tdp_w = 700,
          .min_power_limit_w = 200,
          .idle_power_w = 75,
          .sm_max_mhz = 1980,
          .sm_base_mhz = 1590,
          .sm_idle_mhz = 345,
          .mem_mhz = 3201,
          .video_max_mhz = 1755,
          .slowdown_temp_c = 87,
          .hw_slowdown_temp_c = 90,
          .shutdown_temp_c = 92,
          .memory_temp_offset_c = 8,
          .thermal_rise_at_tdp_c = 42,
          .thermal_time_constant_s = 45,
          .nvlinks = 18,
          .nvlink_link_gbps = 25,
          .pcie_gen = 5,
          .pcie_width = 16,
          .pcie_gbps = 50,
          .gpm = true,
          .pci_device_id = 0x233510DE,
          .pci_subsystem_id = 0x18BE10DE,
          .hgx_buses = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB},
          .mig_profiles = {{"1g.18gb", 1, 16384},
                           {"1g.35gb", 1, 32768},
                           {"2g.35gb", 2, 32768},
                           {"3g.71gb", 3, 69632},
                           {"4g.71gb", 4, 69632},
                           {"7g.141gb", 7, 139264}},
      },
  };
  return models;
}

}  // namespace

const GpuModel* FindGpuModel(std::string_view key) {
  if (key == "a100" || key == "a100-sxm4") key = "a100-sxm4-80gb";
  if (key == "h100" || key == "h100-sxm5") key = "h100-sxm";
  for (const GpuModel& model : Models()) {
    if (model.key == key) return &model;
  }
  return nullptr;
}

std::string KnownGpuModelKeys() {
  std::string keys;
  for (const GpuModel& model : Models()) {
    if (!keys.empty()) keys += ", ";
    keys += model.key;
  }
  return keys;
}

const MigProfile* FindMigProfile(const GpuModel& model, std::string_view name) {
  for (const MigProfile& profile : model.mig_profiles) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

}  // namespace gpuscope::sim
