// ProcessCollector: the agent's own process metrics under the names every Prometheus client library
// uses (process_cpu_seconds_total, process_resident_memory_bytes, ...) plus gpuscope_build_info, so the
// agent's footprint is visible next to what it measures. Reads /proc/self (never --path.procfs, which
// may point at a fixture tree of another host).
//
// Constructing one reads nothing (the registry builds collectors for --help and --print-metrics-docs);
// /proc/stat's boot time is read by the first Collect() that finds it.
//
// Thread-safety: Collect() from the scheduler thread only.
#pragma once

#include <optional>
#include <string>

#include "src/core/collector.h"

namespace gpuscope {

class ProcessCollector : public Collector {
 public:
  explicit ProcessCollector(std::string self_dir = "/proc/self", std::string proc_stat_path = "/proc/stat");

  std::string_view Name() const override { return "process"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  // /proc/stat's btime, read on first use and kept once known.
  std::optional<double> BootTimeSeconds();

  std::string self_dir_;
  std::string proc_stat_path_;
  std::optional<double> boot_time_seconds_;
};

}  // namespace gpuscope
