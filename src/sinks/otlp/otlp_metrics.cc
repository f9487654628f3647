#include "src/sinks/otlp/otlp_metrics.h"

#include <algorithm>
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

// The sample's labels as the point's attributes (field `field`), with the user and account of its job.
void AppendAttributes(const Labels& labels, const JobIdentity& jobs, uint32_t field, std::string& out) {
  for (const auto& [key, label_value] : labels) {
    // An empty label is an absent one (Prometheus' rule, and /metrics leaves it out): hpc_job="" on an
    // idle GPU becomes no hpc_job attribute.
    if (label_value.empty()) continue;
    AppendBytesField(out, field, EncodeOtlpKeyValue({key, label_value}));
  }
  // A point of a job's GPU carries who runs it: OTLP backends seldom join series.
  const std::string_view job = LabelValue(labels, "hpc_job");
  const auto identity = job.empty() ? jobs.end() : jobs.find(job);
  if (identity != jobs.end()) {
    if (!identity->second.first.empty() && LabelValue(labels, "user").empty())
      AppendBytesField(out, field, EncodeOtlpKeyValue({"user", identity->second.first}));
    if (!identity->second.second.empty() && LabelValue(labels, "account").empty())
      AppendBytesField(out, field, EncodeOtlpKeyValue({"account", identity->second.second}));
  }
}

// NumberDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3; double as_double = 4;
//                   repeated KeyValue attributes = 7; }
std::string EncodeDataPoint(const Sample& sample, double value, uint64_t start_time_unix_nano,
                            uint64_t time_unix_nano, const JobIdentity& jobs) {
  std::string out;
  if (start_time_unix_nano != 0) AppendFixed64Field(out, 2, start_time_unix_nano);
  AppendFixed64Field(out, 3, time_unix_nano);
  AppendFixed64Field(out, 4, std::bit_cast<uint64_t>(value));
  AppendAttributes(sample.labels, jobs, 7, out);
  return out;
}

// The bytes of a lower-case or upper-case hex id of exactly `size` bytes; empty when it is not one.
std::string HexIdBytes(std::string_view hex, size_t size) {
  if (hex.size() != 2 * size) return {};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    const int high = nibble(hex[2 * i]);
    const int low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) return {};
    out[i] = static_cast<char>(high << 4 | low);
  }
  return out;
}

// Exemplar { fixed64 time_unix_nano = 2; double as_double = 3; bytes span_id = 4; bytes trace_id = 5;
//            repeated KeyValue filtered_attributes = 7; }: trace_id and span_id labels holding hex ids
// become the id fields, other labels filtered attributes.
std::string EncodeExemplar(const Exemplar& exemplar) {
  std::string out;
  if (exemplar.timestamp_ns > 0) AppendFixed64Field(out, 2, static_cast<uint64_t>(exemplar.timestamp_ns));
  AppendFixed64Field(out, 3, std::bit_cast<uint64_t>(exemplar.value));
  for (const auto& [key, value] : exemplar.labels) {
    if (value.empty()) continue;
    if (key == "trace_id" || key == "span_id") {
      const std::string id = HexIdBytes(value, key == "trace_id" ? 16 : 8);
      if (!id.empty()) {
        AppendBytesField(out, key == "trace_id" ? 5 : 4, id);
        continue;
      }
    }
    AppendBytesField(out, 7, EncodeOtlpKeyValue({key, value}));
  }
  return out;
}

// HistogramDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3; fixed64 count = 4;
//                      double sum = 5; repeated fixed64 bucket_counts = 6 (packed);
//                      repeated double explicit_bounds = 7 (packed); repeated Exemplar exemplars = 8;
//                      repeated KeyValue attributes = 9; }: the bucket counts per bucket, not cumulative.
std::string EncodeHistogramPoint(const Sample& sample, uint64_t start_time_unix_nano, uint64_t time_unix_nano,
                                 const JobIdentity& jobs) {
  const HistogramValue& histogram = *sample.histogram;
  std::string out;
  if (start_time_unix_nano != 0) AppendFixed64Field(out, 2, start_time_unix_nano);
  AppendFixed64Field(out, 3, time_unix_nano);
  AppendFixed64Field(out, 4, histogram.count());
  AppendFixed64Field(out, 5, std::bit_cast<uint64_t>(histogram.sum));
  std::string packed;
  uint64_t below = 0;
  for (uint64_t cumulative : histogram.counts) {
    protowire::AppendFixed64(packed, cumulative - below);
    below = cumulative;
  }
  AppendBytesField(out, 6, packed);
  packed.clear();
  for (double bound : histogram.buckets->bounds())
    protowire::AppendFixed64(packed, std::bit_cast<uint64_t>(bound));
  if (!packed.empty()) AppendBytesField(out, 7, packed);
  if (histogram.exemplars.size() == histogram.counts.size()) {
    for (const Exemplar& exemplar : histogram.exemplars) {
      if (!exemplar.labels.empty()) AppendBytesField(out, 8, EncodeExemplar(exemplar));
    }
  }
  AppendAttributes(sample.labels, jobs, 9, out);
  return out;
}

// Whether a histogram sample can be encoded: counts for every bucket, never decreasing.
bool HistogramWellFormed(const Sample& sample) {
  const HistogramValue* histogram = sample.histogram.get();
  if (histogram == nullptr || histogram->buckets == nullptr ||
      histogram->counts.size() != histogram->buckets->size())
    return false;
  return std::is_sorted(histogram->counts.begin(), histogram->counts.end());
}

// Metric { string name = 1; string description = 2; string unit = 3; Gauge gauge = 5; Sum sum = 7;
// Histogram histogram = 9; } for `run`: families of one name (a snapshot may hold a name's samples in
// several families, from different collectors, next to each other), described by the first.
std::string EncodeMetric(const OtlpMetricsRequest& request, std::span<const MetricFamily* const> run,
                         const JobIdentity& jobs) {
  const MetricFamily& family = *run.front();
  const bool sum = family.type == MetricType::kCounter;
  const bool info = family.type == MetricType::kInfo;
  const bool histogram = family.type == MetricType::kHistogram;
  // Gauge { repeated NumberDataPoint data_points = 1; }
  // Sum { repeated NumberDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2;
  //       bool is_monotonic = 3; }
  // Histogram { repeated HistogramDataPoint data_points = 1; AggregationTemporality aggregation_temporality =
  // 2; }
  std::string data;
  for (const MetricFamily* part : run) {
    if ((part->type == MetricType::kHistogram) != histogram) continue;  // one Metric has one kind of point
    for (const Sample& sample : part->samples) {
      if (histogram) {
        if (HistogramWellFormed(sample))
          AppendBytesField(
              data, 1,
              EncodeHistogramPoint(sample, request.start_time_unix_nano, request.time_unix_nano, jobs));
        continue;
      }
      AppendBytesField(data, 1,
                       EncodeDataPoint(sample, info ? 1.0 : sample.value,
                                       sum ? request.start_time_unix_nano : 0, request.time_unix_nano, jobs));
    }
  }
  if (sum || histogram) AppendVarintField(data, 2, kAggregationTemporalityCumulative);
  if (sum) AppendVarintField(data, 3, 1);
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(family.name));
  if (!family.help.empty()) AppendBytesField(out, 2, ToValidUtf8(family.help));
  if (!family.unit.empty()) AppendBytesField(out, 3, ToValidUtf8(family.unit));
  AppendBytesField(out, histogram ? 9 : sum ? 7 : 5, data);
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
