// HostCollector: the host facts that decide GPU performance and that node_exporter does not know about —
// each NVIDIA GPU's NUMA node and local CPUs, the PCIe links from each GPU up to its root port (width and
// generation, current against what both ends can do), whether each GPU process runs on its GPU's NUMA
// node, and the host's pressure stall information (PSI). Generic CPU, disk and network metrics stay with
// node_exporter (deploy/prometheus/node-exporter-scrape.yml).
//
// Everything is read from the roots given in the options (--path.sysfs, --path.procfs), so tests run it
// against fixture trees. On a host without NVIDIA GPUs (a login node, a GPU node whose driver lost its
// devices) the GPU series are absent and what needs no GPU (PSI) is still reported.
//
// PCIe speed vs width: an idle NVIDIA GPU drops its link to a lower speed to save power and retrains to
// full speed under load, so "speed below max" is normal at idle. Only a narrower width (x8 instead of x16:
// a bad riser, slot or retimer) counts in gpuscope_gpu_pcie_link_degraded; a lower speed is reported apart
// in gpuscope_gpu_pcie_link_speed_degraded, to be alerted on only while the GPU is busy.
//
// Thread-safety: Collect() from the scheduler thread only; Name() and Describe() from any thread.
#pragma once

#include <string>
#include <vector>

#include "src/core/collector.h"

namespace gpuscope {

class GpuProcessTable;

struct HostCollectorOptions {
  std::string sysfs = "/sys";    // --path.sysfs
  std::string procfs = "/proc";  // --path.procfs
  // The GPU cycle's processes; when null, the per-process NUMA placement series are not produced.
  // Must outlive the collector.
  const GpuProcessTable* gpu_processes = nullptr;
  // Also report the links above each GPU (PCIe switch and root port), not only the GPU's own link.
  bool upstream_links = true;
  // Report /proc/pressure/{cpu,memory,io}.
  bool pressure = true;
};

class HostCollector : public Collector {
 public:
  explicit HostCollector(HostCollectorOptions options);

  std::string_view Name() const override { return "host"; }
  // Ok with this cycle's families: the GPU series for each NVIDIA GPU in <sysfs>/bus/pci/devices (none
  // when there is none, logged once at debug level) and the pressure series. NoData (nothing appended)
  // when neither a GPU nor pressure information is found. Files that are missing or malformed leave their
  // series out (debug log); processes that exit while being read are skipped.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  void CollectGpus(std::vector<MetricFamily>& families);
  void CollectPressure(std::vector<MetricFamily>& families);

  HostCollectorOptions options_;
  bool logged_no_gpu_ = false;
  bool logged_no_pressure_ = false;
};

}  // namespace gpuscope
