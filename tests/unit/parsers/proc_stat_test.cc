#include "src/parsers/proc_stat.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace gpuscope {
namespace {

TEST(ProcStatTest, StartTimeIsField22) {
  EXPECT_EQ(ParseProcStatStartTime("1001 (python3) S 1 1001 1001 0 -1 4194560 12345 0 12 0 5000 300 0 0 20 0 "
                                   "24 0 8812345 90000000000 400000 0 0\n"),
            8812345u);
}

TEST(ProcStatTest, CommandNameWithSpacesAndParenthesesDoesNotShiftFields) {
  EXPECT_EQ(ParseProcStatStartTime("7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n"), 4242u);
}

TEST(ProcStatTest, MalformedStatGivesNothing) {
  EXPECT_FALSE(ParseProcStatStartTime("").has_value());
  EXPECT_FALSE(ParseProcStatStartTime("1 (x) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcStatStartTime("1 x S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99").has_value());
  EXPECT_FALSE(ParseProcStatStartTime("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -99 0").has_value());
}

TEST(ProcStatTest, SplitNumbersFieldsAsProc5DoesFromTheState) {
  const auto fields = SplitProcStat("42 (tmux: server) S 1 42 42 0 -1 4194560 7 0 0 0 15 3 0 0 20 0\n");
  ASSERT_TRUE(fields.has_value());
  ASSERT_GE(fields->size(), 13u);
  EXPECT_EQ((*fields)[0], "S");
  EXPECT_EQ(ProcStatNumber(*fields, 4), 1u);    // ppid
  EXPECT_EQ(ProcStatNumber(*fields, 14), 15u);  // utime
  EXPECT_EQ(ProcStatNumber(*fields, 15), 3u);   // stime
}

TEST(ProcStatTest, SplitStopsAtTheEndOfTheLineAndSkipsRunsOfBlanks) {
  const auto fields = SplitProcStat("1 (x)  R\t 5\n6 7\n");
  ASSERT_TRUE(fields.has_value());
  EXPECT_EQ(*fields, (std::vector<std::string_view>{"R", "5"}));
}

TEST(ProcStatTest, FieldsBeyondTheLineOrNotNumbersGiveNothing) {
  const auto fields = SplitProcStat("1 (x) S 1 -1 abc");
  ASSERT_TRUE(fields.has_value());
  EXPECT_FALSE(ProcStatNumber(*fields, 2).has_value());  // the command name is not a field here
  EXPECT_FALSE(ProcStatNumber(*fields, 3).has_value());  // "S"
  EXPECT_FALSE(ProcStatNumber(*fields, 5).has_value());  // -1
  EXPECT_FALSE(ProcStatNumber(*fields, 6).has_value());  // abc
  EXPECT_FALSE(ProcStatNumber(*fields, 7).has_value());  // past the end
}

TEST(ProcStatTest, SplitWithoutACommandNameGivesNothing) {
  EXPECT_FALSE(SplitProcStat("").has_value());
  EXPECT_FALSE(SplitProcStat("1 x S 1").has_value());
  EXPECT_FALSE(SplitProcStat("1 )x( S 1").has_value());
  EXPECT_TRUE(SplitProcStat("1 () S").has_value());
}

TEST(ProcStatTest, RealUidIsTheFirstNumberOfTheUidLine) {
  EXPECT_EQ(ParseProcStatusUid("Name:\tpython3\nUid:\t1001\t0\t0\t0\nGid:\t5\t5\t5\t5\n"), 1001u);
}

TEST(ProcStatTest, MissingOrMalformedUidGivesNothing) {
  EXPECT_FALSE(ParseProcStatusUid("Name:\tx\nGid:\t5\t5\t5\t5\n").has_value());
  EXPECT_FALSE(ParseProcStatusUid("Uid:\tabc\n").has_value());
  EXPECT_FALSE(ParseProcStatusUid("Uid:\t99999999999\n").has_value());
  EXPECT_FALSE(ParseProcStatusUid("").has_value());
}

}  // namespace
}  // namespace gpuscope
