#include "src/parsers/prom_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

std::vector<std::pair<std::string, std::string>> Pairs(const Labels& labels) {
  return {labels.begin(), labels.end()};
}

TEST(PromText, ReadsNodeExporterStyleFileWithTypesHelpAndEscapes) {
  const PromTextParse parsed = ParsePromText(
      "# A site health check, written by cron.\n"
      "# HELP site_check_ok 1 when the check passed\\nsee \\\\wiki.\n"
      "# TYPE site_check_ok gauge\n"
      "site_check_ok{check=\"nccl\",node=\"gpu-07\"} 1\n"
      "site_check_ok{node=\"gpu-07\", check=\"dcgm \\\"diag\\\"\\n\\\\\",} 0\n"
      "\n"
      "# TYPE site_repairs_total counter\n"
      "site_repairs_total 3.5e+02\n"
      "site_untyped -Inf\n"
      "  site_nan\tNaN  \n");
  ASSERT_EQ(parsed.error, "");
  ASSERT_EQ(parsed.families.size(), 4u);
  const MetricFamily& ok = parsed.families[0];
  EXPECT_EQ(ok.name, "site_check_ok");
  EXPECT_EQ(ok.type, MetricType::kGauge);
  EXPECT_EQ(ok.help, "1 when the check passed\nsee \\wiki.");
  ASSERT_EQ(ok.samples.size(), 2u);
  using P = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Pairs(ok.samples[0].labels), (P{{"check", "nccl"}, {"node", "gpu-07"}}));
  // The second sample's labels come in the family's order.
  EXPECT_EQ(Pairs(ok.samples[1].labels), (P{{"check", "dcgm \"diag\"\n\\"}, {"node", "gpu-07"}}));
  EXPECT_EQ(ok.samples[1].value, 0);
  EXPECT_EQ(parsed.families[1].type, MetricType::kCounter);
  EXPECT_EQ(parsed.families[1].samples[0].value, 350);
  EXPECT_EQ(parsed.families[2].type, MetricType::kUnknown);
  EXPECT_EQ(parsed.families[2].samples[0].value, -INFINITY);
  EXPECT_TRUE(std::isnan(parsed.families[3].samples[0].value));
  EXPECT_EQ(parsed.families[3].help, "");
}

TEST(PromText, FamilyWithMetadataButNoSampleIsLeftOut) {
  const PromTextParse parsed = ParsePromText("# HELP a x\n# TYPE a gauge\nb 1\n");
  ASSERT_EQ(parsed.error, "");
  ASSERT_EQ(parsed.families.size(), 1u);
  EXPECT_EQ(parsed.families[0].name, "b");
}

TEST(PromText, HistogramsAsUntypedReadsTheirLinesAsPlainSeries) {
  const std::string text =
      "# HELP step_seconds Step time.\n"
      "# TYPE step_seconds histogram\n"
      "step_seconds_bucket{rank=\"0\",le=\"1\"} 2\n"
      "step_seconds_bucket{rank=\"0\",le=\"+Inf\"} 3\n"
      "step_seconds_sum{rank=\"0\"} 2.5\n"
      "step_seconds_count{rank=\"0\"} 3\n"
      "# TYPE rpc_seconds summary\n"
      "rpc_seconds{quantile=\"0.99\"} 0.2\n"
      "# TYPE up gauge\n"
      "up 1\n";
  // Without the option the histogram stays refused.
  EXPECT_THAT(ParsePromText(text).error,
              HasSubstr("line 2: type histogram of step_seconds is not supported"));

  const PromTextParse parsed = ParsePromText(text, PromTextOptions{.histograms_as_untyped = true});
  ASSERT_EQ(parsed.error, "");
  std::vector<std::string> names;
  for (const MetricFamily& family : parsed.families) {
    names.push_back(family.name);
    EXPECT_EQ(family.type, family.name == "up" ? MetricType::kGauge : MetricType::kUnknown) << family.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"step_seconds_bucket", "step_seconds_sum", "step_seconds_count",
                                             "rpc_seconds", "up"}));
  ASSERT_EQ(parsed.families[0].samples.size(), 2u);
  EXPECT_EQ(Pairs(parsed.families[0].samples[1].labels),
            (std::vector<std::pair<std::string, std::string>>{{"rank", "0"}, {"le", "+Inf"}}));
  EXPECT_EQ(parsed.families[0].samples[1].value, 3);
  EXPECT_EQ(parsed.families[3].samples[0].value, 0.2);
}

TEST(PromText, MixedLabelNamesKeepEachSamplesLabelsAndStillRefuseARepeatedSeries) {
  // A GPU's series and its MIG instances' in one family, as the agent writes DCGM_FI_DEV_FB_FREE.
  const std::string text =
      "# TYPE fb_free gauge\n"
      "fb_free{gpu=\"0\",UUID=\"GPU-a\"} 100\n"
      "fb_free{gpu=\"0\",UUID=\"GPU-a\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\"} 10\n";
  EXPECT_THAT(ParsePromText(text).error, HasSubstr("line 3: fb_free: samples with different label names"));

  const PromTextOptions mixed{.mixed_label_names = true};
  const PromTextParse parsed = ParsePromText(text, mixed);
  ASSERT_EQ(parsed.error, "");
  ASSERT_EQ(parsed.families.size(), 1u);
  ASSERT_EQ(parsed.families[0].samples.size(), 2u);
  EXPECT_EQ(Pairs(parsed.families[0].samples[0].labels),
            (std::vector<std::pair<std::string, std::string>>{{"gpu", "0"}, {"UUID", "GPU-a"}}));
  EXPECT_EQ(parsed.families[0].samples[1].labels.size(), 4u);
  EXPECT_EQ(parsed.families[0].samples[1].value, 10);
  // The same series again, its labels in another order, is still refused.
  EXPECT_THAT(
      ParsePromText(text + "fb_free{GPU_I_ID=\"7\",UUID=\"GPU-a\",GPU_I_PROFILE=\"1g.10gb\",gpu=\"0\"} 9\n",
                    mixed)
          .error,
      HasSubstr("line 4: fb_free: the same series twice"));
}

TEST(PromText, EachRefusalNamesItsLineAndReturnsNoFamilies) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a 1\nb 2 1700000000000\n", "line 2: b: explicit timestamps are not allowed"},
      {"# TYPE h histogram\nh_count 1\n", "line 1: type histogram of h is not supported"},
      {"# TYPE s summary\n", "type summary of s is not supported"},
      {"# TYPE a gauge_ish\n", "unknown type 'gauge_ish' for a"},
      {"# TYPE a gauge\n# TYPE a counter\n", "line 2: second # TYPE for a"},
      {"# HELP a x\n# HELP a y\n", "second # HELP for a"},
      {"a 1\n# TYPE a gauge\n", "line 2: # TYPE for a after its first sample"},
      {"a{x=\"1\"} 1\na{y=\"1\"} 2\n", "a: samples with different label names"},
      {"a{x=\"1\"} 1\na{x=\"1\"} 2\n", "a: the same series twice"},
      {"a{x=\"1\",x=\"2\"} 1\n", "label x given twice"},
      {"a{__x=\"1\"} 1\n", "invalid label name __x"},
      {"a{x=\"1\\t\"} 1\n", "invalid escape \\t in label x"},
      {"a{x=\"1} 1\n", "unterminated value of label x"},
      {"a{x=1} 1\n", "expected a quoted value for label x"},
      {"a{x=\"1\" y=\"2\"} 1\n", "expected , or } after label x"},
      {"a\n", "a: expected a blank and a value"},
      {"a one\n", "a: invalid value 'one'"},
      {"a +-1\n", "invalid value '+-1'"},
      {"a inf\n", "invalid value 'inf'"},
      {"9a 1\n", "line 1: expected a metric name"},
      {"# TYPE 9 gauge\n", "# TYPE needs a valid metric name"},
      {"a{x=\"\xff\"} 1\n", "line 1: invalid UTF-8"},
      {"a 1\nb 2\n\xc0\xaf 3\n", "line 3: invalid UTF-8"},
  };
  for (const auto& [input, error] : cases) {
    const PromTextParse parsed = ParsePromText(input);
    EXPECT_THAT(parsed.error, HasSubstr(error)) << input;
    EXPECT_TRUE(parsed.families.empty()) << input;
  }
}

TEST(PromText, EmptyAndCommentOnlyInputsHoldNoFamilies) {
  for (const char* input : {"", "\n\n", "# just a comment\n#\n", "   \t\n"}) {
    const PromTextParse parsed = ParsePromText(input);
    EXPECT_EQ(parsed.error, "") << input;
    EXPECT_TRUE(parsed.families.empty()) << input;
  }
}

}  // namespace
}  // namespace gpuscope
