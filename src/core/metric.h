// The metric model: a family is {name, help, type, unit, samples{labels, value}}. Collectors build
// fresh families every cycle (no long-lived instruments), so a series vanishes when its device or job
// does. Name and label validation lives here; rendering lives in sinks/prometheus/exposition.h.
//
// Thread-safety: value types. A MetricFamily inside a published Snapshot is immutable.
#pragma once

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

struct Sample {
  Labels labels;
  double value = 0;
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
