// AttributionSourcesCollector: publishes the self-metrics of the JobTable's long-running sources (the
// mapping directory watcher and the Slurm query thread) like any collector, so their health shows next to
// what they attribute. Sources that are not configured are passed as null.
//
// Thread-safety: as Collector; the sources' SelfMetrics()/MetricFamilies() are thread-safe.
#pragma once

#include "src/core/collector.h"

namespace gpuscope {

class MappingDirSource;
class SlurmJobSource;

class AttributionSourcesCollector : public Collector {
 public:
  AttributionSourcesCollector(const MappingDirSource* mapping, const SlurmJobSource* slurm)
      : mapping_(mapping), slurm_(slurm) {}
  std::string_view Name() const override { return "attribution"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  const MappingDirSource* mapping_;
  const SlurmJobSource* slurm_;
};

}  // namespace gpuscope
