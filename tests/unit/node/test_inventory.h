// Hand-made node-state values for the tests of its readers (GPU directory, event attribution, the mapping
// source, the event pipeline): GpuInventory as the GPU collector publishes it, and JobTable jobs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "src/node/gpu_inventory.h"
#include "src/node/job_table.h"

namespace gpuscope::testing {

// Opened GPUs: (NVML index, PCI bus id, UUID); indexes not named are present but not opened.
inline std::shared_ptr<GpuInventory> OpenedGpus(
    const std::vector<std::tuple<uint32_t, std::string, std::string>>& gpus) {
  auto inventory = std::make_shared<GpuInventory>();
  for (const auto& [index, bus, uuid] : gpus) {
    if (inventory->devices.size() <= index) inventory->devices.resize(index + 1);
    GpuDeviceInventory& device = inventory->devices[index];
    device.opened = true;
    device.pci_bus_id = bus;
    device.uuid = uuid;
  }
  for (uint32_t i = 0; i < inventory->devices.size(); ++i) inventory->devices[i].index = i;
  return inventory;
}

// GPU 1 whole (`gpu1_uuid`, bus 18); GPU 2 (bus 2A) in MIG mode, its GPU instance 3 holding the MIG devices
// `mig_uuids` (one per compute instance); GPU 0 not opened yet.
inline std::shared_ptr<const GpuInventory> OneWholeGpuAndOneInMig(const std::string& gpu1_uuid,
                                                                  std::vector<std::string> mig_uuids) {
  auto inventory = OpenedGpus({{1, "00000000:18:00.0", gpu1_uuid},
                               {2, "00000000:2A:00.0", "GPU-11111111-2222-4333-8444-555555555555"}});
  inventory->devices[2].mig.push_back({3, "3g.40gb", std::move(mig_uuids), std::nullopt});
  return inventory;
}

// A job with its owner, as a mapping file or scontrol gives it.
inline JobInfo Job(std::string id, std::string user, std::string account) {
  JobInfo job;
  job.job_id = std::move(id);
  job.user = std::move(user);
  job.account = std::move(account);
  return job;
}

}  // namespace gpuscope::testing
