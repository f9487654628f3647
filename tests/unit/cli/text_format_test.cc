#include "src/cli/text_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuscope {
namespace {

TEST(TextFormatTest, MonthCoversTheCalendarMonthInUtc) {
  TimeRange range;
  ASSERT_TRUE(ParseMonth("2026-11", &range).ok());
  EXPECT_EQ(FormatUtc(range.from), "2026-11-01T00:00:00Z");
  EXPECT_EQ(FormatUtc(range.to), "2026-12-01T00:00:00Z");
  EXPECT_EQ(range.to - range.from, 30 * 86400);
  ASSERT_TRUE(ParseMonth("2026-12", &range).ok());
  EXPECT_EQ(FormatUtc(range.to), "2027-01-01T00:00:00Z");
  ASSERT_TRUE(ParseMonth("2028-02", &range).ok());
  EXPECT_EQ(range.to - range.from, 29 * 86400);  // leap year
  for (const char* bad : {"2026-13", "2026-00", "2026-1", "26-11", "2026/11", "", "2026-11-01"}) {
    EXPECT_FALSE(ParseMonth(bad, &range).ok()) << bad;
  }
}

TEST(TextFormatTest, TimestampsAreDatesRfc3339OrUnixSeconds) {
  double t = 0;
  ASSERT_TRUE(ParseTimestamp("2026-11-03", &t).ok());
  EXPECT_EQ(FormatUtc(t), "2026-11-03T00:00:00Z");
  ASSERT_TRUE(ParseTimestamp("2026-11-03T12:30:15Z", &t).ok());
  EXPECT_EQ(FormatUtc(t), "2026-11-03T12:30:15Z");
  ASSERT_TRUE(ParseTimestamp("2026-11-03T12:30:00+01:00", &t).ok());
  EXPECT_EQ(FormatUtc(t), "2026-11-03T11:30:00Z");
  ASSERT_TRUE(ParseTimestamp("2026-11-03T00:30:00-02:30", &t).ok());
  EXPECT_EQ(FormatUtc(t), "2026-11-03T03:00:00Z");
  ASSERT_TRUE(ParseTimestamp("2026-11-03T12:30:15.5Z", &t).ok());
  EXPECT_DOUBLE_EQ(t - std::floor(t), 0.5);
  ASSERT_TRUE(ParseTimestamp("1793750400", &t).ok());
  EXPECT_EQ(t, 1793750400.0);
  for (const char* bad : {"2026-11-31", "2026-02-29", "2026-11-03T12:30:00", "2026-11-03T25:00:00Z",
                          "yesterday", "-5", "2026-11-03T12:30Zx", ""}) {
    EXPECT_FALSE(ParseTimestamp(bad, &t).ok()) << bad;
  }
}

TEST(TextFormatTest, TimestampsInAnyZoneMeanTheSameInstant) {
  double t = 0;
  ASSERT_TRUE(ParseTimestamp("1793664000", &t).ok());
  EXPECT_EQ(t, 1793664000);
  ASSERT_TRUE(ParseTimestamp("2026-11-03", &t).ok());
  EXPECT_EQ(t, 1793664000);  // midnight UTC
  ASSERT_TRUE(ParseTimestamp("2026-11-03T14:02:00Z", &t).ok());
  EXPECT_EQ(t, 1793664000 + 14 * 3600 + 120);
  ASSERT_TRUE(ParseTimestamp("2026-11-03T15:02:00+01:00", &t).ok());
  EXPECT_EQ(t, 1793664000 + 14 * 3600 + 120);
  ASSERT_TRUE(ParseTimestamp("2026-11-03T09:02:00-05:00", &t).ok());
  EXPECT_EQ(t, 1793664000 + 14 * 3600 + 120);
}

TEST(TextFormatTest, MalformedTimesAreRefusedAndLeaveTheValueAlone) {
  double t = 42;
  for (const char* bad : {"", "yesterday", "2026-13-01", "2026-02-30", "2026-11-03T25:00:00Z",
                          "2026-11-03T14:02:00", "2026-11-3", "2026-11-03Z", "2026-11-03T14:02:00+1"}) {
    EXPECT_FALSE(ParseTimestamp(bad, &t).ok()) << bad;
  }
  EXPECT_EQ(t, 42);
}

TEST(TextFormatTest, FormatUtcTakesAStrftimeFormatAndDropsFractions) {
  EXPECT_EQ(FormatUtc(1793664000 + 14 * 3600 + 120 + 0.9), "2026-11-03T14:02:00Z");
  EXPECT_EQ(FormatUtc(1793664000 + 14 * 3600 + 120, "%H:%M UTC"), "14:02 UTC");
}

TEST(TextFormatTest, FixedAndFiniteNumbers) {
  EXPECT_EQ(FormatFixed(12.345, 2), "12.35");
  EXPECT_EQ(FormatFixed(80, 0), "80");
  double v = 0;
  EXPECT_TRUE(ParseFiniteNumber("0.25", &v));
  EXPECT_EQ(v, 0.25);
  for (const char* bad : {"", "1x", "inf", "nan", " 1", "1e999"})
    EXPECT_FALSE(ParseFiniteNumber(bad, &v)) << bad;
}

}  // namespace
}  // namespace gpuscope
