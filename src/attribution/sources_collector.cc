#include "src/attribution/sources_collector.h"

#include "src/attribution/kubernetes/kubelet_pod_source.h"
#include "src/attribution/mapping_dir_source.h"
#include "src/attribution/slurm_job_source.h"

namespace gpuscope {

Status AttributionSourcesCollector::Collect(std::vector<MetricFamily>& out) {
  if (mapping_ == nullptr && slurm_ == nullptr && kubelet_ == nullptr) {
    return Status::NoData("no attribution source configured");
  }
  if (mapping_ != nullptr) {
    for (MetricFamily& family : mapping_->SelfMetrics()) out.push_back(std::move(family));
  }
  if (slurm_ != nullptr) {
    for (MetricFamily& family : slurm_->MetricFamilies()) out.push_back(std::move(family));
  }
  if (kubelet_ != nullptr) {
    for (MetricFamily& family : kubelet_->MetricFamilies()) out.push_back(std::move(family));
  }
  return Status::Ok();
}

std::vector<MetricDescription> AttributionSourcesCollector::Describe() const {
  // Described from the families a source emits, so the docs cannot drift from the code.
  std::vector<MetricDescription> out;
  auto add = [&out](const std::vector<MetricFamily>& families, const char* source) {
    for (const MetricFamily& family : families) {
      MetricDescription d{family.name, family.type, family.help, family.unit, {}, source};
      if (!family.samples.empty()) {
        for (const auto& [name, value] : family.samples.front().labels) d.labels.push_back(name);
      }
      out.push_back(std::move(d));
    }
  };
  if (mapping_ != nullptr) add(mapping_->SelfMetrics(), "mapping directory watcher");
  if (slurm_ != nullptr) add(slurm_->MetricFamilies(), "scontrol");
  if (kubelet_ != nullptr) {
    for (const MetricDescription& d : KubeletPodSource::Describe()) out.push_back(d);
  }
  return out;
}

}  // namespace gpuscope
