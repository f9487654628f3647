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
  EXPECT_EQ(report.notes[1], "memory never above 0.5 GB of 80 GB: a smaller GPU or MIG slice fits");
}

TEST(JobReport, MemoryNoteUsesTheFullestGpuAndIsAbsentWhenAnyGpuIsHalfFull) {
  JobReport small =
      BuildJobReport(Job({Gpu("n1", "0", 80, 0, 12288, 81920), Gpu("n1", "1", 80, 0, 4096, 81920)}));
  EXPECT_THAT(small.notes, ElementsAre("memory never above 12 GB of 80 GB: a smaller GPU or MIG slice fits"));
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

TEST(JobReport, XidAndEccErrorsAreNoted) {
  JobGpuFigures g = Gpu("n1", "0", 90, 0, 70000);
  g.xid_errors = 2;
  g.ecc_dbe_errors = 1;
  JobReport report = BuildJobReport(Job({g}));
  EXPECT_THAT(report.notes,
              ElementsAre("2 XID error(s) during the job: see gpuscope_xid_errors_total",
                          "1 double-bit ECC error(s) during the job: the GPU may need a reset"));
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
      HasSubstr("node-a           1          2      -    0.5 GB     80 GB     300    1080.0     90    0\n"));
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
}

}  // namespace
}  // namespace gpuscope
