#include "src/sinks/otlp/otlp_metrics.h"

#include <bit>
#include <map>
#include <string_view>
#include <utility>

#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;

constexpr uint64_t kAggregationTemporalityCumulative = 2;

// hpc_job -> its user and account, from the snapshot's gpuscope_job_info.
using JobIdentity = std::map<std::string, std::pair<std::string, std::string>, std::less<>>;

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  for (const auto& [key, value] : labels) {
    if (key == name) return value;
  }
  return {};
}

JobIdentity JobIdentityOf(std::span<const MetricFamily* const> families) {
  JobIdentity out;
  for (const MetricFamily* family : families) {
    if (family->name != "gpuscope_job_info") continue;
    for (const Sample& sample : family->samples) {
      const std::string_view job = LabelValue(sample.labels, "hpc_job");
      if (job.empty()) continue;
      out.emplace(std::string(job),
                  std::pair<std::string, std::string>(LabelValue(sample.labels, "user"),
                                                      LabelValue(sample.labels, "account")));
    }
  }
  return out;
}

// NumberDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3; double as_double = 4;
//                   repeated KeyValue attributes = 7; }
std::string EncodeDataPoint(const Sample& sample, double value, uint64_t start_time_unix_nano,
                            uint64_t time_unix_nano, const JobIdentity& jobs) {
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
  // A point of a job's GPU carries who runs it: OTLP backends seldom join series.
  const std::string_view job = LabelValue(sample.labels, "hpc_job");
  const auto identity = job.empty() ? jobs.end() : jobs.find(job);
  if (identity != jobs.end()) {
    if (!identity->second.first.empty() && LabelValue(sample.labels, "user").empty())
      AppendBytesField(out, 7, EncodeOtlpKeyValue({"user", identity->second.first}));
    if (!identity->second.second.empty() && LabelValue(sample.labels, "account").empty())
      AppendBytesField(out, 7, EncodeOtlpKeyValue({"account", identity->second.second}));
  }
  return out;
}

// Metric { string name = 1; string description = 2; string unit = 3; Gauge gauge = 5; Sum sum = 7; }
// for `run`: families of one name (a snapshot may hold a name's samples in several families, from
// different collectors, next to each other), described by the first.
std::string EncodeMetric(const OtlpMetricsRequest& request, std::span<const MetricFamily* const> run,
                         const JobIdentity& jobs) {
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
                                       sum ? request.start_time_unix_nano : 0, request.time_unix_nano, jobs));
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
  const JobIdentity jobs = JobIdentityOf(families);
  std::vector<const MetricFamily*> run;
  auto flush = [&] {
    if (!run.empty()) AppendBytesField(scope_metrics, 2, EncodeMetric(request, run, jobs));
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
