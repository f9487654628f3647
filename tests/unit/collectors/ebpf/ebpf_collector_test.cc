// ProcessJob: the job the ebpf collector ties a record's process to, on a fixture /proc: the process's own
// cgroup, its parent's when it has exited, the node state's GPU processes when no cgroup names a job.
#include "src/collectors/ebpf/ebpf_collector.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "src/node/node_state.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class ProcessJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpuscope-ebpf-proc-" + std::to_string(::getpid()));
    fs::create_directories(root_);
    Cgroup(100, "4:memory:/slurm/uid_1001/job_4242/step_0/task_0\n0::/\n");
    Cgroup(200, "0::/user.slice/user-1001.slice/session-3.scope\n");
    node_.gpu_processes().Update(
        {{"0", "00000000:18:00.0", 200, "77"}, {"1", "00000000:2a:00.0", 600, "88"}});
  }
  void TearDown() override { fs::remove_all(root_); }

  void Cgroup(uint32_t pid, const std::string& content) {
    fs::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "cgroup") << content;
  }
  std::string Job(uint32_t tgid, uint32_t ppid, bool with_node = true) {
    return ProcessJob(root_.string(), with_node ? &node_ : nullptr, tgid, ppid);
  }

  fs::path root_;
  NodeState node_;
};

TEST_F(ProcessJobTest, TheProcesssOwnSlurmCgroupNamesTheJob) { EXPECT_EQ(Job(100, 0), "4242"); }

TEST_F(ProcessJobTest, AnExitedProcessTakesItsParentsJob) {
  EXPECT_EQ(Job(300, 100), "4242");
  EXPECT_EQ(Job(300, 0), "");  // no parent known
}

TEST_F(ProcessJobTest, WithoutAJobCgroupTheNodeStatesGpuProcessesDecide) {
  EXPECT_EQ(Job(200, 0), "77");       // a GPU process attribution tied to job 77 (environ)
  EXPECT_EQ(Job(200, 0, false), "");  // without node state: no job
  EXPECT_EQ(Job(500, 600), "88");     // exited, its parent a GPU process of job 88
  EXPECT_EQ(Job(100, 600), "4242");   // the cgroup comes first
  EXPECT_EQ(Job(999, 998), "");       // nobody knows it
}

}  // namespace
}  // namespace gpuscope
