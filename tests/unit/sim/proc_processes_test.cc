// proc_processes: real processes marked in their environment appear as GPU processes on the GPUs of
// their CUDA_VISIBLE_DEVICES / GPUSCOPE_SIM_GPUS, their GPUs run the workload and the others are idle;
// and the per-GPU `minor` override. Drives the built libnvidia-ml.so.1 with a real child process.
#include "sim/proc_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "sim/scenario.h"
#include "src/platform/nvml/nvml_api.h"

namespace {

using gpuscope::sim::ParseMarkedProcess;

std::string Env(std::initializer_list<const char*> entries) {
  std::string text;
  for (const char* e : entries) text += std::string(e) + '\0';
  return text;
}

TEST(SimProcProcesses, MarkedProcessRunsOnItsCudaVisibleDevicesAndTheOverrideWins) {
  auto gpus = ParseMarkedProcess(Env({"A=1", "GPUSCOPE_SIM_GPU_PROCESS=1", "CUDA_VISIBLE_DEVICES=3,1,3"}),
                                 "GPUSCOPE_SIM_GPU_PROCESS", 8);
  ASSERT_TRUE(gpus);
  EXPECT_EQ(*gpus, (std::vector<unsigned>{1, 3}));
  gpus =
      ParseMarkedProcess(Env({"GPUSCOPE_SIM_GPUS=5", "GPUSCOPE_SIM_GPU_PROCESS=1", "CUDA_VISIBLE_DEVICES=0"}),
                         "GPUSCOPE_SIM_GPU_PROCESS", 8);
  EXPECT_EQ(*gpus, (std::vector<unsigned>{5}));
}

TEST(SimProcProcesses, UnmarkedProcessesAndForeignDeviceNamesAreIgnored) {
  EXPECT_FALSE(ParseMarkedProcess(Env({"CUDA_VISIBLE_DEVICES=0"}), "GPUSCOPE_SIM_GPU_PROCESS", 8));
  EXPECT_FALSE(ParseMarkedProcess(Env({"GPUSCOPE_SIM_GPU_PROCESS=0", "CUDA_VISIBLE_DEVICES=0"}),
                                  "GPUSCOPE_SIM_GPU_PROCESS", 8));
  EXPECT_FALSE(ParseMarkedProcess(Env({"XGPUSCOPE_SIM_GPU_PROCESS=1"}), "GPUSCOPE_SIM_GPU_PROCESS", 8));
  auto gpus = ParseMarkedProcess(
      Env({"GPUSCOPE_SIM_GPU_PROCESS=1", "CUDA_VISIBLE_DEVICES=GPU-0a1b,9,,2,-1,NoDevFiles"}),
      "GPUSCOPE_SIM_GPU_PROCESS", 8);
  EXPECT_EQ(*gpus, (std::vector<unsigned>{2}));
}

std::string Marker() {
  static const std::string marker = "GPUSCOPE_TEST_MARK_" + std::to_string(getpid());
  return marker;
}

TEST(SimProcProcesses, ScenarioKeysParseWithDefaultsAndTyposAreErrors) {
  auto parsed = gpuscope::sim::ParseScenario(
      "proc_processes: {}\ngpus: {count: 2, model: h100, overrides: {1: {minor: 5}}}\n");
  ASSERT_TRUE(std::holds_alternative<gpuscope::sim::Scenario>(parsed));
  const auto& scenario = std::get<gpuscope::sim::Scenario>(parsed);
  EXPECT_TRUE(scenario.proc_processes.enabled);
  EXPECT_EQ(scenario.proc_processes.marker, "GPUSCOPE_SIM_GPU_PROCESS");
  EXPECT_EQ(scenario.proc_processes.memory_gib, 2);
  EXPECT_EQ(scenario.gpus[0].minor, -1);
  EXPECT_EQ(scenario.gpus[1].minor, 5);
  auto typo = gpuscope::sim::ParseScenario("proc_processes: {marke: X}\ngpus: {count: 1, model: h100}\n");
  ASSERT_TRUE(std::holds_alternative<gpuscope::sim::ScenarioError>(typo));
  EXPECT_NE(std::get<gpuscope::sim::ScenarioError>(typo).message.find("marke"), std::string::npos);
}

class SimProcNvml : public ::testing::Test {
 protected:
  void TearDown() override {
    while (nvmlShutdown() == NVML_SUCCESS) {
    }
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    unsetenv("GPUSCOPE_SIM_TIME");
  }

  // A child that sleeps with the marker and the given CUDA_VISIBLE_DEVICES in its environment.
  void StartMarkedChild(const char* cuda_visible_devices) {
    const std::string marker = Marker();  // before fork: the name holds the test process's pid
    child_ = fork();
    if (child_ == 0) {
      setenv(marker.c_str(), "1", 1);
      setenv("CUDA_VISIBLE_DEVICES", cuda_visible_devices, 1);
      if (freopen("/dev/null", "w", stdout) == nullptr || freopen("/dev/null", "w", stderr) == nullptr)
        _exit(126);
      execl("/bin/sleep", "sleep", "120", static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(child_, 0);
    // Wait until exec has replaced the environment (the scanner reads /proc/<pid>/environ).
    for (int i = 0; i < 5000; ++i) {
      std::ifstream in("/proc/" + std::to_string(child_) + "/environ", std::ios::binary);
      std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (environ.find(Marker() + "=1") != std::string::npos) return;
      usleep(1000);
    }
    FAIL() << "child environment never showed the marker";
  }

  void Init(const std::string& yaml) {
    const std::string path = ::testing::TempDir() + "/sim_proc_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
    std::ofstream(path) << yaml;
    setenv("GPUSCOPE_SIM_SCENARIO", path.c_str(), 1);
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }

  static nvmlDevice_t Dev(unsigned i) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    return d;
  }

  static std::vector<nvmlProcessInfo_t> Processes(unsigned gpu) {
    std::vector<nvmlProcessInfo_t> infos(16);
    unsigned count = static_cast<unsigned>(infos.size());
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(gpu), &count, infos.data()), NVML_SUCCESS);
    infos.resize(count);
    return infos;
  }

  static unsigned Util(unsigned gpu) {
    nvmlUtilization_t u{};
    EXPECT_EQ(nvmlDeviceGetUtilizationRates(Dev(gpu), &u), NVML_SUCCESS);
    return u.gpu;
  }

  pid_t child_ = -1;
};

// Unique per test process, so that concurrent runs (or a leftover child) never see each other's children.
std::string Scenario() {
  return "proc_processes: {marker: " + Marker() +
         ", memory_gib: 3}\n"
         "gpus: {count: 4, model: h100, workload: {type: training}, overrides: {2: {minor: 7}}}\n";
}

TEST_F(SimProcNvml, MarkedChildIsAProcessOnItsGpusWhichWorkWhileTheOthersAreIdle) {
  StartMarkedChild("1,3");
  Init(Scenario());
  for (unsigned gpu : {1u, 3u}) {
    std::vector<nvmlProcessInfo_t> list = Processes(gpu);
    ASSERT_EQ(list.size(), 1u) << "gpu " << gpu;
    EXPECT_EQ(list[0].pid, static_cast<unsigned>(child_))
        << list[0].usedGpuMemory << " " << list[0].gpuInstanceId;
    EXPECT_EQ(list[0].usedGpuMemory, 3ull << 30);
    EXPECT_GT(Util(gpu), 0u);
  }
  for (unsigned gpu : {0u, 2u}) {
    EXPECT_TRUE(Processes(gpu).empty()) << "gpu " << gpu;
    EXPECT_EQ(Util(gpu), 0u);
  }
}

TEST_F(SimProcNvml, ChildGoneMeansNoProcessAndAnIdleGpuAfterTheRescan) {
  StartMarkedChild("0");
  Init(Scenario());
  ASSERT_EQ(Processes(0).size(), 1u);
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
  child_ = -1;
  bool gone = false;
  for (int i = 0; i < 5000 && !gone; ++i) {  // the scan is cached for 250 ms
    gone = Processes(0).empty();
    if (!gone) usleep(1000);
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(Util(0), 0u);
}

TEST_F(SimProcNvml, MinorNumberOverrideDiffersFromTheIndex) {
  Init(Scenario());
  unsigned minor = 0;
  ASSERT_EQ(nvmlDeviceGetMinorNumber(Dev(2), &minor), NVML_SUCCESS);
  EXPECT_EQ(minor, 7u);
  ASSERT_EQ(nvmlDeviceGetMinorNumber(Dev(1), &minor), NVML_SUCCESS);
  EXPECT_EQ(minor, 1u);
}

}  // namespace
