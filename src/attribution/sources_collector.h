// AttributionSourcesCollector: publishes the self-metrics of the JobTable's and PodTable's long-running
// sources (the mapping directory watcher, the Slurm query thread, the kubelet pod-resources client) like
// any collector, so their health shows next to what they attribute. Sources that are not configured are
// passed as null.
//
// Thread-safety: as Collector; the sources' SelfMetrics()/MetricFamilies() are thread-safe.
#pragma once

#include "src/core/collector.h"

namespace gpuscope {

class KubeletPodSource;
class MappingDirSource;
class SlurmJobSource;

class AttributionSourcesCollector : public Collector {
 public:
  AttributionSourcesCollector(const MappingDirSource* mapping, const SlurmJobSource* slurm,
                              const KubeletPodSource* kubelet = nullptr)
      : mapping_(mapping), slurm_(slurm), kubelet_(kubelet) {}
  std::string_view Name() const override { return "attribution"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  const MappingDirSource* mapping_;
  const SlurmJobSource* slurm_;
  const KubeletPodSource* kubelet_;
};

}  // namespace gpuscope
