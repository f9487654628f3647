// The metric model: a family is {name, help, type, unit, samples{labels, value}}. Collectors build
// fresh families every cycle (no long-lived instruments), so a series vanishes when its device or job
// does. Name and label validation lives here; rendering lives in sinks/prometheus/exposition.h.
//
// Thread-safety: value types. A MetricFamily inside a published Snapshot is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

enum class MetricType { kGauge, kCounter, kInfo, kUnknown };

std::string_view MetricTypeName(MetricType type);  // "gauge", "counter", "info", "unknown"

// Label pairs in the order they are rendered. Within one family every sample has the same label names
// in the same order (fixed label sets per family).
using Labels = std::vector<std::pair<std::string, std::string>>;

// What a sample is about, for the layers that enrich it after the collector (attribution ties a GPU
// sample to the job holding that GPU or MIG instance, a process sample to its process's job). Set by the
// collector that knows; never rendered. The defaults mean "not about one GPU / instance / process".
struct SampleSubject {
  static constexpr int32_t kNone = -1;
  int32_t gpu = kNone;           // NVML index of the GPU
  int32_t gpu_instance = kNone;  // MIG GPU instance id (GPU_I_ID)
  uint32_t pid = 0;              // the process, 0 when none
};

struct Sample {
  Sample() = default;
  Sample(Labels labels_in, double value_in, SampleSubject subject_in = {})
      : labels(std::move(labels_in)), value(value_in), subject(subject_in) {}
  Labels labels;
  double value = 0;
  SampleSubject subject;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::string unit;  // OpenMetrics unit ("seconds", "bytes"); empty for dcgm-exporter names
  std::vector<Sample> samples;
};

// What a collector declares about one family it may emit; docs/metrics.md is generated from these.
struct MetricDescription {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::string unit;
  std::vector<std::string> labels;  // label names beyond the collector's common identity labels
  std::string source;               // where the value comes from (e.g. the NVML call), for the docs
};

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"
bool IsValidLabelName(std::string_view name);

}  // namespace gpuscope
