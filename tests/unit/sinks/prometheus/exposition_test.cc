#include "src/sinks/prometheus/exposition.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "src/core/metric.h"
#include "src/core/snapshot.h"

namespace gpuscope {
namespace {

MetricFamily Family(std::string name, MetricType type, std::string help, std::vector<Sample> samples,
                    std::string unit = "") {
  return MetricFamily{std::move(name), std::move(help), type, std::move(unit), std::move(samples)};
}

std::string Render(std::vector<MetricFamily> families, ExpositionFormat format,
                   RenderStats* stats = nullptr) {
  return RenderSnapshot(Snapshot::Of(std::move(families)), format, stats);
}

std::string Value(double v) {
  std::string out;
  AppendSampleValue(v, out);
  return out;
}

TEST(PrometheusExposition, FormatsSpecialAndIntegralValuesLikePrometheus) {
  EXPECT_EQ(Value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(Value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(Value(1e6), "1000000");
  EXPECT_EQ(Value(-42), "-42");
  EXPECT_EQ(Value(0.0), "0");
  EXPECT_EQ(Value(-0.0), "0");
  EXPECT_EQ(Value(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(Value(0.1), "0.1");
  EXPECT_EQ(Value(1.5e300), "1.5e+300");
  EXPECT_EQ(Value(3.0e20), "3e+20");  // beyond 2^53: shortest round-trip form
  EXPECT_EQ(std::strtod(Value(2.0 / 3.0).c_str(), nullptr), 2.0 / 3.0);
}

TEST(PrometheusExposition, RendersTextFormatWithOneHelpAndTypePerFamily) {
  std::string out =
      Render({Family("DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).",
                     {{{{"gpu", "0"}, {"UUID", "GPU-a"}}, 45}, {{{"gpu", "1"}, {"UUID", "GPU-b"}}, 47}})},
             ExpositionFormat::kText004);
  EXPECT_EQ(out,
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\"} 45\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\"} 47\n");
}

TEST(PrometheusExposition, FamiliesOfOneNameFromSeveralSourcesRenderAsOneFamily) {
  SnapshotStore store;
  store.Update("a", {Family("m", MetricType::kGauge, "from a", {{{{"src", "a"}}, 1}}),
                     Family("n", MetricType::kGauge, "", {{{{"src", "a"}}, 3}})});
  store.Update("b", {Family("m", MetricType::kGauge, "from b", {{{{"src", "b"}}, 2}})});
  std::string text = RenderSnapshot(*store.Current(), ExpositionFormat::kText004, nullptr);
  // One HELP/TYPE for "m" (the first source's), then the samples of both sources.
  const std::string a_first = "# HELP m from a\n# TYPE m gauge\nm{src=\"a\"} 1\nm{src=\"b\"} 2\n";
  const std::string b_first = "# HELP m from b\n# TYPE m gauge\nm{src=\"b\"} 2\nm{src=\"a\"} 1\n";
  const std::string n = "# TYPE n gauge\nn{src=\"a\"} 3\n";
  EXPECT_TRUE(text == a_first + n || text == b_first + n) << text;
}

TEST(PrometheusExposition, EscapesHelpAndLabelValues) {
  std::vector<MetricFamily> families = {
      Family("m", MetricType::kGauge, "a \\ b\nc \"q\"", {{{{"l", "x\\y\"z\nw"}}, 1}})};
  EXPECT_EQ(Render(families, ExpositionFormat::kText004),
            "# HELP m a \\\\ b\\nc \"q\"\n# TYPE m gauge\nm{l=\"x\\\\y\\\"z\\nw\"} 1\n");
  // OpenMetrics escapes the double quote in HELP as well.
  EXPECT_EQ(Render(families, ExpositionFormat::kOpenMetrics100),
            "# HELP m a \\\\ b\\nc \\\"q\\\"\n# TYPE m gauge\nm{l=\"x\\\\y\\\"z\\nw\"} 1\n# EOF\n");
}

TEST(PrometheusExposition, RendersNanAndInfinitySamples) {
  std::string out = Render({Family("m", MetricType::kGauge, "",
                                   {{{{"k", "nan"}}, std::nan("")},
                                    {{{"k", "pos"}}, std::numeric_limits<double>::infinity()},
                                    {{{"k", "neg"}}, -std::numeric_limits<double>::infinity()}})},
                           ExpositionFormat::kText004);
  EXPECT_EQ(out, "# TYPE m gauge\nm{k=\"nan\"} NaN\nm{k=\"pos\"} +Inf\nm{k=\"neg\"} -Inf\n");
}

TEST(PrometheusExposition, SkipsInvalidMetricAndLabelNamesAndCountsThem) {
  RenderStats stats;
  std::string out =
      Render({Family("1bad", MetricType::kGauge, "h", {{{}, 1}}), Family("good", MetricType::kGauge, "",
                                                                         {{{{"__reserved", "x"}}, 1},
                                                                          {{{"bad-label", "x"}}, 2},
                                                                          {{{"a", "1"}, {"a", "2"}}, 3},
                                                                          {{{"ok", "y"}}, 4}})},
             ExpositionFormat::kText004, &stats);
  EXPECT_EQ(out, "# TYPE good gauge\ngood{ok=\"y\"} 4\n");
  EXPECT_EQ(stats.skipped_families, 1u);
  EXPECT_EQ(stats.skipped_samples, 3u);
}

TEST(PrometheusExposition, ReplacesInvalidUtf8WithReplacementCharacter) {
  std::string bad_value =
      "a\xFF"
      "b\xC3";                                         // stray byte, truncated sequence
  std::string overlong = "\xC0\xAF";                   // overlong '/'
  std::string surrogate = "\xED\xA0\x80";              // UTF-16 surrogate
  std::string good = "\xE2\x82\xAC \xF0\x9F\x98\x80";  // euro sign, emoji: kept
  std::string out =
      Render({Family("m", MetricType::kGauge, "help \xFE",
                     {{{{"a", bad_value}, {"b", overlong}, {"c", surrogate}, {"d", good}}, 1}})},
             ExpositionFormat::kText004);
  EXPECT_EQ(out,
            "# HELP m help \xEF\xBF\xBD\n# TYPE m gauge\n"
            "m{a=\"a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\",b=\"\xEF\xBF\xBD\xEF\xBF\xBD\","
            "c=\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\",d=\"" +
                good + "\"} 1\n");
}

TEST(PrometheusExposition, InfoFamiliesAreGaugesInTextAndInfoInOpenMetrics) {
  std::vector<MetricFamily> families = {
      Family("gpuscope_gpu_info", MetricType::kInfo, "GPU identity.", {{{{"uuid", "GPU-a"}}, 1}}),
      Family("odd_identity", MetricType::kInfo, "", {{{{"x", "y"}}, 1}})};
  EXPECT_EQ(Render(families, ExpositionFormat::kText004),
            "# HELP gpuscope_gpu_info GPU identity.\n# TYPE gpuscope_gpu_info gauge\n"
            "gpuscope_gpu_info{uuid=\"GPU-a\"} 1\n"
            "# TYPE odd_identity gauge\nodd_identity{x=\"y\"} 1\n");
  EXPECT_EQ(Render(families, ExpositionFormat::kOpenMetrics100),
            "# HELP gpuscope_gpu GPU identity.\n# TYPE gpuscope_gpu info\n"
            "gpuscope_gpu_info{uuid=\"GPU-a\"} 1\n"
            "# TYPE odd_identity gauge\nodd_identity{x=\"y\"} 1\n# EOF\n");
}

TEST(PrometheusExposition, CountersWithoutTotalSuffixStayUnknownInOpenMetrics) {
  std::vector<MetricFamily> families = {
      Family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", MetricType::kCounter, "Energy (mJ).", {{{}, 123456}}),
      Family("gpuscope_xid_errors_total", MetricType::kCounter, "XIDs.", {{{{"xid", "79"}}, 2}})};
  EXPECT_EQ(Render(families, ExpositionFormat::kText004),
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Energy (mJ).\n"
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 123456\n"
            "# HELP gpuscope_xid_errors_total XIDs.\n# TYPE gpuscope_xid_errors_total counter\n"
            "gpuscope_xid_errors_total{xid=\"79\"} 2\n");
  EXPECT_EQ(Render(families, ExpositionFormat::kOpenMetrics100),
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Energy (mJ).\n"
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 123456\n"
            "# HELP gpuscope_xid_errors XIDs.\n# TYPE gpuscope_xid_errors counter\n"
            "gpuscope_xid_errors_total{xid=\"79\"} 2\n# EOF\n");
}

TEST(PrometheusExposition, EmitsUnitOnlyInOpenMetricsAndOnlyWhenTheNameEndsWithIt) {
  std::vector<MetricFamily> families = {
      Family("gpuscope_busy_seconds_total", MetricType::kCounter, "", {{{}, 1}}, "seconds"),
      Family("gpuscope_memory_used", MetricType::kGauge, "", {{{}, 2}}, "bytes"),
      Family("gpuscope_temp_celsius", MetricType::kGauge, "", {{{}, 3}}, "celsius")};
  EXPECT_EQ(
      Render(families, ExpositionFormat::kOpenMetrics100),
      "# TYPE gpuscope_busy_seconds counter\n# UNIT gpuscope_busy_seconds seconds\n"
      "gpuscope_busy_seconds_total 1\n"
      "# TYPE gpuscope_memory_used gauge\ngpuscope_memory_used 2\n"
      "# TYPE gpuscope_temp_celsius gauge\n# UNIT gpuscope_temp_celsius celsius\ngpuscope_temp_celsius 3\n"
      "# EOF\n");
  EXPECT_EQ(Render(families, ExpositionFormat::kText004).find("# UNIT"), std::string::npos);
}

TEST(PrometheusExposition, UnknownTypeIsUntypedInTextFormatAndEmptyFamiliesAreOmitted) {
  std::vector<MetricFamily> families = {Family("a", MetricType::kUnknown, "", {{{}, 1}}),
                                        Family("empty", MetricType::kGauge, "nothing", {})};
  EXPECT_EQ(Render(families, ExpositionFormat::kText004), "# TYPE a untyped\na 1\n");
  EXPECT_EQ(Render(families, ExpositionFormat::kOpenMetrics100), "# TYPE a unknown\na 1\n# EOF\n");
  EXPECT_EQ(Render({}, ExpositionFormat::kOpenMetrics100), "# EOF\n");
}

TEST(PrometheusExposition, LabelsWithEmptyValuesAreNotWrittenAsPrometheusTreatsThemAsAbsent) {
  std::string text = Render({Family("m", MetricType::kGauge, "h",
                                    {{{{"gpu", "0"}, {"hpc_job", ""}, {"GPU_I_ID", "1"}}, 1},
                                     {{{"gpu", ""}, {"hpc_job", ""}}, 2}})},
                            ExpositionFormat::kText004);
  EXPECT_EQ(text, "# HELP m h\n# TYPE m gauge\nm{gpu=\"0\",GPU_I_ID=\"1\"} 1\nm 2\n");
}

TEST(PrometheusExposition, ContentTypesNameTheFormatVersions) {
  EXPECT_EQ(ExpositionContentType(ExpositionFormat::kText004), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(ExpositionContentType(ExpositionFormat::kOpenMetrics100),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

// A step-time histogram of one rank: buckets 0.1, 1 and +Inf; the 0.1 bucket with an exemplar.
Sample StepHistogram() {
  auto value = std::make_shared<HistogramValue>();
  value->buckets = HistogramBuckets::Make({0.1, 1});
  value->counts = {2, 5, 6};
  value->sum = 7.25;
  value->exemplars.resize(3);
  value->exemplars[0] = {Labels{{"trace_id", "0af7651916cd43dd8448eb211c80319c"}}, 0.08, 1733100000123456789};
  return Sample(Labels{{"hpc_job", "42"}, {"rank", "0"}, {"gpu", ""}}, std::move(value));
}

MetricFamily StepFamily() {
  return Family("train_step_seconds", MetricType::kHistogram, "Step time.", {StepHistogram()}, "seconds");
}

TEST(PrometheusExposition, HistogramsAreCumulativeBucketsThenCountAndSumInTextFormat) {
  EXPECT_EQ(Render({StepFamily()}, ExpositionFormat::kText004),
            "# HELP train_step_seconds Step time.\n"
            "# TYPE train_step_seconds histogram\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"0.1\"} 2\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"1.0\"} 5\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"+Inf\"} 6\n"
            "train_step_seconds_count{hpc_job=\"42\",rank=\"0\"} 6\n"
            "train_step_seconds_sum{hpc_job=\"42\",rank=\"0\"} 7.25\n");
}

TEST(PrometheusExposition, OpenMetricsHistogramsCarryTheBucketsExemplars) {
  EXPECT_EQ(Render({StepFamily()}, ExpositionFormat::kOpenMetrics100),
            "# HELP train_step_seconds Step time.\n"
            "# TYPE train_step_seconds histogram\n"
            "# UNIT train_step_seconds seconds\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"0.1\"} 2 "
            "# {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.08 1733100000.123\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"1.0\"} 5\n"
            "train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"+Inf\"} 6\n"
            "train_step_seconds_count{hpc_job=\"42\",rank=\"0\"} 6\n"
            "train_step_seconds_sum{hpc_job=\"42\",rank=\"0\"} 7.25\n"
            "# EOF\n");
}

TEST(PrometheusExposition, ExemplarsOverTheOpenMetricsLabelLimitAreLeftOutAndTheBucketKept) {
  Sample sample = StepHistogram();
  auto value = std::make_shared<HistogramValue>(*sample.histogram);
  value->exemplars[0].labels = Labels{{"trace_id", std::string(121, 'a')}};  // 8 + 121 > 128
  sample.histogram = value;
  const std::string out = Render({Family("train_step_seconds", MetricType::kHistogram, "", {sample})},
                                 ExpositionFormat::kOpenMetrics100);
  EXPECT_NE(out.find("train_step_seconds_bucket{hpc_job=\"42\",rank=\"0\",le=\"0.1\"} 2\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find(" # {"), std::string::npos) << out;
}

TEST(PrometheusExposition, MalformedHistogramSamplesAreSkippedAndCounted) {
  Sample no_value(Labels{{"rank", "0"}}, 1.0);  // a number where a histogram belongs
  Sample own_le = StepHistogram();
  own_le.labels = Labels{{"le", "5"}};
  Sample short_counts = StepHistogram();
  auto value = std::make_shared<HistogramValue>(*short_counts.histogram);
  value->counts.pop_back();
  short_counts.histogram = value;
  RenderStats stats;
  const std::string out =
      Render({Family("h", MetricType::kHistogram, "", {no_value, own_le, short_counts, StepHistogram()})},
             ExpositionFormat::kText004, &stats);
  EXPECT_EQ(stats.skipped_samples, 3u);
  EXPECT_NE(out.find("h_count{hpc_job=\"42\",rank=\"0\"} 6\n"), std::string::npos) << out;
}

// Lints a realistic rendering with the real promtool when it is installed.
TEST(PrometheusExposition, PromtoolAcceptsRenderedTextFormat) {
  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  std::vector<MetricFamily> families = {
      Family("DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).", {{{{"gpu", "0"}}, 45}}),
      Family("gpuscope_gpu_info", MetricType::kInfo, "GPU identity.", {{{{"uuid", "GPU-\xFF\"x\\"}}, 1}}),
      Family("gpuscope_xid_errors_total", MetricType::kCounter, "XID errors by code.",
             {{{{"xid", "79"}}, 2}, {{{"xid", "48"}}, std::nan("")}}),
      StepFamily()};
  std::string path = ::testing::TempDir() + "/promtool_input.prom";
  std::ofstream(path) << Render(families, ExpositionFormat::kText004);
  std::string command = std::string(promtool) + " check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe)) output += buf;
  int rc = pclose(pipe);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "") << output;
}

}  // namespace
}  // namespace gpuscope
