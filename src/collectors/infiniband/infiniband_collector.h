// InfinibandCollector: InfiniBand and RoCE ports from sysfs (<sysfs>/class/infiniband/<dev>/ports/<n>/):
// the standard PMA counters (one family per counter, data counters in bytes), driver hw_counters (one
// family with a counter label), link state, physical state, rate and width, device identity, and which
// NVIDIA GPUs share a PCIe switch or a NUMA node with each HCA (joined to the GPU series by pci_bus_id).
// A host without <sysfs>/class/infiniband, or with no device in it, is NoData, not an error.
//
// Thread-safety: Collect() from the scheduler thread only; Name() and Describe() from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/collector.h"

namespace gpuscope {

struct InfinibandCollectorOptions {
  // Root of sysfs (--path.sysfs). Fixture trees in tests.
  std::string sysfs = "/sys";
  // Export per-port hw_counters (driver specific; mlx5 has ~40 per port).
  bool hw_counters = true;
  // Scan <sysfs>/bus/pci/devices for NVIDIA GPUs and export gpuscope_infiniband_gpu_affinity_info.
  bool gpu_affinity = true;
};

class InfinibandCollector : public Collector {
 public:
  explicit InfinibandCollector(InfinibandCollectorOptions options = {});

  std::string_view Name() const override { return "infiniband"; }
  // Ok when at least one device was read; NoData when <sysfs>/class/infiniband is missing or empty.
  // Files that vanish or hold malformed values mid-scan are skipped and counted in
  // gpuscope_infiniband_sysfs_malformed_values_total; they never fail the cycle.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  InfinibandCollectorOptions options_;
  uint64_t malformed_values_ = 0;  // cumulative since start; only touched by Collect()
};

}  // namespace gpuscope
