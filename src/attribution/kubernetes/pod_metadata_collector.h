// PodMetadataCollector: publishes PodMetadataSource's families (gpuscope_k8s_pod_info and the API
// server's health) like any collector, so the pods' join series and the source's health show next to the
// GPU series, on the scheduler's thread and never on a scrape.
//
// Thread-safety: as Collector; PodMetadataSource::MetricFamilies() is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "src/attribution/kubernetes/pod_metadata_source.h"
#include "src/core/collector.h"

namespace gpuscope {

class PodMetadataCollector : public Collector {
 public:
  // `source` must outlive the collector; `pod_labels` is its allow-list, for Describe().
  PodMetadataCollector(const PodMetadataSource* source, std::vector<std::string> pod_labels)
      : source_(source), pod_labels_(std::move(pod_labels)) {}
  std::string_view Name() const override { return "kubernetes_api"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    for (MetricFamily& family : source_->MetricFamilies()) out.push_back(std::move(family));
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override {
    return PodMetadataSource::Describe(pod_labels_);
  }

 private:
  const PodMetadataSource* source_;
  std::vector<std::string> pod_labels_;
};

}  // namespace gpuscope
