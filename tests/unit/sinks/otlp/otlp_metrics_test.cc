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
