#include "src/cli/job_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

JobGpuFigures Gpu(const std::string& host, const std::string& index, double busy, double idle,
                  double peak_mib, double total_mib = 81559) {
  JobGpuFigures g;
  g.hostname = host;
  g.gpu = index;
  g.utilization_percent = busy;
  g.idle_fraction = idle;
  g.memory_peak_mib = peak_mib;
  g.memory_total_mib = total_mib;
  g.power_mean_watts = 300;
  g.energy_joules = 1.08e6;
  return g;
}

JobFacts Job(std::vector<JobGpuFigures> gpus) {
  JobFacts facts;
  facts.job = "4104";
  facts.user = "alice";
  facts.first_seen = 1000;
  facts.last_seen = 1000 + 3600 + 300;
  facts.gpus = std::move(gpus);
  return facts;
}

TEST(JobReport, TwoIdleGpusOfFourNameThemAndTheCountToRequest) {
  JobFacts facts = Job({Gpu("n1", "0", 95, 0, 70000), Gpu("n1", "1", 90, 0, 70000),
                        Gpu("n1", "2", 1, 0.9, 500), Gpu("n1", "3", 1, 0.92, 500)});
  JobReport report = BuildJobReport(facts);
  EXPECT_THAT(report.notes, ElementsAre("GPUs 2 and 3 were idle 91% of the time: request 2 GPUs"));
}

TEST(JobReport, EveryGpuIdleSaysTheJobDidNoGpuWork) {
  JobReport report = BuildJobReport(Job({Gpu("n1", "0", 0, 1, 500, 81920)}));
  EXPECT_EQ(report.grade, "F");
  ASSERT_EQ(report.notes.size(), 2u);
  EXPECT_EQ(report.notes[0],
            "GPU 0 was idle 100% of the time: the job did no GPU work; release the allocation or "
            "use a CPU node");
  EXPECT_EQ(report.notes[1], "memory never above 0.5 GiB of 80 GiB: a smaller GPU or MIG slice fits");
}

TEST(JobReport, MemoryNoteUsesTheFullestGpuAndIsAbsentWhenAnyGpuIsHalfFull) {
  JobReport small =
      BuildJobReport(Job({Gpu("n1", "0", 80, 0, 12288, 81920), Gpu("n1", "1", 80, 0, 4096, 81920)}));
  EXPECT_THAT(small.notes,
              ElementsAre("memory never above 12 GiB of 80 GiB: a smaller GPU or MIG slice fits"));
  JobReport full =
      BuildJobReport(Job({Gpu("n1", "0", 80, 0, 50000, 81920), Gpu("n1", "1", 80, 0, 4096, 81920)}));
  EXPECT_THAT(full.notes, IsEmpty());
}

TEST(JobReport, MemoryNoteNeedsMemoryFiguresOnEveryGpu) {
  JobGpuFigures unknown = Gpu("n1", "1", 80, 0, -1, -1);
  EXPECT_THAT(BuildJobReport(Job({Gpu("n1", "0", 80, 0, 100), unknown})).notes, IsEmpty());
}

TEST(JobReport, GradeFollowsMeanBusyPreferringSmActive) {
  EXPECT_EQ(BuildJobReport(Job({Gpu("n", "0", 75, 0, 70000)})).grade, "A");
  EXPECT_EQ(BuildJobReport(Job({Gpu("n", "0", 55, 0, 70000)})).grade, "B");
  EXPECT_EQ(BuildJobReport(Job({Gpu("n", "0", 35, 0, 70000)})).grade, "C");
  EXPECT_EQ(BuildJobReport(Job({Gpu("n", "0", 15, 0, 70000)})).grade, "D");
  JobGpuFigures sm = Gpu("n", "0", 99, 0, 70000);
  sm.sm_active_percent = 20;  // utilisation counts any kernel; SM active is the better measure
  JobReport report = BuildJobReport(Job({sm}));
  EXPECT_EQ(report.grade, "D");
  EXPECT_DOUBLE_EQ(report.busy_percent, 20);
  EXPECT_EQ(BuildJobReport(Job({Gpu("n", "0", -1, -1, -1, -1)})).grade, "?");
}

TEST(JobReport, LowButNotIdleGpusGetTheFeedingNote) {
  JobReport report = BuildJobReport(Job({Gpu("n1", "0", 12, 0.1, 70000), Gpu("n1", "1", 80, 0, 70000)}));
  EXPECT_THAT(
      report.notes,
      ElementsAre(
          "GPU 0 averaged under 30% busy: the input pipeline or the CPU side does not keep them fed"));
}

TEST(JobReport, SeveralNodesNameGpusWithTheirHost) {
  JobReport report = BuildJobReport(Job({Gpu("a", "0", 90, 0, 70000), Gpu("b", "0", 0, 0.8, 70000)}));
  EXPECT_THAT(report.notes, ElementsAre("GPU b:0 was idle 80% of the time: request 1 GPU"));
}

// 2026-12-01 14:02:07 UTC.
constexpr double kAt1402 = 1796133727;

TEST(JobReport, XidNoteNamesGpuTimeAndTheCatalogsAction) {
  JobFacts facts = Job({Gpu("n1", "0", 90, 0, 70000), Gpu("n1", "1", 90, 0, 70000)});
  facts.events.push_back({kAt1402, "xid", "n1", "1", "79", "reboot", 1});
  facts.events.push_back({kAt1402 + 60, "xid", "n1", "0", "13", "restart_app", 3});
  EXPECT_THAT(
      BuildJobReport(facts).notes,
      ElementsAre("XID 79 on GPU 1 at 14:02:07 UTC: the node needs a reboot: drain it",
                  "XID 13 on GPU 0 at 14:03:07 UTC (3 times): the application failed: restart the job"));
}

TEST(JobReport, EccNvlinkAndNodeEventsAreNotedWithTheirTime) {
  JobFacts facts = Job({Gpu("a", "5", 90, 0, 70000), Gpu("b", "3", 90, 0, 70000)});
  facts.events.push_back({kAt1402, "ecc_dbe", "a", "5", "", "", 1});
  facts.events.push_back({kAt1402 + 1, "nvlink", "b", "3", "", "", 1234});
  facts.events.push_back({kAt1402 + 2, "nccl", "b", "", "", "", 2});
  facts.events.push_back({kAt1402 + 3, "cuda_oom", "a", "", "", "", 1});
  EXPECT_THAT(
      BuildJobReport(facts).notes,
      ElementsAre("double-bit ECC error on GPU a:5 at 14:02:07 UTC: the GPU needs a reset; check its retired "
                  "pages and row remaps",
                  "NVLink errors on GPU b:3 from 14:02:08 UTC (1234 in all): a degrading link slows every "
                  "collective; the node needs a look",
                  "NCCL errors on b from 14:02:09 UTC (2 on the node during the job)",
                  "CUDA out-of-memory errors on a from 14:02:10 UTC (1 on the node during the job)"));
}

TEST(JobReport, EventNotesPastTheCapAreSummedUpInOneLine) {
  JobFacts facts = Job({Gpu("n1", "0", 90, 0, 70000)});
  for (int i = 0; i < 15; ++i)
    facts.events.push_back({kAt1402 + i, "xid", "n1", "0", std::to_string(i), "", 1});
  JobReport report = BuildJobReport(facts);
  ASSERT_EQ(report.notes.size(), 13u);
  EXPECT_EQ(report.notes[11], "XID 11 on GPU 0 at 14:02:18 UTC: see the XID catalog");
  EXPECT_EQ(report.notes[12], "3 more kinds of events during the job (see --format json)");
}

TEST(JobReport, ThrottlingIsNotedAboveTheMixinsRatiosByReason) {
  JobGpuFigures hot = Gpu("n1", "2", 90, 0, 70000), capped = Gpu("n1", "3", 90, 0, 70000);
  hot.throttle_fraction = {{"sw_thermal_slowdown", 0.06}, {"sw_power_cap", 0.1}, {"sync_boost", 0.5}};
  capped.throttle_fraction = {{"sw_power_cap", 0.25}, {"hw_slowdown", 0.04}};
  JobGpuFigures brake = Gpu("n1", "4", 90, 0, 70000);
  brake.throttle_fraction = {{"hw_slowdown", 0.4}};
  EXPECT_THAT(
      BuildJobReport(Job({hot, capped, brake})).notes,
      ElementsAre("GPU 3 was held back by the power cap 25% of the time: the work is power-bound; check the "
                  "power limit (nvidia-smi -q -d POWER)",
                  "GPU 4 was held back by HW slowdown 40% of the time: the board cut its clocks (overheating "
                  "or a power supply signal): the node needs a look",
                  "GPU 2 was held back by SW thermal slowdown 6% of the time: the GPU ran too hot: check the "
                  "node's cooling"));
  JobGpuFigures cool = Gpu("n1", "0", 90, 0, 70000);
  cool.throttle_fraction = {{"sw_thermal_slowdown", 0.04}, {"sw_power_cap", 0.19}};
  EXPECT_THAT(BuildJobReport(Job({cool})).notes, IsEmpty());
}

TEST(JobReport, StragglerRanksSlowerThanTheMedianRankAreNamedWithByHowMuch) {
  JobFacts facts = Job({Gpu("n1", "0", 90, 0, 70000)});
  for (int rank = 0; rank < 8; ++rank) {
    facts.ranks.push_back({std::to_string(rank), "n1", std::to_string(rank), rank == 3 ? 0.225 : 0.167});
  }
  EXPECT_THAT(
      BuildJobReport(facts).notes,
      ElementsAre("rank 3 (GPU 3) is a straggler: its own work per step took 35% longer than the median "
                  "rank's (0.225 s against 0.167 s); every other rank waits for it in the collectives"));
  facts.ranks[3].compute_median_seconds = 0.2;  // 19.8% slower: within the spread of a healthy job
  EXPECT_THAT(BuildJobReport(facts).notes, IsEmpty());
  facts.ranks.resize(1);
  facts.ranks[0].compute_median_seconds = 9;  // one rank has nothing to compare with
  EXPECT_THAT(BuildJobReport(facts).notes, IsEmpty());
}

TEST(JobReport, SlurmGpuCountDifferentFromWhatPrometheusSawIsNoted) {
  JobFacts facts = Job({Gpu("n1", "0", 90, 0, 70000), Gpu("n1", "1", 90, 0, 70000)});
  facts.accounting.queried = facts.accounting.reachable = true;
  facts.accounting.gpus = 2;
  EXPECT_THAT(BuildJobReport(facts).notes, IsEmpty());
  facts.accounting.gpus = 4;
  EXPECT_THAT(
      BuildJobReport(facts).notes,
      ElementsAre("Slurm accounting says 4 GPU(s) but Prometheus saw 2: a node's agent did not attribute "
                  "or export the rest (check its mapping files and scrape)"));
}

TEST(JobReport, EightyGigabyteH100ReadsEightyGibibytes) {
  // 81920 MiB of board memory (used + free + reserved): 80 GiB, never "79 GB".
  JobFacts facts = Job({Gpu("n1", "0", 90, 0, 10240, 81920)});
  EXPECT_THAT(BuildJobReport(facts).notes,
              ElementsAre("memory never above 10 GiB of 80 GiB: a smaller GPU or MIG slice fits"));
  EXPECT_THAT(RenderJobReportText(facts, BuildJobReport(facts)), HasSubstr("   10 GiB    80 GiB "));
}

TEST(JobReport, ALongSacctErrorIsWrappedUnderItsColumnWithinEightyColumns) {
  JobFacts facts = Job({Gpu("node-a", "0", 98, 0, 70000)});
  facts.accounting.queried = true;
  facts.accounting.error =
      "sacct exited 1: sacct: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host "
      "sacct: error: fetch_config: DNS SRV lookup failed";
  const std::string text = RenderJobReportText(facts, BuildJobReport(facts));
  EXPECT_THAT(text,
              HasSubstr("  slurm      (sacct not reachable: sacct exited 1: sacct: error:\n"
                        "             resolve_ctls_from_dns_srv: res_nsearch error: Unknown host sacct:\n"
                        "             error: fetch_config: DNS SRV lookup failed)\n"));
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    if (line.find("sacct") != std::string::npos || line.find("DNS") != std::string::npos) {
      EXPECT_LE(line.size(), 80u) << line;
      EXPECT_NE(line.back(), ' ') << line;
    }
  }
}

TEST(JobReport, TextSaysARunningJobIsReportedSoFarAndWhySacctIsMissing) {
  JobFacts facts = Job({Gpu("node-a", "0", 98, 0, 70000)});
  facts.running = true;
  facts.accounting.queried = true;
  facts.accounting.error = "sacct: not found";
  std::string text = RenderJobReportText(facts, BuildJobReport(facts));
  EXPECT_THAT(text, HasSubstr("run time   1h05m so far (running: every figure is up to now)\n"));
  EXPECT_THAT(text, HasSubstr(" to now\n"));
  EXPECT_THAT(text, HasSubstr("  slurm      (sacct not reachable: sacct: not found)\n"));
  facts.running = false;
  facts.accounting = {true, true, "", "COMPLETED", "01:05:00", "0:0", "cpu=8,gres/gpu=1", 1};
  text = RenderJobReportText(facts, BuildJobReport(facts));
  EXPECT_THAT(text, HasSubstr("run time   1h05m\n"));
  EXPECT_THAT(text,
              HasSubstr("  slurm      COMPLETED, elapsed 01:05:00, exit code 0:0, 1 GPU(s) allocated\n"));
}

TEST(JobReport, PodIsTitledAsAPodAndItsIdleNoteSpeaksOfThePod) {
  JobFacts facts = Job({Gpu("gpu-node-06", "6", 0, 1, 500)});
  facts.job = "research/nb-alice";
  facts.is_pod = true;
  EXPECT_THAT(RenderJobReportText(facts, BuildJobReport(facts)), HasSubstr("Pod research/nb-alice\n"));
  EXPECT_EQ(BuildJobReport(facts).notes[0],
            "GPU 6 was idle 100% of the time: the pod did no GPU work; lower its nvidia.com/gpu request or "
            "scale it "
            "down");
  EXPECT_EQ(nlohmann::json::parse(RenderJobReportJson(facts, BuildJobReport(facts)))["kind"], "pod");
}

TEST(JobReport, TextShowsRunTimeNodesGradeFiguresAndNotes) {
  JobFacts facts = Job({Gpu("node-a", "0", 98, 0, 70000), Gpu("node-a", "1", 2, 0.9, 500)});
  std::string text = RenderJobReportText(facts, BuildJobReport(facts));
  EXPECT_THAT(text, HasSubstr("Job 4104\n"));
  EXPECT_THAT(text, HasSubstr("user       alice\n"));
  EXPECT_THAT(text, HasSubstr("run time   1h05m\n"));
  EXPECT_THAT(text, HasSubstr("nodes      1 (node-a)\n"));
  EXPECT_THAT(text, HasSubstr("grade      B (50% busy on average)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "node-a           1          2      -   0.5 GiB    80 GiB     300    1080.0     90      -    0\n"));
  EXPECT_THAT(text, HasSubstr("  - GPU 1 was idle 90% of the time: request 1 GPU\n"));
}

TEST(JobReport, JsonCarriesEveryFigureWithAbsentOnesAsNull) {
  JobFacts facts = Job({Gpu("node-a", "0", 95, 0, 70000)});
  nlohmann::json doc = nlohmann::json::parse(RenderJobReportJson(facts, BuildJobReport(facts)));
  EXPECT_EQ(doc["job"], "4104");
  EXPECT_EQ(doc["run_time_seconds"], 3900);
  EXPECT_EQ(doc["grade"], "A");
  ASSERT_EQ(doc["gpus"].size(), 1u);
  EXPECT_EQ(doc["gpus"][0]["hostname"], "node-a");
  EXPECT_EQ(doc["gpus"][0]["utilization_percent"], 95);
  EXPECT_TRUE(doc["gpus"][0]["sm_active_percent"].is_null());
  EXPECT_EQ(doc["gpus"][0]["energy_joules"], 1.08e6);
  EXPECT_TRUE(doc["notes"].is_array());
  EXPECT_TRUE(doc["slurm"].is_null());
  EXPECT_EQ(doc["running"], false);
}

TEST(JobReport, JsonCarriesThrottlingEventsRanksAndAccounting) {
  JobGpuFigures g = Gpu("node-a", "1", 95, 0, 70000);
  g.throttle_fraction = {{"sw_power_cap", 0.25}};
  g.throttle_seconds = {{"power", 12.5}};
  g.xid_errors = 1;
  g.nvlink_errors = 40;
  JobFacts facts = Job({g});
  facts.events.push_back({kAt1402, "xid", "node-a", "1", "79", "reboot", 1});
  facts.ranks.push_back({"0", "node-a", "1", 0.5});
  facts.accounting = {true, true, "", "RUNNING", "00:10:00", "0:0", "gres/gpu=1", 1};
  nlohmann::json doc = nlohmann::json::parse(RenderJobReportJson(facts, BuildJobReport(facts)));
  EXPECT_EQ(doc["gpus"][0]["throttle_fraction"]["sw_power_cap"], 0.25);
  EXPECT_EQ(doc["gpus"][0]["throttle_seconds"]["power"], 12.5);
  EXPECT_EQ(doc["gpus"][0]["nvlink_errors"], 40);
  EXPECT_EQ(doc["events"][0]["kind"], "xid");
  EXPECT_EQ(doc["events"][0]["code"], "79");
  EXPECT_EQ(doc["events"][0]["action"], "reboot");
  EXPECT_EQ(doc["events"][0]["time"], kAt1402);
  EXPECT_EQ(doc["ranks"][0]["compute_median_seconds"], 0.5);
  EXPECT_EQ(doc["slurm"]["state"], "RUNNING");
  EXPECT_EQ(doc["slurm"]["gpus"], 1);
}

}  // namespace
}  // namespace gpuscope
