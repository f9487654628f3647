#include "src/cli/job_series.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace gpuscope {
namespace {

using testing::HasSubstr;
using testing::Not;

JobSeries TwoGpus() {
  JobSeries series;
  series.start = 1764662400;  // 2025-12-02 08:00:00 UTC
  series.step = 10;
  for (int i = 0; i < 6; ++i) series.times.push_back(series.start + i * series.step);
  SeriesPanel busy{"SM active", "%", "expr", 100, {}};
  busy.lines.push_back({"node-a/0", {10, 20, 30, 40, 50, 60}});
  busy.lines.push_back({"node-a/1", {0, 0, std::nan(""), 0, 0, 0}});
  series.panels.push_back(busy);
  return series;
}

TEST(SeriesStep, BoundsThePointsOfALife) {
  EXPECT_EQ(SeriesStep(0, 299, 300), 1);
  EXPECT_EQ(SeriesStep(0, 3600, 300), 13);  // ceil(3600 / 299)
  EXPECT_LE(3600 / SeriesStep(0, 3600, 300) + 1, 300);
  EXPECT_EQ(SeriesStep(0, 7 * 86400, 300), std::ceil(7 * 86400 / 299.0));
  EXPECT_EQ(SeriesStep(100, 100, 300), 1);  // a single sample
}

TEST(SeriesExpr, BareSelectorForShortStepsMeanOverTheStepForLongOnes) {
  EXPECT_EQ(SeriesExpr("DCGM_FI_DEV_POWER_USAGE", "{hpc_job=\"7\"}", 5, 1),
            "DCGM_FI_DEV_POWER_USAGE{hpc_job=\"7\"}");
  EXPECT_EQ(SeriesExpr("DCGM_FI_PROF_SM_ACTIVE", "{hpc_job=\"7\"}", 60, 100),
            "avg_over_time(DCGM_FI_PROF_SM_ACTIVE{hpc_job=\"7\"}[60s]) * 100");
}

TEST(RenderOverTime, PlainGivesEachGpusMinMeanMaxAndLastWithoutCharts) {
  const std::string text = RenderOverTime(TwoGpus(), ChartStyle::kPlain, 80);
  EXPECT_THAT(text,
              HasSubstr("Over time (2025-12-02 08:00:00 to 2025-12-02 08:00:50 UTC, a point every 10 s)\n"));
  EXPECT_THAT(text, HasSubstr("  SM active (%, scale 0..100)\n"));
  EXPECT_THAT(text, HasSubstr("    node-a/0  min 10  mean 35  max 60  last 60\n"));
  EXPECT_THAT(text, HasSubstr("    node-a/1  min 0.0  mean 0.0  max 0.0  last 0.0\n"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b[")));
}

TEST(RenderOverTime, AsciiDrawsASparklineAndAMeanBarPerGpuWithinTheColumns) {
  const std::string text = RenderOverTime(TwoGpus(), ChartStyle::kAscii, 80);
  // node-a/0 climbs 10..60 % (levels 0, 1, 2, 3, 4, 4); its mean 35 % fills 4 of 10 bar cells (3.5 rounded).
  EXPECT_THAT(text, HasSubstr("    node-a/0  \x1b[36m_.-=++\x1b[0m  \x1b[32m####......\x1b[0m 35\n"));
  EXPECT_THAT(text, HasSubstr("    node-a/1  \x1b[36m__ ___\x1b[0m"));
  for (size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    EXPECT_LE(DisplayWidth(text.substr(begin, end - begin)), 80);
  }
}

TEST(RenderOverTime, LongSeriesAreResampledToFitANarrowTerminal) {
  JobSeries series = TwoGpus();
  series.panels[0].lines.resize(1);
  series.panels[0].lines[0].values.assign(300, 50);
  series.times.clear();
  for (int i = 0; i < 300; ++i) series.times.push_back(series.start + i * series.step);
  const std::string text = RenderOverTime(series, ChartStyle::kUnicode, 60);
  const std::string row = text.substr(text.find("    node-a/0"));
  EXPECT_EQ(DisplayWidth(row.substr(0, row.find('\n'))), 59);  // one column spare: no wrap at the edge
  EXPECT_THAT(text, HasSubstr("\u2585\u2585\u2585"));
}

TEST(RenderOverTime, NothingWithoutPanels) {
  EXPECT_EQ(RenderOverTime(JobSeries(), ChartStyle::kUnicode, 80), "");
}

}  // namespace
}  // namespace gpuscope
