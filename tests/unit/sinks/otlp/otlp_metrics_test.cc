#include "src/sinks/otlp/otlp_metrics.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <string>
#include <vector>

#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope {
namespace {

using testing::FieldsNumbered;
using testing::ParseProtoFields;
using testing::ProtoField;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::vector<ProtoField> MustParse(std::string_view bytes) {
  auto fields = ParseProtoFields(bytes);
  EXPECT_TRUE(fields.has_value());
  return fields.value_or(std::vector<ProtoField>{});
}

ProtoField One(const std::vector<ProtoField>& fields, uint32_t number) {
  const auto matches = FieldsNumbered(fields, number);
  EXPECT_EQ(matches.size(), 1u) << "field " << number;
  return matches.empty() ? ProtoField{} : matches[0];
}

TEST(WireOtlpMetrics, CounterIsACumulativeMonotonicSumWithLabelsAsAttributesExactBytes) {
  MetricFamily counter{"c", "", MetricType::kCounter, "", {}};
  counter.samples.emplace_back(Labels{{"gpu", "0"}}, 2.0);
  const MetricFamily* families[] = {&counter};
  OtlpMetricsRequest request;
  request.scope_name = "";
  request.time_unix_nano = 1;
  const std::string expected = Bytes({
      0x0a, 0x31,                                         // resource_metrics
      0x0a, 0x00,                                         //   resource (no attributes)
      0x12, 0x2d,                                         //   scope_metrics
      0x0a, 0x00,                                         //     scope (unnamed)
      0x12, 0x29,                                         //     metrics
      0x0a, 0x01, 'c',                                    //       name
      0x3a, 0x24,                                         //       sum
      0x0a, 0x1e,                                         //         data_points
      0x19, 1,    0,    0,    0,   0,   0,   0,    0,     //           time_unix_nano = 1
      0x21, 0,    0,    0,    0,   0,   0,   0,    0x40,  //           as_double = 2.0
      0x3a, 0x0a, 0x0a, 0x03, 'g', 'p', 'u', 0x12, 0x03,  //           attributes: gpu
      0x0a, 0x01, '0',                                    //             = "0"
      0x10, 0x02,                                         //         aggregation_temporality CUMULATIVE
      0x18, 0x01,                                         //         is_monotonic
  });
  EXPECT_EQ(EncodeOtlpMetricsRequest(request, families), expected);
}

TEST(WireOtlpMetrics, GaugesAndInfoAreGaugesInfoIsOneEmptyLabelsAreAbsentHelpAndUnitCarried) {
  MetricFamily temp{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  temp.samples.emplace_back(Labels{{"gpu", "0"}, {"UUID", "GPU-a"}}, 41.0);
  temp.samples.emplace_back(Labels{{"gpu", "1"}, {"UUID", "GPU-b"}, {"hpc_job", ""}}, 43.5);
  MetricFamily info{"gpuscope_job_info", "Jobs.", MetricType::kInfo, "", {}};
  info.samples.emplace_back(Labels{{"hpc_job", "42"}, {"user", "alice"}}, 7.0);
  MetricFamily secs{"gpuscope_uptime_seconds", "Up.", MetricType::kCounter, "seconds", {}};
  secs.samples.emplace_back(Labels{}, 9.0);
  MetricFamily empty{"gpuscope_empty", "Nothing.", MetricType::kGauge, "", {}};
  const MetricFamily* families[] = {&temp, &empty, &info, &secs};
  OtlpMetricsRequest request;
  request.resource_attributes = {{"service.name", "gpuscope-agent"}, {"host.name", "n1"}};
  request.time_unix_nano = 2000;
  request.start_time_unix_nano = 1000;

  const std::string encoded = EncodeOtlpMetricsRequest(request, families);  // the fields below view into it
  const auto top = MustParse(encoded);
  const auto resource_metrics = MustParse(One(top, 1).bytes);
  EXPECT_EQ(FieldsNumbered(MustParse(One(resource_metrics, 1).bytes), 1).size(), 2u);
  const auto metrics = FieldsNumbered(MustParse(One(resource_metrics, 2).bytes), 2);
  ASSERT_EQ(metrics.size(), 3u);  // the empty family is left out

  const auto gauge = MustParse(metrics[0].bytes);
  EXPECT_EQ(One(gauge, 1).bytes, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(One(gauge, 2).bytes, "GPU temperature (in C).");
  EXPECT_TRUE(FieldsNumbered(gauge, 3).empty());
  EXPECT_TRUE(FieldsNumbered(gauge, 7).empty());
  const auto points = FieldsNumbered(MustParse(One(gauge, 5).bytes), 1);
  ASSERT_EQ(points.size(), 2u);
  const auto second = MustParse(points[1].bytes);
  EXPECT_TRUE(FieldsNumbered(second, 2).empty());  // gauges have no start time
  EXPECT_EQ(One(second, 3).scalar, 2000u);
  EXPECT_EQ(std::bit_cast<double>(One(second, 4).scalar), 43.5);
  const auto attributes = FieldsNumbered(second, 7);
  ASSERT_EQ(attributes.size(), 2u);  // hpc_job="" is absent, as in /metrics
  EXPECT_EQ(One(MustParse(attributes[1].bytes), 1).bytes, "UUID");

  const auto info_metric = MustParse(metrics[1].bytes);
  const auto info_point = MustParse(One(MustParse(One(info_metric, 5).bytes), 1).bytes);
  EXPECT_EQ(std::bit_cast<double>(One(info_point, 4).scalar), 1.0);
  EXPECT_EQ(FieldsNumbered(info_point, 7).size(), 2u);

  const auto sum_metric = MustParse(metrics[2].bytes);
  EXPECT_EQ(One(sum_metric, 3).bytes, "seconds");
  const auto sum = MustParse(One(sum_metric, 7).bytes);
  EXPECT_EQ(One(sum, 2).scalar, 2u);
  EXPECT_EQ(One(sum, 3).scalar, 1u);
  const auto sum_point = MustParse(One(sum, 1).bytes);
  EXPECT_EQ(One(sum_point, 2).scalar, 1000u);
  EXPECT_EQ(std::bit_cast<double>(One(sum_point, 4).scalar), 9.0);
}

// {key: value} of a NumberDataPoint's attributes.
std::map<std::string, std::string> Attributes(std::string_view point) {
  std::map<std::string, std::string> out;
  for (const ProtoField& kv : FieldsNumbered(MustParse(point), 7)) {
    const auto fields = MustParse(kv.bytes);
    out[std::string(One(fields, 1).bytes)] = std::string(One(MustParse(One(fields, 2).bytes), 1).bytes);
  }
  return out;
}

TEST(WireOtlpMetrics, APointOfAJobsGpuCarriesTheUserAndAccountOfGpuscopeJobInfo) {
  MetricFamily temp{"DCGM_FI_DEV_GPU_TEMP", "", MetricType::kGauge, "", {}};
  temp.samples.emplace_back(Labels{{"gpu", "0"}, {"hpc_job", "42"}}, 41.0);
  temp.samples.emplace_back(Labels{{"gpu", "1"}, {"hpc_job", ""}}, 40.0);    // idle: nobody's
  temp.samples.emplace_back(Labels{{"gpu", "2"}, {"hpc_job", "77"}}, 39.0);  // no job_info: no identity
  temp.samples.emplace_back(Labels{{"gpu", "3"}, {"hpc_job", "42"}, {"user", "own"}}, 38.0);
  MetricFamily info{"gpuscope_job_info", "", MetricType::kInfo, "", {}};
  info.samples.emplace_back(Labels{{"hpc_job", "42"}, {"user", "alice"}, {"account", "physics"}}, 1.0);
  const MetricFamily* families[] = {&temp, &info};
  const std::string encoded = EncodeOtlpMetricsRequest(OtlpMetricsRequest{}, families);
  const auto metrics =
      FieldsNumbered(MustParse(One(MustParse(One(MustParse(encoded), 1).bytes), 2).bytes), 2);
  ASSERT_EQ(metrics.size(), 2u);
  const auto points = FieldsNumbered(MustParse(One(MustParse(metrics[0].bytes), 5).bytes), 1);
  ASSERT_EQ(points.size(), 4u);
  using Map = std::map<std::string, std::string>;
  EXPECT_EQ(Attributes(points[0].bytes),
            (Map{{"gpu", "0"}, {"hpc_job", "42"}, {"user", "alice"}, {"account", "physics"}}));
  EXPECT_EQ(Attributes(points[1].bytes), (Map{{"gpu", "1"}}));
  EXPECT_EQ(Attributes(points[2].bytes), (Map{{"gpu", "2"}, {"hpc_job", "77"}}));
  EXPECT_EQ(Attributes(points[3].bytes),  // the sample's own label wins
            (Map{{"gpu", "3"}, {"hpc_job", "42"}, {"user", "own"}, {"account", "physics"}}));
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

std::vector<uint64_t> PackedFixed64(std::string_view bytes) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = v << 8 | static_cast<unsigned char>(bytes[i + b]);
    out.push_back(v);
  }
  return out;
}

TEST(WireOtlpMetrics, AHistogramIsACumulativeHistogramWithPerBucketCountsBoundsAndTraceExemplars) {
  auto value = std::make_shared<HistogramValue>();
  value->buckets = HistogramBuckets::Make({0.1, 1});
  value->counts = {2, 5, 6};  // cumulative in the model
  value->sum = 7.25;
  value->exemplars.resize(3);
  value->exemplars[1] = {Labels{{"trace_id", "0af7651916cd43dd8448eb211c80319c"}, {"host", "n1"}}, 0.5, 123};
  value->exemplars[2] = {Labels{{"trace_id", "not-hex"}}, 9, 0};
  MetricFamily steps{"train_step_seconds", "Step time.", MetricType::kHistogram, "seconds", {}};
  steps.samples.emplace_back(Labels{{"hpc_job", "42"}, {"rank", "3"}}, value);
  steps.samples.emplace_back(Labels{{"rank", "4"}}, 1.0);  // not a histogram: left out
  const MetricFamily* families[] = {&steps};
  OtlpMetricsRequest request;
  request.time_unix_nano = 2000;
  request.start_time_unix_nano = 1000;

  const std::string encoded = EncodeOtlpMetricsRequest(request, families);
  const auto resource_metrics = MustParse(One(MustParse(encoded), 1).bytes);
  const auto metric = MustParse(One(MustParse(One(resource_metrics, 2).bytes), 2).bytes);
  EXPECT_EQ(One(metric, 1).bytes, "train_step_seconds");
  EXPECT_EQ(One(metric, 3).bytes, "seconds");
  EXPECT_TRUE(FieldsNumbered(metric, 5).empty());
  const auto histogram = MustParse(One(metric, 9).bytes);
  EXPECT_EQ(One(histogram, 2).scalar, 2u);  // CUMULATIVE
  const auto points = FieldsNumbered(histogram, 1);
  ASSERT_EQ(points.size(), 1u);
  const auto point = MustParse(points[0].bytes);
  EXPECT_EQ(One(point, 2).scalar, 1000u);
  EXPECT_EQ(One(point, 3).scalar, 2000u);
  EXPECT_EQ(One(point, 4).scalar, 6u);
  EXPECT_EQ(std::bit_cast<double>(One(point, 5).scalar), 7.25);
  EXPECT_EQ(PackedFixed64(One(point, 6).bytes), (std::vector<uint64_t>{2, 3, 1}));  // per bucket
  const auto bounds = PackedFixed64(One(point, 7).bytes);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(std::bit_cast<double>(bounds[0]), 0.1);
  EXPECT_EQ(std::bit_cast<double>(bounds[1]), 1.0);
  const auto attributes = FieldsNumbered(point, 9);
  ASSERT_EQ(attributes.size(), 2u);
  EXPECT_EQ(One(MustParse(attributes[1].bytes), 1).bytes, "rank");

  const auto exemplars = FieldsNumbered(point, 8);
  ASSERT_EQ(exemplars.size(), 2u);
  const auto traced = MustParse(exemplars[0].bytes);
  EXPECT_EQ(One(traced, 2).scalar, 123u);
  EXPECT_EQ(std::bit_cast<double>(One(traced, 3).scalar), 0.5);
  EXPECT_EQ(One(traced, 5).bytes, Bytes({0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb,
                                         0x21, 0x1c, 0x80, 0x31, 0x9c}));
  const auto filtered = FieldsNumbered(traced, 7);
  ASSERT_EQ(filtered.size(), 1u);
  EXPECT_EQ(One(MustParse(filtered[0].bytes), 1).bytes, "host");
  const auto untraced = MustParse(exemplars[1].bytes);
  EXPECT_TRUE(FieldsNumbered(untraced, 5).empty());  // not a hex id: kept as an attribute
  EXPECT_TRUE(FieldsNumbered(untraced, 2).empty());  // no time
  EXPECT_EQ(One(MustParse(One(untraced, 7).bytes), 1).bytes, "trace_id");
}

}  // namespace
}  // namespace gpuscope
