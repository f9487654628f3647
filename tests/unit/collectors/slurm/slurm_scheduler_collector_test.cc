// SlurmSchedulerCollector against fake Slurm commands (shell scripts printing committed real 22.05
// output, tests/fixtures/slurm): families and labels, golden exposition, promtool lint, cache freshness,
// up 0 with a reason, and a hung command killed at the timeout.
//
// Golden files: testdata/*.prom. To regenerate after an intended change:
//   GPUSCOPE_UPDATE_GOLDEN=1 ./slurm_scheduler_collector_test   (from the build dir's test folder)
#include "src/collectors/slurm/slurm_scheduler_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "src/core/snapshot.h"
#include "src/sinks/prometheus/exposition.h"

namespace gpuscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixtures = GPUSCOPE_SLURM_FIXTURES;  // the commands' output (tests/fixtures/slurm)
const std::string kTestdata = GPUSCOPE_SLURM_TESTDATA;  // golden expositions

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A directory of fake squeue/sinfo/sdiag/sshare scripts.
class FakeSlurm {
 public:
  FakeSlurm() {
    char pattern[] = "/tmp/gpuscope-slurm-sched-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  ~FakeSlurm() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // The command prints `fixture` (a file of tests/fixtures/slurm; "" prints nothing) and exits 0.
  void Prints(const std::string& command, const std::string& fixture) {
    Write(command, fixture.empty() ? "exit 0\n" : "exec cat '" + kFixtures + "/" + fixture + "'\n");
  }
  // The command fails as a Slurm client does when slurmctld does not answer.
  void Unreachable(const std::string& command) {
    Write(command, "echo '" + command +
                       ": error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n");
  }
  // The command never finishes (and starts a child that would outlive it unless its group is killed).
  void Hangs(const std::string& command) { Write(command, "sleep 600 &\nexec sleep 600\n"); }

  std::string Path(const std::string& command) const { return dir_ + "/" + command; }

  SlurmSchedulerOptions Options() const {
    SlurmSchedulerOptions options;
    options.squeue_path = Path("squeue");
    options.sinfo_path = Path("sinfo");
    options.sdiag_path = Path("sdiag");
    options.sshare_path = Path("sshare");
    options.timeout = std::chrono::milliseconds(20000);
    return options;
  }

 private:
  void Write(const std::string& command, const std::string& body) {
    std::string path = Path(command);
    std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      out << "#!/bin/sh\n" << body;
    }
    chmod(tmp.c_str(), 0755);
    std::rename(tmp.c_str(), path.c_str());  // never exec a half-written script
  }
  std::string dir_;
};

std::string Render(std::vector<MetricFamily> families, bool drop_volatile) {
  if (drop_volatile) {
    std::erase_if(families, [](const MetricFamily& f) {
      return f.name == "gpuscope_slurm_command_duration_seconds" ||
             f.name == "gpuscope_slurm_command_last_success_timestamp_seconds";
    });
  }
  std::sort(families.begin(), families.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  RenderStats stats;
  std::string text = RenderSnapshot(Snapshot::Of(std::move(families)), ExpositionFormat::kText004, &stats);
  EXPECT_EQ(stats.skipped_families, 0u);
  EXPECT_EQ(stats.skipped_samples, 0u);
  return text;
}

void ExpectGolden(const std::string& text, const std::string& name) {
  const std::string path = kTestdata + "/" + name;
  if (std::getenv("GPUSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << text;
    GTEST_SKIP() << "golden file updated: " << path;
  }
  EXPECT_EQ(text, ReadFile(path)) << "golden " << name << " differs; see the header to regenerate";
}

const MetricFamily* Find(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The value of the sample whose labels include all of `want`, or NaN.
double ValueOf(const std::vector<MetricFamily>& families, std::string_view name, const Labels& want = {}) {
  const MetricFamily* f = Find(families, name);
  if (f == nullptr) return std::nan("");
  for (const Sample& s : f->samples) {
    bool all = std::all_of(want.begin(), want.end(), [&](const auto& pair) {
      return std::find(s.labels.begin(), s.labels.end(), pair) != s.labels.end();
    });
    if (all) return s.value;
  }
  return std::nan("");
}

TEST(SlurmSchedulerCollector, RealDrainOutputGivesJobsNodesGpusAndSchedulerFamilies) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_22.05_drain.txt");
  slurm.Prints("sinfo", "sinfo_22.05_drain.txt");
  slurm.Prints("sdiag", "sdiag_22.05.txt");
  slurm.Prints("sshare", "");
  SlurmSchedulerCollector collector(slurm.Options());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_up"), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_jobs",
                    {{"state", "PENDING"}, {"partition", "gpu"}, {"account", "none"}, {"user", "root"}}),
            5);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_jobs_pending", {{"partition", "gpu"}, {"reason", "JobHeldUser"}}),
            1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_job_gpus", {{"state", "RUNNING"}, {"partition", "gpu"}}), 2);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_draining", {{"node", "vm"}, {"reason", "test drain reason"}}),
            1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_state", {{"node", "vm"}, {"state", "draining"}}), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_down", {{"node", "vm"}}), 0);
  EXPECT_EQ(Find(out, "gpuscope_slurm_node_gpus")->samples.size(), 1u);  // one node, two partitions
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_partition_gpus_allocated", {{"partition", "debug"}}), 2);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_partition_gpus_idle", {{"partition", "gpu"}}), 6);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_scheduler_jobs_submitted_total"), 7);
  EXPECT_DOUBLE_EQ(ValueOf(out, "gpuscope_slurm_scheduler_main_cycle_max_seconds"), 564e-6);
  EXPECT_TRUE(Find(out, "gpuscope_slurm_fairshare")->samples.empty());  // no slurmdbd: sshare is empty
  ExpectGolden(Render(out, true), "drain_22.05.prom");
}

TEST(SlurmSchedulerCollector, TypedGpusFlagsAndFairshareRenderAsGolden) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_multi.txt");
  slurm.Prints("sinfo", "sinfo_multi_gpu_types.txt");
  slurm.Prints("sdiag", "");
  slurm.Prints("sshare", "sshare_hierarchy.txt");
  SlurmSchedulerCollector collector(slurm.Options());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_down", {{"node", "gpu-a04"}, {"reason", "Not responding"}}), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_draining",
                    {{"node", "gpu-a03"}, {"reason", "XID 79 fell off the bus|really"}}),
            1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_gpus_allocated", {{"node", "gpu-b01"}}), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_gpus", {{"node", "gpu-b01"}}), 4);
  EXPECT_TRUE(std::isnan(ValueOf(out, "gpuscope_slurm_node_gpus", {{"node", "cpu-01"}})));
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_partition_gpus", {{"partition", "gpu"}}), 32);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_job_gpus", {{"state", "RUNNING"}, {"partition", "gpu"}}), 8);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_fairshare", {{"account", "physics"}, {"user", "alice"}}), 0.25);
  std::string text = Render(out, true);
  ExpectGolden(text, "multi.prom");

  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  std::string path = ::testing::TempDir() + "/slurm_sched_promtool.prom";
  std::ofstream(path) << Render(out, false);
  std::string command = std::string(promtool) + " check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string lint;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) lint.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << lint;
  EXPECT_THAT(lint, Not(HasSubstr("error")));
}

TEST(SlurmSchedulerCollector, UserLabelIsDroppedWhenOptedOut) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_multi.txt");
  slurm.Prints("sinfo", "sinfo_22.05_drain.txt");
  slurm.Prints("sdiag", "");
  slurm.Prints("sshare", "sshare_hierarchy.txt");
  SlurmSchedulerOptions options = slurm.Options();
  options.include_user = false;
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  for (const Sample& s : Find(out, "gpuscope_slurm_jobs")->samples) {
    for (const auto& [name, value] : s.labels) EXPECT_NE(name, "user");
  }
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_jobs",
                    {{"state", "PENDING"}, {"partition", "gpu"}, {"account", "physics"}}),
            2);
  for (const Sample& s : Find(out, "gpuscope_slurm_fairshare")->samples) {
    EXPECT_EQ(s.labels.at(1).second, "") << "only account rows when users are opted out";
  }
  for (const MetricDescription& d : collector.Describe()) {
    if (d.name == "gpuscope_slurm_jobs") {
      EXPECT_THAT(d.labels, Not(::testing::Contains("user")));
    }
  }
}

TEST(SlurmSchedulerCollector, UnreachableControllerGivesUpZeroWithReasonAndServesFreshCache) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_22.05_drain.txt");
  slurm.Prints("sinfo", "sinfo_22.05_drain.txt");
  slurm.Prints("sdiag", "sdiag_22.05.txt");
  slurm.Prints("sshare", "");
  SlurmSchedulerOptions options = slurm.Options();
  options.max_staleness = std::chrono::hours(1);
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> first;
  ASSERT_TRUE(collector.Collect(first).ok());

  for (const char* command : {"squeue", "sinfo", "sdiag", "sshare"}) slurm.Unreachable(command);
  std::vector<MetricFamily> out;
  Status status = collector.Collect(out);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("Unable to contact slurm controller"));
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_up"), 0);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_error_info",
                    {{"command", "squeue"}, {"reason", "controller_unreachable"}}),
            1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_command_success", {{"command", "sinfo"}}), 0);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_command_runs_total", {{"command", "sinfo"}, {"result", "ok"}}), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_command_runs_total",
                    {{"command", "sinfo"}, {"result", "controller_unreachable"}}),
            1);
  // Fresh enough: the last good values are still reported, with their age.
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_draining", {{"node", "vm"}}), 1);
  EXPECT_GT(ValueOf(out, "gpuscope_slurm_data_age_seconds", {{"command", "squeue"}}), 0);
}

TEST(SlurmSchedulerCollector, CachedValuesOlderThanTheStalenessLimitAreDropped) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_22.05_drain.txt");
  slurm.Prints("sinfo", "sinfo_22.05_drain.txt");
  slurm.Prints("sdiag", "sdiag_22.05.txt");
  slurm.Prints("sshare", "");
  SlurmSchedulerOptions options = slurm.Options();
  options.max_staleness = std::chrono::milliseconds(0);
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> first;
  ASSERT_TRUE(collector.Collect(first).ok());
  slurm.Unreachable("squeue");
  slurm.Unreachable("sinfo");
  std::vector<MetricFamily> out;
  EXPECT_FALSE(collector.Collect(out).ok());
  EXPECT_EQ(Find(out, "gpuscope_slurm_jobs"), nullptr);
  EXPECT_EQ(Find(out, "gpuscope_slurm_node_draining"), nullptr);
  EXPECT_TRUE(std::isnan(ValueOf(out, "gpuscope_slurm_data_age_seconds", {{"command", "sinfo"}})));
  // sdiag still answered: its values are current.
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_scheduler_jobs_submitted_total"), 7);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_data_age_seconds", {{"command", "sdiag"}}), 0);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_up"), 0);
}

TEST(SlurmSchedulerCollector, HungCommandIsKilledAtTheTimeoutAndReportedAsTimeout) {
  FakeSlurm slurm;
  slurm.Hangs("squeue");
  slurm.Prints("sinfo", "sinfo_22.05_drain.txt");
  slurm.Prints("sdiag", "sdiag_22.05.txt");
  slurm.Prints("sshare", "");
  SlurmSchedulerOptions options = slurm.Options();
  options.timeout = std::chrono::milliseconds(300);
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> out;
  Status status = collector.Collect(out);  // returns at all: the hung script and its child were killed
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_up"), 0);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_error_info", {{"command", "squeue"}, {"reason", "timeout"}}), 1);
  EXPECT_EQ(ValueOf(out, "gpuscope_slurm_node_draining", {{"node", "vm"}}), 1);
}

TEST(SlurmSchedulerCollector, MissingSlurmCommandsMeanNoData) {
  SlurmSchedulerOptions options;
  options.squeue_path = options.sinfo_path = options.sdiag_path = options.sshare_path =
      "/nonexistent/gpuscope-no-slurm";
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> out;
  EXPECT_EQ(collector.Collect(out).code(), Status::Code::kNoData);
  EXPECT_TRUE(out.empty());
}

TEST(SlurmSchedulerCollector, DescribeCoversEveryEmittedFamilyWithItsLabels) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_multi.txt");
  slurm.Prints("sinfo", "sinfo_multi_gpu_types.txt");
  slurm.Prints("sdiag", "sdiag_22.05.txt");
  slurm.Prints("sshare", "sshare_hierarchy.txt");
  SlurmSchedulerCollector collector(slurm.Options());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  std::vector<MetricDescription> described = collector.Describe();
  for (const MetricFamily& f : out) {
    auto it = std::find_if(described.begin(), described.end(),
                           [&](const MetricDescription& d) { return d.name == f.name; });
    ASSERT_NE(it, described.end()) << f.name;
    EXPECT_EQ(it->type, f.type) << f.name;
    for (const Sample& s : f.samples) {
      ASSERT_EQ(s.labels.size(), it->labels.size()) << f.name;
      for (size_t i = 0; i < s.labels.size(); ++i) EXPECT_EQ(s.labels[i].first, it->labels[i]) << f.name;
    }
  }
}

TEST(SlurmSchedulerCollector, DisabledSdiagAndSshareAreNeitherRunNorDescribed) {
  FakeSlurm slurm;
  slurm.Prints("squeue", "squeue_multi.txt");
  slurm.Prints("sinfo", "sinfo_multi_gpu_types.txt");
  slurm.Hangs("sdiag");
  slurm.Hangs("sshare");
  SlurmSchedulerOptions options = slurm.Options();
  options.collect_sdiag = false;
  options.collect_sshare = false;
  SlurmSchedulerCollector collector(options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_TRUE(std::isnan(ValueOf(out, "gpuscope_slurm_command_success", {{"command", "sdiag"}})));
  for (const MetricDescription& d : collector.Describe()) {
    EXPECT_FALSE(d.name.starts_with("gpuscope_slurm_scheduler_")) << d.name;
    EXPECT_NE(d.name, "gpuscope_slurm_fairshare");
  }
}

}  // namespace
}  // namespace gpuscope
