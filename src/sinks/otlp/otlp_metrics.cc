#include "src/sinks/otlp/otlp_metrics.h"

#include <bit>

#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;

constexpr uint64_t kAggregationTemporalityCumulative = 2;

// NumberDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3; double as_double = 4;
//                   repeated KeyValue attributes = 7; }
std::string EncodeDataPoint(const Sample& sample, double value, uint64_t start_time_unix_nano,
                            uint64_t time_unix_nano) {
  std::string out;
  if (start_time_unix_nano != 0) AppendFixed64Field(out, 2, start_time_unix_nano);
  AppendFixed64Field(out, 3, time_unix_nano);
  AppendFixed64Field(out, 4, std::bit_cast<uint64_t>(value));
  for (const auto& [key, label_value] : sample.labels) {
    // An empty label is an absent one (Prometheus' rule, and /metrics leaves it out): hpc_job="" on an
    // idle GPU becomes no hpc_job attribute.
    if (label_value.empty()) continue;
    AppendBytesField(out, 7, EncodeOtlpKeyValue({key, label_value}));
  }
  return out;
}

// Metric { string name = 1; string description = 2; string unit = 3; Gauge gauge = 5; Sum sum = 7; }
// for `run`: families of one name (a snapshot may hold a name's samples in several families, from
// different collectors, next to each other), described by the first.
std::string EncodeMetric(const OtlpMetricsRequest& request, std::span<const MetricFamily* const> run) {
  const MetricFamily& family = *run.front();
  const bool sum = family.type == MetricType::kCounter;
  const bool info = family.type == MetricType::kInfo;
  // Gauge { repeated NumberDataPoint data_points = 1; }
  // Sum { repeated NumberDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2;
  //       bool is_monotonic = 3; }
  std::string data;
  for (const MetricFamily* part : run) {
    for (const Sample& sample : part->samples) {
      AppendBytesField(data, 1,
                       EncodeDataPoint(sample, info ? 1.0 : sample.value,
                                       sum ? request.start_time_unix_nano : 0, request.time_unix_nano));
    }
  }
  if (sum) {
    AppendVarintField(data, 2, kAggregationTemporalityCumulative);
    AppendVarintField(data, 3, 1);
  }
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(family.name));
  if (!family.help.empty()) AppendBytesField(out, 2, ToValidUtf8(family.help));
  if (!family.unit.empty()) AppendBytesField(out, 3, ToValidUtf8(family.unit));
  AppendBytesField(out, sum ? 7 : 5, data);
  return out;
}

}  // namespace

std::string EncodeOtlpMetricsRequest(const OtlpMetricsRequest& request,
                                     std::span<const MetricFamily* const> families) {
  // ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; }
  std::string scope_metrics;
  AppendBytesField(scope_metrics, 1, EncodeOtlpScope(request.scope_name, request.scope_version));
  std::vector<const MetricFamily*> run;
  auto flush = [&] {
    if (!run.empty()) AppendBytesField(scope_metrics, 2, EncodeMetric(request, run));
    run.clear();
  };
  for (const MetricFamily* family : families) {
    if (family->samples.empty()) continue;
    if (!run.empty() && run.front()->name != family->name) flush();
    run.push_back(family);
  }
  flush();
  // ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; }
  std::string resource_metrics;
  AppendBytesField(resource_metrics, 1, EncodeOtlpResource(request.resource_attributes));
  AppendBytesField(resource_metrics, 2, scope_metrics);
  // ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
  std::string out;
  AppendBytesField(out, 1, resource_metrics);
  return out;
}

}  // namespace gpuscope
