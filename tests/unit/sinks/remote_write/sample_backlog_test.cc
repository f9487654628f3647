// SampleBacklog: the samples of each URL's pending records, told from the count of those records.
#include "src/sinks/remote_write/sample_backlog.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(SampleBacklog, PendingRecordsAreTheNewestAndTheirSamplesAddUp) {
  SampleBacklog backlog;
  backlog.Appended(10);
  backlog.Appended(20);
  backlog.Appended(30);
  EXPECT_EQ(backlog.Pending(0), 0u);
  EXPECT_EQ(backlog.Pending(1), 30u);
  EXPECT_EQ(backlog.Pending(2), 50u);
  EXPECT_EQ(backlog.Pending(3), 60u);
  EXPECT_EQ(backlog.Pending(9), 60u);  // never more than it knows of
}

TEST(SampleBacklog, ForgettingTheOldestKeepsTheNewestCounts) {
  SampleBacklog backlog;
  for (uint64_t s = 1; s <= 5; ++s) backlog.Appended(s);
  backlog.Keep(2);
  EXPECT_EQ(backlog.records(), 2u);
  EXPECT_EQ(backlog.Pending(2), 9u);  // 4 + 5
  EXPECT_EQ(backlog.Pending(5), 9u);
  backlog.Appended(6);
  EXPECT_EQ(backlog.Pending(3), 15u);
  backlog.Keep(0);
  EXPECT_EQ(backlog.Pending(1), 0u);
  backlog.Appended(7);
  EXPECT_EQ(backlog.Pending(1), 7u);
}

}  // namespace
}  // namespace gpuscope
