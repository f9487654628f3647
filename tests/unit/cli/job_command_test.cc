#include "src/cli/job_command.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(JobCommand, SelectorNamesASlurmJobOrAPod) {
  EXPECT_EQ(JobSelector("4104"), "hpc_job=\"4104\"");
  EXPECT_EQ(JobSelector("a\"b\\c"), "hpc_job=\"a\\\"b\\\\c\"");
  EXPECT_TRUE(IsPodTarget("pod/research/nb-alice"));
  EXPECT_FALSE(IsPodTarget("4104"));
  EXPECT_EQ(JobSelector("pod/research/nb-alice"), "namespace=\"research\",pod=\"nb-alice\"");
}

TEST(JobCommand, CounterThereAtTheStartCountsFromItsFirstValue) {
  // A GPU's XID counter carried 2 from an earlier job; this job saw it rise at 130 and 150.
  CounterRise rise = CounterRiseDuring({{100, 2}, {110, 2}, {120, 2}, {130, 3}, {140, 3}, {150, 5}}, 100, 10);
  EXPECT_EQ(rise.first_time, 130);
  EXPECT_EQ(rise.count, 3);
}

TEST(JobCommand, CounterCreatedDuringTheJobCountsFromZero) {
  CounterRise rise = CounterRiseDuring({{160, 1}, {170, 1}, {180, 2}}, 100, 10);
  EXPECT_EQ(rise.first_time, 160);
  EXPECT_EQ(rise.count, 2);
}

TEST(JobCommand, CounterResetCountsTheNewValueAndAFlatCounterNeverRose) {
  CounterRise reset = CounterRiseDuring({{100, 5}, {110, 5}, {120, 1}, {130, 2}}, 100, 10);
  EXPECT_EQ(reset.first_time, 120);
  EXPECT_EQ(reset.count, 2);
  CounterRise flat = CounterRiseDuring({{100, 7}, {110, 7}}, 100, 10);
  EXPECT_EQ(flat.first_time, -1);
  EXPECT_EQ(flat.count, 0);
  EXPECT_EQ(CounterRiseDuring({}, 100, 10).first_time, -1);
}

}  // namespace
}  // namespace gpuscope
