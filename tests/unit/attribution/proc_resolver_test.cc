#include "src/attribution/proc_resolver.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/parsers/proc_cgroup.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(GPUSCOPE_SOURCE_DIR) + "/tests/fixtures/proc/slurm_node";

// A writable copy of the fixture tree, removed at the end of the test.
class TempProc {
 public:
  TempProc() {
    char tmpl[] = "/tmp/gpuscope_proc_XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::copy(kFixture, root_, fs::copy_options::recursive);
  }
  ~TempProc() { fs::remove_all(root_); }
  const std::string& root() const { return root_; }
  void Write(const std::string& relative, const std::string& content) const {
    std::ofstream(root_ + "/" + relative, std::ios::binary | std::ios::trunc) << content;
  }

 private:
  std::string root_;
};

const Allocation* Find(const AttributionUpdate& update, const std::string& gpu, const std::string& job) {
  for (const Allocation& a : update.allocations) {
    if (a.gpu == gpu && a.job_id == job) return &a;
  }
  return nullptr;
}

const JobInfo* FindJob(const AttributionUpdate& update, const std::string& job) {
  for (const JobInfo& j : update.jobs) {
    if (j.job_id == job) return &j;
  }
  return nullptr;
}

double Metric(const ProcResolver& resolver, const std::string& name, const std::string& result) {
  for (const MetricFamily& family : resolver.SelfMetrics()) {
    if (family.name != name) continue;
    for (const Sample& s : family.samples) {
      if (result.empty() || (!s.labels.empty() && s.labels[0].second == result)) return s.value;
    }
  }
  return -1;
}

TEST(ProcResolverTest, V1JobWithTwoRanksOnTwoGpusGetsRankStepAndJobDetails) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"0", 1001}, {"1", 1002}});
  ASSERT_EQ(update.allocations.size(), 2u);
  const Allocation* gpu0 = Find(update, "0", "1234");
  const Allocation* gpu1 = Find(update, "1", "1234");
  ASSERT_NE(gpu0, nullptr);
  ASSERT_NE(gpu1, nullptr);
  EXPECT_EQ(gpu0->rank, "0");
  EXPECT_EQ(gpu1->rank, "1");
  EXPECT_EQ(gpu0->step_id, "0");
  ASSERT_EQ(update.jobs.size(), 1u);
  const JobInfo& job = update.jobs[0];
  EXPECT_EQ(job.job_id, "1234");
  EXPECT_EQ(job.user, "alice");
  EXPECT_EQ(job.uid, "1001");
  EXPECT_EQ(job.account, "physics");
  EXPECT_EQ(job.partition, "gpu");
  EXPECT_EQ(job.job_name, "train-llm");
}

TEST(ProcResolverTest, TwoProcessesOfOneJobOnOneGpuGiveOneAllocationWithTheLowestRank) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"3", 1002}, {"3", 1001}});
  ASSERT_EQ(update.allocations.size(), 1u);
  EXPECT_EQ(update.allocations[0].rank, "0");
}

TEST(ProcResolverTest, V2ArrayTaskInBatchStepTakesUidFromStatusAndKeepsItWithoutNameLookup) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"2.1", 2001}});
  const Allocation* a = Find(update, "2.1", "5678");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->step_id, "batch");
  EXPECT_EQ(a->rank, "");
  const JobInfo* job = FindJob(update, "5678");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->uid, "1002");  // status Uid: line; environ has no SLURM_JOB_UID
  EXPECT_EQ(job->user, "bob");
  EXPECT_EQ(job->array_job_id, "5670");
  EXPECT_EQ(job->array_task_id, "8");
  EXPECT_EQ(job->partition, "gpu-long");
}

TEST(ProcResolverTest, FixtureRootNeverResolvesUidToUserName) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"4", 2002}});
  const JobInfo* job = FindJob(update, "777");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->uid, "1003");
  EXPECT_EQ(job->user, "");  // getpwuid_r is only for the real /proc
  EXPECT_EQ(Find(update, "4", "777")->step_id, "extern");
}

TEST(ProcResolverTest, DockerAndKubernetesProcessesYieldNoAllocation) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"0", 3001}, {"1", 3002}});
  EXPECT_TRUE(update.allocations.empty());
  EXPECT_TRUE(update.jobs.empty());
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "no_job"), 2);
}

TEST(ProcResolverTest, AKubernetesProcessHasItsPodUidFromTheCgroupAndOthersNone) {
  ProcResolver resolver(kFixture);
  resolver.Resolve({{"0", 1001}, {"1", 3001}, {"1", 3002}});
  EXPECT_EQ(resolver.PodUidOf(3002), "3002c0de-0000-4000-8000-000000003002") << "dashed as metadata.uid";
  EXPECT_EQ(resolver.PodUidOf(1001), "") << "a Slurm job's process";
  EXPECT_EQ(resolver.PodUidOf(3001), "") << "a plain docker container";
  EXPECT_EQ(resolver.PodUidOf(4242), "") << "not listed";
}

TEST(ProcResolverTest, ThePodUidIsReadOncePerProcessLifetime) {
  TempProc proc;
  ProcResolver resolver(proc.root(), ProcResolver::Options{.revalidate_every_cycles = 1});
  resolver.Resolve({{"1", 3002}});
  const std::string other_pod =
      "0::/kubepods/besteffort/pod0e0e0e0e-0000-4000-8000-000000000000/" + std::string(64, 'e') + "\n";
  proc.Write("3002/cgroup", other_pod);  // same start time: the same process, not read again
  resolver.Resolve({{"1", 3002}});
  EXPECT_EQ(resolver.PodUidOf(3002), "3002c0de-0000-4000-8000-000000003002");
  // The pid reused by a process of another pod (a new start time): read afresh on revalidation.
  std::ifstream in(kFixture + "/3002/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(stat.find(" 120500 "), std::string::npos);
  stat.replace(stat.find(" 120500 "), 8, " 9999999 ");
  proc.Write("3002/stat", stat);
  resolver.Resolve({{"1", 3002}});
  EXPECT_EQ(resolver.PodUidOf(3002), "0e0e0e0e-0000-4000-8000-000000000000");
}

TEST(ProcResolverTest, CgroupJobIsAuthoritativeAndAMismatchedEnvironIsIgnored) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"5", 4001}});
  ASSERT_EQ(update.allocations.size(), 1u);
  EXPECT_EQ(update.allocations[0].job_id, "4444");
  EXPECT_EQ(update.allocations[0].step_id, "2");
  EXPECT_EQ(update.allocations[0].rank, "");  // environ's SLURM_PROCID=5 belongs to the claimed job 9999
  const JobInfo* job = FindJob(update, "4444");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->account, "");  // not "stolen"
  EXPECT_EQ(job->uid, "1004");  // from status
  EXPECT_EQ(FindJob(update, "9999"), nullptr);
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_environ_total", "mismatch"), 1);
}

TEST(ProcResolverTest, EnvironJobIsUsedWhenTheCgroupIsNotSlurmsUnlessDisabled) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"6", 5001}});
  const Allocation* a = Find(update, "6", "4321");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rank, "3");
  EXPECT_EQ(a->step_id, "batch");  // SLURM_STEP_ID=4294967291
  EXPECT_EQ(FindJob(update, "4321")->user, "carol");

  ProcResolver strict(
      kFixture, ProcResolver::Options{.revalidate_every_cycles = 30, .trust_environ_without_cgroup = false});
  EXPECT_TRUE(strict.Resolve({{"6", 5001}}).allocations.empty());
}

TEST(ProcResolverTest, MultipleSlurmdV1LayoutTakesUidFromThePath) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"7", 6001}});
  const Allocation* a = Find(update, "7", "42");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->step_id, "1");
  EXPECT_EQ(a->rank, "3");
  EXPECT_EQ(FindJob(update, "42")->uid, "1006");
}

TEST(ProcResolverTest, VanishedProcessesAreSkippedAndCountedAsGone) {
  ProcResolver resolver(kFixture);
  AttributionUpdate update = resolver.Resolve({{"0", 1001}, {"1", 99999}});
  EXPECT_EQ(update.allocations.size(), 1u);
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "gone"), 1);
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "job"), 1);
  EXPECT_EQ(resolver.cache_size(), 1u);
}

TEST(ProcResolverTest, ProcessGoneBetweenReadsIsSkipped) {
  TempProc proc;
  fs::remove(proc.root() + "/1001/environ");  // stat and cgroup readable, then the process exits
  ProcResolver resolver(proc.root());
  EXPECT_TRUE(resolver.Resolve({{"0", 1001}}).allocations.empty());
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "gone"), 1);
  EXPECT_EQ(resolver.cache_size(), 0u);
}

TEST(ProcResolverTest, SteadyStateReadsNoFiles) {
  TempProc proc;
  ProcResolver resolver(proc.root(), ProcResolver::Options{.revalidate_every_cycles = 0});
  AttributionUpdate first = resolver.Resolve({{"0", 1001}, {"1", 2001}});
  ASSERT_EQ(first.allocations.size(), 2u);
  // With the files gone, any read would fail: the same answer proves the cycle was served from the cache.
  fs::remove_all(proc.root() + "/1001");
  fs::remove_all(proc.root() + "/2001");
  for (int i = 0; i < 3; ++i) {
    AttributionUpdate again = resolver.Resolve({{"0", 1001}, {"1", 2001}});
    ASSERT_EQ(again.allocations.size(), 2u);
    EXPECT_EQ(again.allocations[0].job_id, first.allocations[0].job_id);
  }
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "job"), 2);
}

TEST(ProcResolverTest, CacheDropsPidsNoLongerListed) {
  ProcResolver resolver(kFixture);
  resolver.Resolve({{"0", 1001}, {"1", 1002}, {"2", 3001}});
  EXPECT_EQ(resolver.cache_size(), 3u);
  resolver.Resolve({{"0", 1001}});
  EXPECT_EQ(resolver.cache_size(), 1u);
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_cache_entries", ""), 1);
  // A dropped pid listed again is looked up again.
  resolver.Resolve({{"0", 1001}, {"1", 1002}});
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "job"), 3);
}

TEST(ProcResolverTest, ReusedPidIsDetectedByStartTimeOnRevalidation) {
  TempProc proc;
  ProcResolver resolver(proc.root(), ProcResolver::Options{.revalidate_every_cycles = 2});
  ASSERT_NE(Find(resolver.Resolve({{"0", 1001}}), "0", "1234"), nullptr);
  // Pid 1001 now belongs to another process (new start time) of job 777.
  std::ifstream in(kFixture + "/1001/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  stat.replace(stat.find(" 8812345 "), 9, " 8899999 ");
  proc.Write("1001/stat", stat);
  proc.Write("1001/cgroup", "0::/slurm/job_777/step_0/user/task_0\n");
  // Cycle 2: not yet due for revalidation, the cache answers.
  EXPECT_NE(Find(resolver.Resolve({{"0", 1001}}), "0", "1234"), nullptr);
  // Cycle 3: due; the start time differs, so the pid is parsed again.
  AttributionUpdate update = resolver.Resolve({{"0", 1001}});
  EXPECT_EQ(Find(update, "0", "1234"), nullptr);
  EXPECT_NE(Find(update, "0", "777"), nullptr);
}

TEST(ProcResolverTest, SamePidAndStartTimeIsNotReparsedOnRevalidation) {
  TempProc proc;
  ProcResolver resolver(proc.root(), ProcResolver::Options{.revalidate_every_cycles = 1});
  resolver.Resolve({{"0", 1001}});
  proc.Write("1001/cgroup", "0::/slurm/job_777/step_0/user/task_0\n");  // start time unchanged
  EXPECT_NE(Find(resolver.Resolve({{"0", 1001}}), "0", "1234"), nullptr);
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "job"), 1);
}

TEST(ProcResolverTest, UnreadableEnvironFallsBackToTheCgroupAndIsCounted) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file; EACCES cannot be produced";
  TempProc proc;
  fs::permissions(proc.root() + "/1001/environ", fs::perms::none);
  ProcResolver resolver(proc.root());
  AttributionUpdate update = resolver.Resolve({{"0", 1001}});
  const Allocation* a = Find(update, "0", "1234");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rank, "");
  EXPECT_EQ(FindJob(update, "1234")->uid, "1001");  // from the v1 path
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_environ_total", "denied"), 1);
}

TEST(ProcResolverTest, EnvironThatIsNotAFileIsTreatedLikeDenied) {
  // Works as root too: reading a directory fails with EISDIR, which takes the same cgroup-only path.
  TempProc proc;
  fs::remove(proc.root() + "/1001/environ");
  fs::create_directory(proc.root() + "/1001/environ");
  ProcResolver resolver(proc.root());
  AttributionUpdate update = resolver.Resolve({{"0", 1001}});
  const Allocation* a = Find(update, "0", "1234");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rank, "");
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_environ_total", "denied"), 1);
}

// A child with Slurm variables in its environment, in this test's own (non-Slurm) cgroup.
TEST(ProcResolverRealProcTest, ChildWithSlurmEnvironmentIsAttributedThroughEnviron) {
  std::ifstream self_cgroup("/proc/self/cgroup");
  std::string cgroup((std::istreambuf_iterator<char>(self_cgroup)), std::istreambuf_iterator<char>());
  if (ParseProcCgroup(cgroup).has_value()) GTEST_SKIP() << "this test itself runs inside a Slurm job";

  int exec_pipe[2];
  ASSERT_EQ(::pipe2(exec_pipe, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char arg0[] = "sleep";
    char arg1[] = "30";
    char* argv[] = {arg0, arg1, nullptr};
    char e0[] = "SLURM_JOB_ID=4242";
    char e1[] = "SLURM_PROCID=6";
    char e2[] = "SLURM_STEP_ID=0";
    char e3[] = "SLURM_JOB_ACCOUNT=testacct";
    char e4[] = "SECRET_TOKEN=must-not-leak";
    char* envp[] = {e0, e1, e2, e3, e4, nullptr};
    ::execve("/bin/sleep", argv, envp);
    ::_exit(127);
  }
  ::close(exec_pipe[1]);
  char byte;
  // EOF once execve closed the write end (O_CLOEXEC): from then on /proc/<child>/environ is sleep's.
  ASSERT_EQ(::read(exec_pipe[0], &byte, 1), 0);
  ::close(exec_pipe[0]);

  ProcResolver resolver("/proc");
  AttributionUpdate update = resolver.Resolve({{"0", static_cast<uint32_t>(child)}});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  const Allocation* a = Find(update, "0", "4242");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rank, "6");
  EXPECT_EQ(a->step_id, "0");
  const JobInfo* job = FindJob(update, "4242");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->account, "testacct");
  EXPECT_EQ(job->uid, std::to_string(::getuid()));  // from status
  // Real /proc: the name comes from getpwuid_r (empty only where this uid has no passwd entry).
  const struct passwd* pw = ::getpwuid(::getuid());
  EXPECT_EQ(job->user, pw != nullptr ? std::string(pw->pw_name) : std::string());
}

TEST(ProcResolverRealProcTest, ExitedChildIsGoneNotAnError) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  ProcResolver resolver("/proc");
  EXPECT_TRUE(resolver.Resolve({{"0", static_cast<uint32_t>(child)}}).allocations.empty());
  EXPECT_EQ(Metric(resolver, "gpuscope_attribution_proc_lookups_total", "gone"), 1);
}

}  // namespace
}  // namespace gpuscope
