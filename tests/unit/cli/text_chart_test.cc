#include "src/cli/text_chart.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

TEST(ChartStyle, PlainWithoutATerminalOrWithNoColor) {
  EXPECT_EQ(ChooseChartStyle(false, true, false), ChartStyle::kPlain);
  EXPECT_EQ(ChooseChartStyle(true, true, true), ChartStyle::kPlain);
  EXPECT_EQ(ChooseChartStyle(false, false, true), ChartStyle::kPlain);
}

TEST(ChartStyle, UnicodeOnAUtf8TerminalAsciiOnAnyOther) {
  EXPECT_EQ(ChooseChartStyle(true, true, false), ChartStyle::kUnicode);
  EXPECT_EQ(ChooseChartStyle(true, false, false), ChartStyle::kAscii);
}

TEST(ChartStyle, LocaleIsUtf8TakesTheFirstSetOfLcAllLcCtypeLang) {
  EXPECT_TRUE(LocaleIsUtf8("", "", "en_US.UTF-8"));
  EXPECT_TRUE(LocaleIsUtf8("", "C.utf8", "C"));
  EXPECT_FALSE(LocaleIsUtf8("C", "en_US.UTF-8", "en_US.UTF-8"));  // LC_ALL wins
  EXPECT_FALSE(LocaleIsUtf8("", "", ""));
  EXPECT_FALSE(LocaleIsUtf8("", "", "POSIX"));
  EXPECT_FALSE(LocaleIsUtf8("", "", "de_DE.ISO-8859-1"));
}

TEST(ChartStyle, ColumnsFromTheWindowElseColumnsEnvElse80) {
  EXPECT_EQ(ChooseColumns(132, "40"), 132);
  EXPECT_EQ(ChooseColumns(0, "40"), 40);
  EXPECT_EQ(ChooseColumns(0, "wide"), 80);
  EXPECT_EQ(ChooseColumns(0, "-3"), 80);
  EXPECT_EQ(ChooseColumns(0, ""), 80);
}

TEST(ChartStyle, DetectTerminalOnAPipeIsPlain) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const Terminal terminal = DetectTerminal(fds[1], false);
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(terminal.is_tty);
  EXPECT_EQ(terminal.style, ChartStyle::kPlain);
  EXPECT_GT(terminal.columns, 0);
}

TEST(Bar, UnicodeFillsEighthsOfACellAndKeepsItsWidth) {
  EXPECT_EQ(Bar(0.5, 4, ChartStyle::kUnicode), "\u2588\u2588  ");
  EXPECT_EQ(Bar(1.0, 3, ChartStyle::kUnicode), "\u2588\u2588\u2588");
  EXPECT_EQ(Bar(0.0, 3, ChartStyle::kUnicode), "   ");
  // 0.3 of 4 cells = 9.6 eighths, rounded to 10: one full cell and a quarter (U+258E).
  EXPECT_EQ(Bar(0.3, 4, ChartStyle::kUnicode), "\u2588\u258e  ");
  EXPECT_EQ(DisplayWidth(Bar(0.37, 10, ChartStyle::kUnicode)), 10);
}

TEST(Bar, AsciiRoundsToWholeCells) {
  EXPECT_EQ(Bar(0.5, 8, ChartStyle::kAscii), "####....");
  EXPECT_EQ(Bar(0.3, 10, ChartStyle::kAscii), "###.......");
}

TEST(Bar, ClampsOutOfRangeAndNanAndDrawsNothingWhenPlain) {
  EXPECT_EQ(Bar(1.7, 4, ChartStyle::kAscii), "####");
  EXPECT_EQ(Bar(-1, 4, ChartStyle::kAscii), "....");
  EXPECT_EQ(Bar(std::nan(""), 4, ChartStyle::kAscii), "....");
  EXPECT_EQ(Bar(0.5, 8, ChartStyle::kPlain), "");
}

TEST(Sparkline, EightLevelsOverTheScale) {
  const std::vector<double> ramp = {0, 12.5, 25, 37.5, 50, 62.5, 75, 100};
  EXPECT_EQ(Sparkline(ramp, 0, 100, 8, ChartStyle::kUnicode),
            "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588");
  EXPECT_EQ(Sparkline(ramp, 0, 100, 8, ChartStyle::kAscii), "_.-=+*#@");
}

TEST(Sparkline, GapsAreSpacesAndValuesAreClamped) {
  EXPECT_EQ(Sparkline({0, std::nan(""), 150, -5}, 0, 100, 4, ChartStyle::kAscii), "_ @_");
}

TEST(Sparkline, ResampledToTheWidthByBucketMeans) {
  // 8 values into 4 cells: means 0, 0, 100, 100.
  EXPECT_EQ(Sparkline({0, 0, 0, 0, 100, 100, 100, 100}, 0, 100, 4, ChartStyle::kAscii), "__@@");
  EXPECT_EQ(Sparkline({1, 2, 3}, 0, 100, 40, ChartStyle::kAscii).size(), 3u);
  EXPECT_EQ(Sparkline({50, 50}, 0, 100, 10, ChartStyle::kPlain), "");
}

TEST(Resample, EveryValueLandsInOneBucketAndGapsStayGaps) {
  const std::vector<double> out = Resample({1, 3, 5, 7, 9, 11}, 3);
  EXPECT_THAT(out, testing::ElementsAre(2, 6, 10));
  const std::vector<double> gaps = Resample({std::nan(""), std::nan(""), 4, std::nan("")}, 2);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_TRUE(std::isnan(gaps[0]));
  EXPECT_EQ(gaps[1], 4);
  EXPECT_EQ(Resample({1, 2, 3, 4, 5, 6, 7}, 3).size(), 3u);
}

TEST(Colored, WrapsInAnsiColourExceptWhenPlain) {
  EXPECT_EQ(Colored("ab", "36", ChartStyle::kAscii), "\x1b[36mab\x1b[0m");
  EXPECT_EQ(Colored("ab", "36", ChartStyle::kPlain), "ab");
}

TEST(DisplayWidth, CountsCodePointsNotBytesOrEscapes) {
  EXPECT_EQ(DisplayWidth("\u2581\u2588x"), 3);
  EXPECT_EQ(DisplayWidth("\x1b[36mab\x1b[0m"), 2);
  EXPECT_EQ(DisplayWidth(""), 0);
}

}  // namespace
}  // namespace gpuscope
