// The fleet's job mix: it keeps the idle share free, churns job ids as jobs end, is deterministic, and
// writes records the agent's own mapping parser accepts.
#include "sim/fleet/job_mix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "src/parsers/mapping_files.h"

namespace gpuscope::fleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

FleetJobs Jobs(int idle_percent, std::vector<int> sizes, seconds min, seconds max) {
  FleetJobs jobs;
  jobs.idle_nodes_percent = idle_percent;
  jobs.sizes = std::move(sizes);
  jobs.min_duration = min;
  jobs.max_duration = max;
  jobs.users = 5;
  jobs.accounts = {"physics", "climate"};
  return jobs;
}

int BusyNodes(const JobMix& mix, int nodes) {
  int busy = 0;
  for (int n = 0; n < nodes; ++n) busy += mix.JobOn(n) != nullptr;
  return busy;
}

TEST(JobMix, FillsAllButTheIdleShareAndEveryNodeHasAtMostOneJob) {
  JobMix mix(Jobs(10, {1, 2, 4, 8}, seconds(60), seconds(600)), 100, 7);
  const std::vector<int> changed = mix.Advance(milliseconds(0));
  EXPECT_EQ(BusyNodes(mix, 100), 90);
  EXPECT_EQ(changed.size(), 90u);
  std::set<uint64_t> ids;
  for (int n = 0; n < 100; ++n) {
    if (const FleetJob* job = mix.JobOn(n)) {
      ids.insert(job->id);
      EXPECT_THAT(job->nodes, ::testing::Contains(n));
      EXPECT_LE(job->nodes.size(), 8u);
      EXPECT_THAT(job->account, ::testing::AnyOf("physics", "climate"));
      EXPECT_GE(job->end, seconds(60));
      EXPECT_LE(job->end, seconds(600));
    }
  }
  EXPECT_EQ(ids.size(), mix.running());
  EXPECT_EQ(mix.started(), mix.running());
  EXPECT_EQ(mix.JobOn(-1), nullptr);
  EXPECT_EQ(mix.JobOn(100), nullptr);
}

TEST(JobMix, JobsEndWhenDueAndNewIdsTakeTheirNodes) {
  JobMix mix(Jobs(0, {2}, seconds(10), seconds(20)), 6, 1);
  mix.Advance(milliseconds(0));
  ASSERT_EQ(mix.running(), 3u);
  std::set<uint64_t> first;
  for (int n = 0; n < 6; ++n) first.insert(mix.JobOn(n)->id);
  EXPECT_TRUE(mix.Advance(seconds(5)).empty());  // nothing due yet
  const std::vector<int> changed = mix.Advance(seconds(21));
  EXPECT_EQ(changed.size(), 6u);
  for (int n = 0; n < 6; ++n) {
    ASSERT_NE(mix.JobOn(n), nullptr);
    EXPECT_EQ(first.count(mix.JobOn(n)->id), 0u) << "node " << n << " kept an ended job";
  }
  EXPECT_EQ(mix.started(), 6u);
}

TEST(JobMix, AJobLargerThanTheFreeNodesShrinksToThem) {
  JobMix mix(Jobs(0, {16}, seconds(10), seconds(10)), 5, 1);
  mix.Advance(milliseconds(0));
  ASSERT_EQ(mix.running(), 1u);
  EXPECT_EQ(mix.JobOn(0)->nodes.size(), 5u);
}

TEST(JobMix, SameSeedSameJobs) {
  JobMix a(Jobs(10, {1, 2, 4}, seconds(5), seconds(50)), 40, 3);
  JobMix b(Jobs(10, {1, 2, 4}, seconds(5), seconds(50)), 40, 3);
  for (int t : {0, 10, 30, 60, 90}) {
    EXPECT_EQ(a.Advance(seconds(t)), b.Advance(seconds(t)));
    for (int n = 0; n < 40; ++n) {
      const FleetJob* x = a.JobOn(n);
      const FleetJob* y = b.JobOn(n);
      ASSERT_EQ(x == nullptr, y == nullptr);
      if (x != nullptr) {
        EXPECT_EQ(x->id, y->id);
        EXPECT_EQ(x->user, y->user);
        EXPECT_EQ(x->end, y->end);
      }
    }
  }
}

TEST(JobMix, TheRecordIsWhatTheAgentsMappingParserReadsAsTheJob) {
  FleetJob job;
  job.id = 100042;
  job.nodes = {3};
  job.user = "user07";
  job.uid = 20007;
  job.account = "climate";
  job.name = "train";
  const GpuscopeRecord record = ParseGpuscopeRecord(JobRecord(job, "gpu", 4), "100042");
  ASSERT_EQ(record.error, MappingError::kNone);
  EXPECT_EQ(record.job.job_id, "100042");
  EXPECT_EQ(record.job.user, "user07");
  EXPECT_EQ(record.job.account, "climate");
  EXPECT_EQ(record.job.partition, "gpu");
  EXPECT_EQ(record.job.gpus, (std::vector<std::string>{"0", "1", "2", "3"}));
}

}  // namespace
}  // namespace gpuscope::fleet
