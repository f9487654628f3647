#include "src/cli/chargeback_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

constexpr char kCosts[] = R"(
currency: EUR
models:
  "NVIDIA H100 80GB HBM3": {gpu_hour: 4.0, kwh: 0.25}
  "NVIDIA A100-SXM4-80GB":
    gpu_hour: 2
)";

TEST(ChargebackCostTableTest, ReadsPricesPerModelAndTheCurrency) {
  CostTable costs;
  ASSERT_TRUE(ParseCostTable(kCosts, &costs).ok());
  EXPECT_EQ(costs.currency, "EUR");
  ASSERT_NE(costs.Find("NVIDIA H100 80GB HBM3"), nullptr);
  EXPECT_EQ(costs.Find("NVIDIA H100 80GB HBM3")->per_gpu_hour, 4.0);
  EXPECT_EQ(costs.Find("NVIDIA H100 80GB HBM3")->per_kwh, 0.25);
  ASSERT_NE(costs.Find("NVIDIA A100-SXM4-80GB"), nullptr);
  EXPECT_EQ(costs.Find("NVIDIA A100-SXM4-80GB")->per_gpu_hour, 2.0);
  EXPECT_FALSE(costs.Find("NVIDIA A100-SXM4-80GB")->per_kwh.has_value());
  EXPECT_EQ(costs.Find("NVIDIA H200"), nullptr);
}

TEST(ChargebackCostTableTest, RejectsBadInputWithAMessageNamingThePlace) {
  struct Case {
    const char* yaml;
    const char* message_part;
  };
  const Case cases[] = {
      {"models: {a: {gpu_hour: 1}", "not valid YAML"},
      {"currency: USD\n", "needs 'models'"},
      {"models: {}\n", "needs 'models'"},
      {"models: [a, b]\n", "models"},
      {"models:\n  X: {gpu_hour: -1}\n", "models[\"X\"].gpu_hour: a price must be a number >= 0"},
      {"models:\n  X: {gpu_hour: cheap}\n", "not \"cheap\""},
      {"models:\n  X: {kwh: 0.2}\n", "gpu_hour is missing"},
      {"models:\n  X: {gpu_hour: 1, watts: 3}\n", "unknown key \"watts\""},
      {"models:\n  X: 3\n", "expected {gpu_hour"},
      {"models:\n  X: {gpu_hour: 1}\n  X: {gpu_hour: 2}\n", "X"},
      {"prices: {}\nmodels:\n  X: {gpu_hour: 1}\n", "unknown key \"prices\""},
  };
  for (const Case& c : cases) {
    CostTable costs;
    Status status = ParseCostTable(c.yaml, &costs);
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << c.yaml;
    EXPECT_NE(status.message().find(c.message_part), std::string::npos)
        << c.yaml << " -> " << status.message();
  }
}

TEST(ChargebackRangeTest, GroupingAcceptsTheFourLabels) {
  ChargebackGrouping g;
  for (const char* name : {"account", "user", "partition", "namespace"}) {
    ASSERT_TRUE(ParseGrouping(name, &g).ok());
    EXPECT_EQ(GroupingLabel(g), name);
  }
  Status status = ParseGrouping("team", &g);
  EXPECT_NE(status.message().find("account, user, partition or namespace"), std::string::npos);
}

TEST(ChargebackPlanTest, WindowsTileTheRangeExactlyInBoundedBatches) {
  // 30 days of hourly windows, a week per query: 5 batches (4 x 168 + 48), no remainder.
  TimeRange month;
  ASSERT_TRUE(ParseMonth("2026-11", &month).ok());
  std::vector<WindowBatch> batches = PlanWindows(month, 3600, 168);
  ASSERT_EQ(batches.size(), 5u);
  double expected_start = month.from;
  int windows = 0;
  for (const WindowBatch& b : batches) {
    EXPECT_EQ(b.first_end - b.step, expected_start);
    expected_start = b.last_end;
    windows += b.Windows();
    EXPECT_LE(b.Windows(), 168);
  }
  EXPECT_EQ(windows, 720);
  EXPECT_EQ(batches.back().last_end, month.to);

  // 2.5 windows: two whole ones and a half-window at the end.
  batches = PlanWindows({1000, 1000 + 9000}, 3600, 168);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].first_end, 4600);
  EXPECT_EQ(batches[0].last_end, 8200);
  EXPECT_EQ(batches[0].Windows(), 2);
  EXPECT_EQ(batches[1].first_end, 10000);
  EXPECT_EQ(batches[1].last_end, 10000);
  EXPECT_EQ(batches[1].step, 1800);

  // Shorter than one window: one window of the whole range.
  batches = PlanWindows({0, 600}, 3600, 168);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].step, 600);
  EXPECT_TRUE(PlanWindows({10, 10}, 3600, 168).empty());
}

TEST(ChargebackQueryTest, WindowRangeIsOneMillisecondShortSoBoundarySamplesCountOnce) {
  const std::string q =
      ChargebackQuery(ChargebackFigure::kAllocatedSamples, ChargebackGrouping::kAccount, 3600, 30, "");
  EXPECT_NE(q.find("count_over_time(gpuscope_gpu_allocation_info{GPU_I_ID=\"\",hpc_job!=\"\"}[3599999ms])"),
            std::string::npos)
      << q;
  EXPECT_NE(q.find("sum by (account, modelName)"), std::string::npos) << q;
  EXPECT_NE(q.find("group_left (account)"), std::string::npos) << q;
  // Allocations whose job has no info are kept (group "") rather than dropped by the join.
  EXPECT_NE(q.find("unless on (cluster, hpc_job)"), std::string::npos) << q;
}

TEST(ChargebackQueryTest, SelectorReachesEveryRawSeries) {
  for (ChargebackGrouping g : {ChargebackGrouping::kUser, ChargebackGrouping::kNamespace}) {
    for (ChargebackFigure f : kChargebackFigures) {
      const std::string q = ChargebackQuery(f, g, 600, 30, "cluster=\"a\"");
      size_t selectors = 0, series = 0;
      for (size_t at = q.find("{"); at != std::string::npos; at = q.find("{", at + 1)) ++series;
      for (size_t at = q.find(",cluster=\"a\"}"); at != std::string::npos;
           at = q.find(",cluster=\"a\"}", at + 1)) {
        ++selectors;
      }
      EXPECT_GT(series, 0u);
      EXPECT_EQ(selectors, series) << q;
      EXPECT_NE(q.find("599999ms"), std::string::npos) << q;
    }
  }
}

TEST(ChargebackQueryTest, NamespaceSplitsTimeSlicedReplicasAndUsesThePodAllocation) {
  const std::string q =
      ChargebackQuery(ChargebackFigure::kAllocatedSamples, ChargebackGrouping::kNamespace, 3600, 30, "");
  EXPECT_NE(q.find("gpuscope_k8s_gpu_allocation_info{GPU_I_ID=\"\",shared=\"true\"}"), std::string::npos)
      << q;
  EXPECT_NE(q.find("shared!=\"true\""), std::string::npos) << q;
  EXPECT_NE(q.find("sum by (namespace, modelName)"), std::string::npos) << q;
  EXPECT_EQ(q.find("gpuscope_job_info"), std::string::npos) << q;
}

TEST(ChargebackQueryTest, NamespaceJoinsEachScrapeToItsPodsWithOneUtilisationPerGpu) {
  const std::string q =
      ChargebackQuery(ChargebackFigure::kUsedSamples, ChargebackGrouping::kNamespace, 3600, 30, "");
  // A subquery stepping by the scrape interval, each step reading the one sample before it.
  EXPECT_NE(q.find("[3599999ms:30000ms]"), std::string::npos) << q;
  EXPECT_NE(q.find("last_over_time(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=\"\"}[29999ms])"), std::string::npos) << q;
  // The agent copies a shared GPU's series per pod: the join needs one value per GPU.
  EXPECT_NE(q.find("max by (instance, UUID) (last_over_time(DCGM_FI_DEV_GPU_UTIL"), std::string::npos) << q;
}

TEST(ChargebackQueryTest, EnergyReadsTheCounterAcrossTheWindowStartAndFallsBackToIncreaseOnResets) {
  const std::string q =
      ChargebackQuery(ChargebackFigure::kEnergyJoules, ChargebackGrouping::kAccount, 600, 30, "");
  const std::string e = "gpuscope_gpu_energy_joules_total{GPU_I_ID=\"\",hpc_job!=\"\"}";
  EXPECT_NE(
      q.find("last_over_time(" + e + "[599999ms]) - last_over_time(" + e + "[3600000ms] offset 600000ms)"),
      std::string::npos)
      << q;
  EXPECT_NE(q.find("unless resets(" + e + "[4199999ms]) > 0) or increase(" + e + "[599999ms])"),
            std::string::npos)
      << q;
}

PromSeries Series(std::map<std::string, std::string> labels, std::vector<std::pair<double, double>> points) {
  PromSeries s;
  s.labels = std::move(labels);
  s.points = std::move(points);
  return s;
}

TEST(ChargebackSumsTest, HoursEnergyAndCostAddUpPerGroupAcrossModelsAndWindows) {
  Usage usage;
  const std::string h100 = "NVIDIA H100 80GB HBM3", a100 = "NVIDIA A100-SXM4-80GB";
  // physics: 240 + 120 samples of H100 (3 GPU-hours at 30 s), 120 of A100 (1 GPU-hour).
  AddAnswer(ChargebackFigure::kAllocatedSamples, "account",
            {Series({{"account", "physics"}, {"modelName", h100}}, {{3600, 240}, {7200, 120}}),
             Series({{"account", "physics"}, {"modelName", a100}}, {{3600, 120}}),
             Series({{"account", "bio"}, {"modelName", h100}}, {{3600, 60}})},
            &usage);
  AddAnswer(ChargebackFigure::kUsedSamples, "account",
            {Series({{"account", "physics"}, {"modelName", h100}}, {{3600, 180}, {7200, 90}})}, &usage);
  AddAnswer(ChargebackFigure::kIdleSamples, "account",
            {Series({{"account", "physics"}, {"modelName", a100}}, {{3600, 120}})}, &usage);
  AddAnswer(ChargebackFigure::kEnergyJoules, "account",
            {Series({{"account", "physics"}, {"modelName", h100}}, {{3600, 3.6e6}, {7200, 7.2e6}}),
             Series({{"account", "bio"}, {"modelName", h100}}, {{3600, 1.8e6}})},
            &usage);
  CostTable costs;
  ASSERT_TRUE(ParseCostTable(kCosts, &costs).ok());
  std::vector<ChargebackRow> rows = SummariseUsage(usage, 30, costs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].group, "physics");
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours_allocated, 4.0);
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours_used, 2.25);
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours_idle, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].energy_kwh, 3.0);
  ASSERT_TRUE(rows[0].cost.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].cost, 3 * 4.0 + 3.0 * 0.25 + 1 * 2.0);
  EXPECT_EQ(rows[1].group, "bio");
  EXPECT_DOUBLE_EQ(rows[1].gpu_hours_allocated, 0.5);
  EXPECT_DOUBLE_EQ(*rows[1].cost, 0.5 * 4.0 + 0.5 * 0.25);
}

TEST(ChargebackSumsTest, AModelMissingFromTheCostTableLeavesTheCostEmptyAndIsNamed) {
  Usage usage;
  AddAnswer(ChargebackFigure::kAllocatedSamples, "user",
            {Series({{"user", "ann"}, {"modelName", "NVIDIA H200"}}, {{3600, 120}}),
             Series({{"user", "ann"}, {"modelName", "NVIDIA A100-SXM4-80GB"}}, {{3600, 120}})},
            &usage);
  CostTable costs;
  ASSERT_TRUE(ParseCostTable(kCosts, &costs).ok());
  std::vector<ChargebackRow> rows = SummariseUsage(usage, 30, costs);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].cost.has_value());
  EXPECT_EQ(rows[0].unpriced_models, std::vector<std::string>{"NVIDIA H200"});
  Table table = ChargebackTable(rows, ChargebackGrouping::kUser, costs.currency, false, false);
  nlohmann::json json = nlohmann::json::parse(RenderTableJson(table));
  ASSERT_EQ(json.size(), 1u);
  EXPECT_TRUE(json[0]["cost_EUR"].is_null());
  EXPECT_EQ(json[0]["unpriced_models"], "NVIDIA H200");
  EXPECT_EQ(json[0]["gpu_hours_allocated"], 2.0);
}

TEST(ChargebackTableTest, TextEndsWithATotalAndCsvHoldsOnlyTheGroups) {
  ChargebackRow a{"physics", 4, 2.25, 1, 3, 14.75, {"H100"}, {}, 4.5};
  ChargebackRow b{"", 0.5, 0, 0, 0.5, 2.25, {"H100"}, {}, std::nullopt};
  Table text = ChargebackTable({a, b}, ChargebackGrouping::kAccount, "USD", true, true);
  ASSERT_EQ(text.rows.size(), 3u);
  EXPECT_EQ(text.rows[1][0], "(none)");
  EXPECT_EQ(text.rows[2][0], "TOTAL");
  EXPECT_EQ(text.rows[2][1], "4.50");
  EXPECT_EQ(text.rows[2][5], "17.00");
  EXPECT_EQ(text.rows[0][8], "4.50");
  EXPECT_EQ(text.rows[0][9], "-11.1");  // (4 - 4.5) / 4.5
  Table csv = ChargebackTable({a, b}, ChargebackGrouping::kAccount, "USD", false, false);
  EXPECT_EQ(RenderTableCsv(csv),
            "account,gpu_hours_allocated,gpu_hours_used,gpu_hours_idle,energy_kwh,cost_USD,gpu_models,"
            "unpriced_models\r\nphysics,4.00,2.25,1.00,3.000,14.75,H100,\r\n(none),0.50,0.00,0.00,0.500,2.25,"
            "H100,\r\n");
}

TEST(ChargebackSacctTest, GpuHoursAreGpusTimesTheRunInsideTheRange) {
  TimeRange range;
  ASSERT_TRUE(ParseTimestamp("2026-11-03T00:00:00Z", &range.from).ok());
  ASSERT_TRUE(ParseTimestamp("2026-11-04T00:00:00Z", &range.to).ok());
  const std::string out =
      "101|physics|ann|gpu|billing=8,cpu=8,gres/"
      "gpu=4,mem=16G,node=1|2026-11-03T10:00:00|2026-11-03T12:00:00\n"
      "102|physics|bob|gpu|cpu=2,gres/gpu:h100=2,gres/gpu=2,node=1|2026-11-02T23:00:00|2026-11-03T01:00:00\n"
      "103|bio|cat|cpu|cpu=64,node=1|2026-11-03T10:00:00|2026-11-03T12:00:00\n"
      "104|bio|cat|gpu|gres/gpu=1|2026-11-03T22:00:00|Unknown\n"
      "105|bio|cat|gpu|gres/gpu=8|None|Unknown\n";
  std::map<std::string, double> hours;
  ASSERT_TRUE(ParseSacctGpuHours(out, ChargebackGrouping::kAccount, range, &hours).ok());
  EXPECT_DOUBLE_EQ(hours["physics"], 4 * 2 + 2 * 1);  // 102 counts only its hour inside the range
  EXPECT_DOUBLE_EQ(hours["bio"], 1 * 2);              // 103 holds no GPU; 104 runs to the range's end
  ASSERT_TRUE(ParseSacctGpuHours(out, ChargebackGrouping::kUser, range, &hours).ok());
  EXPECT_DOUBLE_EQ(hours["bob"], 2);
  Status bad = ParseSacctGpuHours("101|physics|ann\n", ChargebackGrouping::kAccount, range, &hours);
  EXPECT_NE(bad.message().find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
