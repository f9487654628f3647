// The JobTable merges what its sources say into one atomically published view.
#include "src/node/job_table.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(JobTable, StartsEmptyAndPublishesVersionedViews) {
  JobTable table;
  auto empty = table.Current();
  EXPECT_TRUE(empty->allocations.empty());
  table.Update(AttributionSource::kMapping, {{{"0", "100", "", ""}}, {}});
  auto first = table.Current();
  EXPECT_GT(first->version, empty->version);
  ASSERT_EQ(first->allocations.size(), 1u);
  ASSERT_NE(first->Job("100"), nullptr) << "every allocated job has an entry";
  EXPECT_TRUE(empty->allocations.empty()) << "an old view never changes";
}

TEST(JobTable, ASourcesUpdateReplacesItsPreviousViewSoEndedJobsVanish) {
  JobTable table;
  table.Update(AttributionSource::kMapping, {{{"0", "100", "", ""}, {"1", "100", "", ""}}, {}});
  table.Update(AttributionSource::kMapping, {{{"1", "101", "", ""}}, {}});
  auto view = table.Current();
  EXPECT_TRUE(view->JobsOn("0").empty());
  ASSERT_EQ(view->JobsOn("1").size(), 1u);
  EXPECT_EQ(view->JobsOn("1")[0]->job_id, "101");
  EXPECT_EQ(view->Job("100"), nullptr);
}

TEST(JobTable, SeveralJobsOnOneGpuAndMigInstancesAreKeptApart) {
  JobTable table;
  table.Update(
      AttributionSource::kMapping,
      {{{"2", "201", "", ""}, {"2", "200", "", ""}, {"3.1", "300", "", ""}, {"3.2", "301", "", ""}}, {}});
  auto view = table.Current();
  auto on2 = view->JobsOn("2");
  ASSERT_EQ(on2.size(), 2u);
  EXPECT_EQ(on2[0]->job_id, "200");
  EXPECT_EQ(on2[1]->job_id, "201");
  EXPECT_EQ(view->JobsOn("3.1")[0]->job_id, "300");
  EXPECT_EQ(view->JobsOn("3.2")[0]->job_id, "301");
  EXPECT_TRUE(view->JobsOn("3").empty());
}

TEST(JobTable, MappingRecordWinsAndOtherSourcesFillBlanks) {
  JobTable table;
  table.Update(AttributionSource::kSlurm,
               {{}, {{"100", "slurm-user", "1", "slurm-acct", "batch", "n", "", ""}}});
  table.Update(AttributionSource::kProc,
               {{{"0", "100", "3", "0"}}, {{"100", "", "", "", "gpu", "", "", ""}}});
  table.Update(AttributionSource::kMapping,
               {{{"0", "100", "", ""}}, {{"100", "alice", "1001", "ml", "", "", "", ""}}});
  auto view = table.Current();
  const JobInfo* job = view->Job("100");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->user, "alice");
  EXPECT_EQ(job->uid, "1001");
  EXPECT_EQ(job->account, "ml");
  EXPECT_EQ(job->partition, "gpu") << "proc fills what the mapping record left blank before slurm";
  EXPECT_EQ(job->job_name, "n");
  ASSERT_EQ(view->allocations.size(), 1u) << "one allocation per (gpu, job) across sources";
  EXPECT_EQ(view->allocations[0].rank, "3");
  EXPECT_EQ(view->allocations[0].step_id, "0");
}

TEST(JobTable, IgnoresEntriesWithoutJobOrGpu) {
  JobTable table;
  table.Update(AttributionSource::kMapping,
               {{{"", "1", "", ""}, {"0", "", "", ""}}, {{"", "u", "", "", "", "", "", ""}}});
  auto view = table.Current();
  EXPECT_TRUE(view->allocations.empty());
  EXPECT_TRUE(view->jobs.empty());
}

}  // namespace
}  // namespace gpuscope
