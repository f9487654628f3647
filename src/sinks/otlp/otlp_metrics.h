// Encodes metric families as an OTLP/HTTP metrics request body: the protobuf message
// opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest, POSTed to /v1/metrics with
// Content-Type application/x-protobuf. One ResourceMetrics (the agent's resource attributes, as the logs
// request has them) holding one ScopeMetrics (the agent as instrumentation scope) holding one Metric per
// family: a gauge family becomes a Gauge, a counter a Sum (CUMULATIVE, is_monotonic), an info family a
// Gauge of 1s (its labels carry the information), an unknown family a Gauge, a histogram a Histogram
// (CUMULATIVE) of HistogramDataPoints: count, sum, explicit bounds and per-bucket counts (not
// cumulative, as OTLP counts them), start time as a Sum's, and the buckets' exemplars (a trace_id or
// span_id label holding a hex id becomes the exemplar's id bytes, other labels its filtered attributes).
// Every sample is one NumberDataPoint (as_double) whose attributes are the sample's labels (gpu, UUID,
// hpc_job, user, ...; an empty label is left out, as /metrics does), and, for a point with an hpc_job that
// gpuscope_job_info of the same families names, that job's user and account (OTLP backends seldom join
// series as PromQL does; a label of the sample's own wins), stamped `time_unix_nano`; a Sum's points also
// carry `start_time_unix_nano` (when counting started). Help is the description, the family's unit the unit.
//
// Two encoded requests concatenated are one valid request holding both (repeated fields merge), so a
// sender may join queued requests into one body.
//
// Field numbers follow opentelemetry-proto (metrics/v1/metrics.proto, collector/metrics/v1/
// metrics_service.proto): ExportMetricsServiceRequest{resource_metrics=1}; ResourceMetrics{resource=1,
// scope_metrics=2}; ScopeMetrics{scope=1, metrics=2}; Metric{name=1, description=2, unit=3, gauge=5,
// sum=7, histogram=9}; Gauge{data_points=1}; Sum{data_points=1, aggregation_temporality=2,
// is_monotonic=3}; Histogram{data_points=1, aggregation_temporality=2}; NumberDataPoint{
// start_time_unix_nano=2 fixed64, time_unix_nano=3 fixed64, as_double=4 double, attributes=7};
// HistogramDataPoint{start_time_unix_nano=2, time_unix_nano=3, count=4 fixed64, sum=5 double,
// bucket_counts=6 packed fixed64, explicit_bounds=7 packed double, exemplars=8, attributes=9};
// Exemplar{time_unix_nano=2 fixed64, as_double=3, span_id=4, trace_id=5, filtered_attributes=7};
// AggregationTemporality CUMULATIVE=2 (checked against go.opentelemetry.io/proto/otlp v1.11.1).
//
// Thread-safety: pure functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/core/metric.h"
#include "src/sinks/otlp/otlp_logs.h"

namespace gpuscope {

struct OtlpMetricsRequest {
  std::vector<OtlpAttribute> resource_attributes;  // e.g. service.name, host.name
  std::string scope_name = "gpuscope";
  std::string scope_version;
  uint64_t time_unix_nano = 0;        // every point's time
  uint64_t start_time_unix_nano = 0;  // Sum points' start; 0 (unknown) is left out
};

// Returns the serialized ExportMetricsServiceRequest for `families` (families without samples are left
// out; consecutive families of one name are one Metric). Every string is made valid UTF-8. Never fails.
std::string EncodeOtlpMetricsRequest(const OtlpMetricsRequest& request,
                                     std::span<const MetricFamily* const> families);

}  // namespace gpuscope
