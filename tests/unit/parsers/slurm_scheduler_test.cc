// The squeue / sinfo / sdiag / sshare parsers on real Slurm 22.05 output and on edge cases.
#include "src/parsers/slurm_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_SLURM_FIXTURES) + "/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_TRUE(in.good() || in.eof()) << name;
  return buffer.str();
}

TEST(SlurmSchedulerParsers, SqueueReadsEveryJobOfRealOutputWithArrayTasksOneByOne) {
  std::string text = ReadTestdata("squeue_22.05_drain.txt");
  SqueueJobs parsed = ParseSqueue(text);
  EXPECT_THAT(parsed.rejected, IsEmpty());
  ASSERT_EQ(parsed.jobs.size(), 7u);
  EXPECT_EQ(parsed.jobs[1].job_id, "3_0");
  EXPECT_EQ(parsed.jobs[0].state, "PENDING");
  EXPECT_EQ(parsed.jobs[0].partition, "debug");
  EXPECT_EQ(parsed.jobs[0].account, "(null)");
  EXPECT_EQ(parsed.jobs[0].user, "alice");
  EXPECT_EQ(parsed.jobs[0].gpus_per_node, 8);
  EXPECT_EQ(parsed.jobs[0].reason,
            "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions");
  EXPECT_EQ(parsed.jobs[5].reason, "JobHeldUser");
  EXPECT_EQ(parsed.jobs[5].gpus_per_node, 0);
  EXPECT_EQ(parsed.jobs[6].state, "RUNNING");
  EXPECT_EQ(parsed.jobs[6].nodes, 1u);
  EXPECT_EQ(parsed.jobs[6].gpus_per_node, 2);
}

TEST(SlurmSchedulerParsers, SqueueKeepsAPipeInsideTheLastFieldAndRejectsShortLines) {
  SqueueJobs parsed =
      ParseSqueue("1|PENDING|gpu|a|u|1|N/A|Reason with | a pipe\r\n2|RUNNING|gpu\n\n|||||||\n");
  ASSERT_EQ(parsed.jobs.size(), 1u);
  EXPECT_EQ(parsed.jobs[0].reason, "Reason with | a pipe");
  EXPECT_EQ(parsed.rejected.size(), 2u);
}

TEST(SlurmSchedulerParsers, TresPerNodeGpuCountsCoverEverySpelling) {
  EXPECT_EQ(GpusInTresPerNode("gres:gpu:2"), 2);
  EXPECT_EQ(GpusInTresPerNode("gres/gpu:2"), 2);
  EXPECT_EQ(GpusInTresPerNode("gres:gpu:h100:4"), 4);
  EXPECT_EQ(GpusInTresPerNode("gres:gpu:1,gres:nvme:1"), 1);
  EXPECT_EQ(GpusInTresPerNode("gres:gpu:a100:1,gres:gpu:v100:2"), 3);
  EXPECT_EQ(GpusInTresPerNode("N/A"), 0);
  EXPECT_EQ(GpusInTresPerNode("gres:gpu"), 0);
  EXPECT_EQ(GpusInTresPerNode(""), 0);
}

TEST(SlurmSchedulerParsers, GresGpuCountsIgnoreIndexListsAndOtherGres) {
  EXPECT_THAT(GpusInGres("gpu:8"), Optional(8.0));
  EXPECT_THAT(GpusInGres("gpu:h100:8(S:0-1)"), Optional(8.0));
  EXPECT_THAT(GpusInGres("gpu:2(IDX:0-1)"), Optional(2.0));
  EXPECT_THAT(GpusInGres("gpu:a100:2(IDX:0,2),gpu:v100:1(IDX:5)"), Optional(3.0));
  EXPECT_THAT(GpusInGres("gpu:h100:0(IDX:N/A)"), Optional(0.0));
  EXPECT_THAT(GpusInGres("gpu:(null):2(IDX:0,2)"), Optional(2.0));
  EXPECT_THAT(GpusInGres("nvme:1,gpu:4"), Optional(4.0));
  EXPECT_EQ(GpusInGres("(null)"), std::nullopt);
  EXPECT_EQ(GpusInGres("nvme:1"), std::nullopt);
  EXPECT_EQ(GpusInGres("gpu:lots"), std::nullopt);
}

TEST(SlurmSchedulerParsers, SinfoReadsRealDrainingNodeOncePerPartition) {
  std::string text = ReadTestdata("sinfo_22.05_drain.txt");
  SinfoNodes parsed = ParseSinfo(text);
  EXPECT_THAT(parsed.rejected, IsEmpty());
  ASSERT_EQ(parsed.nodes.size(), 2u);
  EXPECT_EQ(parsed.nodes[0].node, "vm");
  EXPECT_EQ(parsed.nodes[0].partition, "gpu");  // the default partition's '*' is stripped
  EXPECT_EQ(parsed.nodes[1].partition, "debug");
  EXPECT_EQ(parsed.nodes[0].state, "draining");
  EXPECT_TRUE(IsDrainState(parsed.nodes[0].state));
  EXPECT_EQ(parsed.nodes[0].reason, "test drain reason");
  EXPECT_EQ(parsed.nodes[0].gpus_total, 8);
  EXPECT_EQ(parsed.nodes[0].gpus_allocated, 2);
}

TEST(SlurmSchedulerParsers, SinfoReadsNoneReasonAsEmptyAndSplitsStateFlags) {
  SinfoNodes parsed = ParseSinfo(
      "n1|gpu|IDLE~|gpu:4|gpu:0|none\nn2|gpu|down*|gpu:4|gpu:0|Not responding\n"
      "n3|gpu|*|gpu:4|gpu:0|none\nn4|gpu\n");
  ASSERT_EQ(parsed.nodes.size(), 2u);
  EXPECT_EQ(parsed.nodes[0].state, "idle");
  EXPECT_EQ(parsed.nodes[0].state_flags, "~");
  EXPECT_EQ(parsed.nodes[0].reason, "");
  EXPECT_EQ(parsed.nodes[1].state, "down");
  EXPECT_EQ(parsed.nodes[1].state_flags, "*");
  EXPECT_EQ(parsed.nodes[1].reason, "Not responding");
  EXPECT_EQ(parsed.rejected.size(), 2u);
}

TEST(SlurmSchedulerParsers, SinfoNodeWithoutGpuGresHasNoGpus) {
  SinfoNodes parsed = ParseSinfo("cpu-01|cpu|idle|(null)|gpu:0|none\n");
  ASSERT_EQ(parsed.nodes.size(), 1u);
  EXPECT_FALSE(parsed.nodes[0].has_gpus);
}

TEST(SlurmSchedulerParsers, SdiagReadsRealOutputSectionBySection) {
  std::string text = ReadTestdata("sdiag_22.05.txt");
  SdiagStats stats = ParseSdiag(text);
  EXPECT_THAT(stats.rejected, IsEmpty());
  EXPECT_EQ(stats.values.at("server_thread_count"), 3);
  EXPECT_EQ(stats.values.at("jobs_submitted"), 7);
  EXPECT_EQ(stats.values.at("jobs_started"), 1);
  EXPECT_EQ(stats.values.at("data_since_timestamp"), 1795951494);
  // "Last cycle" appears in both sections: each lands in its own key.
  EXPECT_EQ(stats.values.at("main_last_cycle_us"), 59);
  EXPECT_EQ(stats.values.at("main_max_cycle_us"), 564);
  EXPECT_EQ(stats.values.at("main_total_cycles"), 3);
  EXPECT_EQ(stats.values.at("backfill_last_cycle_us"), 0);
  EXPECT_EQ(stats.values.at("backfill_total_cycles"), 0);
  EXPECT_EQ(stats.values.count("backfill_last_cycle_when_timestamp"), 0u);  // "N/A"
  EXPECT_EQ(stats.rpcs_by_type.at("REQUEST_NODE_INFO").count, 52);
  EXPECT_EQ(stats.rpcs_by_type.at("REQUEST_NODE_INFO").total_time_us, 16729);
  EXPECT_EQ(stats.rpcs_by_type.size(), 7u);  // the by-user section is not read as types
}

TEST(SlurmSchedulerParsers, SdiagReadsBackfillStatisticsOnceACycleRan) {
  SdiagStats stats = ParseSdiag(
      "Backfilling stats\n"
      "\tTotal backfilled jobs (since last slurm start): 12\n"
      "\tTotal backfilled jobs (since last stats cycle start): 3\n"
      "\tTotal cycles: 40\n"
      "\tLast cycle when: Sun Nov 29 11:30:00 2026 (1795951800)\n"
      "\tLast cycle: 1520\n\tMax cycle:  9000\n\tMean cycle: 2100\n\tLast depth cycle: 14\n"
      "\tLast depth cycle (try sched): 10\n\tLast queue length: 14\n");
  EXPECT_EQ(stats.values.at("backfill_total_backfilled_jobs"), 12);
  EXPECT_EQ(stats.values.at("backfill_total_cycles"), 40);
  EXPECT_EQ(stats.values.at("backfill_last_cycle_when_timestamp"), 1795951800);
  EXPECT_EQ(stats.values.at("backfill_last_cycle_us"), 1520);
  EXPECT_EQ(stats.values.at("backfill_mean_cycle_us"), 2100);
  EXPECT_EQ(stats.values.at("backfill_last_depth_cycle"), 14);
  EXPECT_EQ(stats.values.at("backfill_last_queue_length"), 14);
  EXPECT_EQ(stats.values.count("main_last_cycle_us"), 0u);
}

TEST(SlurmSchedulerParsers, SdiagSkipsValuesThatAreNotNumbers) {
  SdiagStats stats = ParseSdiag("Server thread count: many\nAgent queue size: -1\nJobs failed: 2\n");
  EXPECT_EQ(stats.values.count("server_thread_count"), 0u);
  EXPECT_EQ(stats.values.count("agent_queue_size"), 0u);
  EXPECT_EQ(stats.values.at("jobs_failed"), 2);
}

TEST(SlurmSchedulerParsers, SshareTrimsHierarchyIndentAndTreatsParentAsAbsent) {
  std::string text = ReadTestdata("sshare_hierarchy.txt");
  SshareRows parsed = ParseSshare(text);
  EXPECT_THAT(parsed.rejected, IsEmpty());
  ASSERT_EQ(parsed.rows.size(), 7u);
  EXPECT_EQ(parsed.rows[0].account, "root");
  EXPECT_EQ(parsed.rows[0].user, "");
  EXPECT_EQ(parsed.rows[0].raw_shares, std::nullopt);
  EXPECT_EQ(parsed.rows[0].fairshare, std::nullopt);
  EXPECT_EQ(parsed.rows[3].account, "physics");
  EXPECT_EQ(parsed.rows[3].user, "alice");
  EXPECT_THAT(parsed.rows[3].fairshare, Optional(0.25));
  EXPECT_THAT(parsed.rows[3].raw_usage, Optional(900000.0));
  EXPECT_EQ(parsed.rows[4].raw_shares, std::nullopt);  // "parent"
  EXPECT_THAT(parsed.rows[4].norm_shares, Optional(0.4));
}

TEST(SlurmSchedulerParsers, SshareWithoutAccountingPrintsNothingAndGivesNoRows) {
  SshareRows parsed = ParseSshare("");
  EXPECT_THAT(parsed.rows, IsEmpty());
  EXPECT_THAT(parsed.rejected, IsEmpty());
  EXPECT_THAT(ParseSshare("a|b|c\n|u|1|1|1|1|1\n").rejected, ElementsAre(::testing::_, ::testing::_));
}

TEST(SlurmSchedulerParsers, SshareRejectsNonFiniteNumbers) {
  SshareRows parsed = ParseSshare("a|u|inf|nan|1e999|0x10|0.5\n");
  ASSERT_EQ(parsed.rows.size(), 1u);
  EXPECT_EQ(parsed.rows[0].raw_shares, std::nullopt);
  EXPECT_EQ(parsed.rows[0].norm_shares, std::nullopt);
  EXPECT_EQ(parsed.rows[0].raw_usage, std::nullopt);
  EXPECT_EQ(parsed.rows[0].effective_usage, std::nullopt);
  EXPECT_THAT(parsed.rows[0].fairshare, Optional(0.5));
}

}  // namespace
}  // namespace gpuscope
