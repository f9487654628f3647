#include "src/attribution/slurm_job_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuscope {
namespace {

using std::chrono::milliseconds;

// A fake `scontrol` (bash) in a temp dir whose behaviour a test chooses: print a fixture captured from a
// real Slurm 22.05, fail like Slurm does with its controller down, or hang.
class FakeScontrol {
 public:
  FakeScontrol() {
    char pattern[] = "/tmp/gpuscope-fake-scontrol-XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = dir_ + "/scontrol";
  }
  ~FakeScontrol() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& body) {
    std::ofstream(path_) << "#!/bin/bash\necho \"$@\" >> " << dir_ << "/calls\n" << body << "\n";
    chmod(path_.c_str(), 0755);
  }
  void PrintFixture() {
    Write(std::string("tail -n +2 ") + GPUSCOPE_SLURM_FIXTURES + "/slurm_scontrol_show_job_all.txt");
  }
  void FailAsControllerDown() {
    Write("echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1");
  }
  void Hang() { Write("sleep 1000 & sleep 1000"); }  // a grandchild too: the whole group must die
  int Calls() const {
    std::ifstream in(dir_ + "/calls");
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

SlurmJobSourceOptions Options(const FakeScontrol& fake) {
  SlurmJobSourceOptions options;
  options.scontrol_path = fake.path();
  options.timeout = milliseconds(20000);
  options.interval = std::chrono::hours(1);
  options.min_query_interval = milliseconds(0);
  return options;
}

// The table as the mapping-file source leaves it: GPU 0 and 1 to job 1 and GPU 2 to array task 6, with
// no user, account or partition.
void AllocateFromMapping(JobTable& table, std::vector<std::string> jobs = {"1", "6"}) {
  AttributionUpdate update;
  for (size_t i = 0; i < jobs.size(); ++i) update.allocations.push_back({std::to_string(i), jobs[i], "", ""});
  table.Update(AttributionSource::kMapping, update);
}

double Value(const std::vector<MetricFamily>& families, const std::string& name,
             const std::string& result = "") {
  for (const MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const Sample& sample : family.samples) {
      if (result.empty() || (!sample.labels.empty() && sample.labels[0].second == result))
        return sample.value;
    }
  }
  ADD_FAILURE() << "no " << name << " " << result;
  return -1;
}

TEST(SlurmJobSource, FillsUserAccountPartitionAndArrayIdsOfAllocatedJobsFromScontrol) {
  FakeScontrol fake;
  fake.PrintFixture();
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSource source(Options(fake), &table);
  ASSERT_TRUE(source.QueryOnce().ok());
  auto view = table.Current();
  const JobInfo* job = view->Job("1");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->user, "alice");
  EXPECT_EQ(job->uid, "1001");
  EXPECT_EQ(job->account, "physics");
  EXPECT_EQ(job->partition, "gpu");
  EXPECT_EQ(job->job_name, "train llama 70b lr=3e-4");
  const JobInfo* task = view->Job("6");
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(task->array_job_id, "2");
  EXPECT_EQ(task->account, "chem");
  // Jobs Slurm knows but the node does not allocate are not published.
  EXPECT_EQ(view->Job("3"), nullptr);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_attribution_slurm_up"), 1);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_attribution_slurm_queries_total", "ok"), 1);
}

TEST(SlurmJobSource, AsksSlurmOnlyWhenAnAllocatedJobLacksDetails) {
  FakeScontrol fake;
  fake.PrintFixture();
  JobTable table;
  SlurmJobSource source(Options(fake), &table);
  source.QueryOnce();
  EXPECT_EQ(fake.Calls(), 0);  // nothing allocated: no query
  AllocateFromMapping(table);
  source.QueryOnce();
  source.QueryOnce();  // details cached: no second query before the interval
  EXPECT_EQ(fake.Calls(), 1);
  AllocateFromMapping(table, {"1", "6", "7"});  // a new job: one more query
  source.QueryOnce();
  EXPECT_EQ(fake.Calls(), 2);
  AllocateFromMapping(table, {"1", "6", "7", "99"});  // unknown to Slurm: asked once, not at every cycle
  source.QueryOnce();
  source.QueryOnce();
  EXPECT_EQ(fake.Calls(), 3);
}

TEST(SlurmJobSource, ControllerDownMeansUpZeroAnErrorCountAndCachedDetailsKept) {
  FakeScontrol fake;
  fake.PrintFixture();
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSource source(Options(fake), &table);
  ASSERT_TRUE(source.QueryOnce().ok());
  fake.FailAsControllerDown();
  Status status = source.QueryOnce(/*force=*/true);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), testing::HasSubstr("Unable to contact slurm controller"));
  auto metrics = source.MetricFamilies();
  EXPECT_EQ(Value(metrics, "gpuscope_attribution_slurm_up"), 0);
  EXPECT_EQ(Value(metrics, "gpuscope_attribution_slurm_queries_total", "error"), 1);
  EXPECT_EQ(table.Current()->Job("1")->account, "physics");
}

TEST(SlurmJobSource, HungScontrolIsKilledAtTheTimeoutAndCountedAsTimeout) {
  FakeScontrol fake;
  fake.Hang();
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSourceOptions options = Options(fake);
  options.timeout = milliseconds(200);
  SlurmJobSource source(options, &table);
  Status status = source.QueryOnce();
  EXPECT_EQ(status.code(), Status::Code::kDeadlineExceeded);
  auto metrics = source.MetricFamilies();
  EXPECT_EQ(Value(metrics, "gpuscope_attribution_slurm_up"), 0);
  EXPECT_EQ(Value(metrics, "gpuscope_attribution_slurm_queries_total", "timeout"), 1);
  EXPECT_EQ(table.Current()->Job("1")->account, "");
}

TEST(SlurmJobSource, MissingScontrolBinaryIsAnErrorNotACrash) {
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSourceOptions options;
  options.scontrol_path = "/nonexistent/scontrol";
  SlurmJobSource source(options, &table);
  EXPECT_EQ(source.QueryOnce().code(), Status::Code::kUnavailable);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_attribution_slurm_queries_total", "error"), 1);
}

TEST(SlurmJobSource, JobNoLongerAllocatedIsDroppedFromTheTableAndLaterFromTheCache) {
  FakeScontrol fake;
  fake.PrintFixture();
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSourceOptions options = Options(fake);
  options.forget_after = milliseconds(0);
  SlurmJobSource source(options, &table);
  source.QueryOnce();
  AllocateFromMapping(table, {"6"});  // job 1 ended: the epilog removed its mapping
  source.QueryOnce();
  EXPECT_EQ(table.Current()->Job("1"), nullptr);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_attribution_slurm_jobs_cached"), 1);
}

TEST(SlurmJobSource, BackgroundThreadPublishesAndStopsPromptly) {
  FakeScontrol fake;
  fake.PrintFixture();
  JobTable table;
  AllocateFromMapping(table);
  SlurmJobSourceOptions options = Options(fake);
  options.min_query_interval = milliseconds(10);
  SlurmJobSource source(options, &table);
  source.Start();
  for (int i = 0; i < 2000 && table.Current()->Job("1")->account.empty(); ++i) usleep(5000);
  source.Stop();
  EXPECT_EQ(table.Current()->Job("1")->account, "physics");
}

TEST(SlurmJobSource, RunCommandCapturesOutputAndExitStatus) {
  CommandResult ok = RunCommandWithTimeout({"/bin/sh", "-c", "printf 'a b'"}, milliseconds(20000), 1024);
  EXPECT_TRUE(ok.status.ok());
  EXPECT_EQ(ok.output, "a b");
  CommandResult big =
      RunCommandWithTimeout({"/bin/sh", "-c", "head -c 5000 /dev/zero"}, milliseconds(20000), 1024);
  EXPECT_EQ(big.status.code(), Status::Code::kUnavailable);
  CommandResult failed =
      RunCommandWithTimeout({"/bin/sh", "-c", "echo boom >&2; exit 3"}, milliseconds(20000), 1024);
  EXPECT_THAT(failed.status.message(), testing::HasSubstr("exited 3: boom"));
}

}  // namespace
}  // namespace gpuscope
