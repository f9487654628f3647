// Collector: one source of metrics (GPU via NVML, InfiniBand sysfs, ...). Its interface is one call that
// writes a fresh set of families; the scheduler, not the collector, times it and emits the
// gpuscope_collector_* self-metrics.
//
// Thread-safety: Collect() is called from the collector's own scheduler thread only, never
// concurrently with itself. Describe() and Name() may be called from any thread.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "src/core/metric.h"
#include "src/core/status.h"

namespace gpuscope {

class Collector {
 public:
  virtual ~Collector() = default;

  // Stable name used in flags (--collector.NAME) and in the collector label of self-metrics.
  virtual std::string_view Name() const = 0;

  // Appends this cycle's families to `out`. Returns Ok, NoData (nothing to report, not an error), or an
  // error; on error whatever was appended is still published (partial results beat none) and the
  // scheduler reports success 0.
  virtual Status Collect(std::vector<MetricFamily>& out) = 0;

  // Every family Collect() may emit, for docs/metrics.md and tests.
  virtual std::vector<MetricDescription> Describe() const = 0;

  // Whether the source is usable at all (e.g. NVML loaded and initialised). /healthz turns unhealthy when
  // an enabled collector reports false. Default: healthy.
  virtual bool Healthy() const { return true; }
};

}  // namespace gpuscope
