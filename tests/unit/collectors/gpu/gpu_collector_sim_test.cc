// The GPU collector against the NVML simulator (sim/): the production path, dlopen'ed through
// NvmlLibrary, with scenario files from sim/scenarios and simulated time frozen by GPUSCOPE_SIM_TIME.
// ctest runs each test in its own process, so each may pick its own scenario.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "sim/control.h"
#include "src/collectors/gpu/gpu_collector.h"
#include "src/node/node_state.h"
#include "tests/unit/collectors/gpu/gpu_test_util.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using testing::FindFamily;
using testing::FindSample;
using testing::LabelNames;
using testing::LabelValue;

void SetTime(double time_s) {
  testing::SetSimTime(time_s, {{GPUSCOPE_SIM_NVML_PATH, gpuscope::sim::kSimSetTimeSymbol}});
}
void UseScenario(const std::string& name, double time_s) {
  setenv("GPUSCOPE_SIM_SCENARIO", (std::string(GPUSCOPE_SIM_SCENARIOS) + "/" + name).c_str(), 1);
  SetTime(time_s);
}
// Writes a scenario of the test's own into the temporary directory and selects it.
void UseScenarioText(const std::string& name, const std::string& yaml, double time_s) {
  const std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << yaml;
  setenv("GPUSCOPE_SIM_SCENARIO", path.c_str(), 1);
  SetTime(time_s);
}

GpuCollectorOptions SimOptions(DcgmCompat compat = DcgmCompat::kDcgm3) {
  GpuCollectorOptions options;
  options.nvml_library = GPUSCOPE_SIM_NVML_PATH;
  options.hostname = "sim-node";
  options.dcgm_compat = compat;
  // Long enough for a healthy GPU's open and first read on a loaded machine; slow GPUs take far longer.
  options.call_deadline = std::chrono::milliseconds(2000);
  options.event_wait = std::chrono::milliseconds(20);
  return options;
}

double Up(const std::vector<MetricFamily>& out, int gpu) {
  const Sample* s = FindSample(out, "gpuscope_gpu_up", {{"gpu", std::to_string(gpu)}});
  return s == nullptr ? -1 : s->value;
}

TEST(GpuCollectorSimTest, H100ReportsEveryDefaultDcgmFieldOnEveryGpuWithDcgmLabels) {
  UseScenario("h100-training.yaml", 100);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  SetTime(101);  // GPM metrics need a second sample, over a non-empty interval
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  const char* kDefaults[] = {"DCGM_FI_DEV_SM_CLOCK",
                             "DCGM_FI_DEV_MEM_CLOCK",
                             "DCGM_FI_DEV_MEMORY_TEMP",
                             "DCGM_FI_DEV_GPU_TEMP",
                             "DCGM_FI_DEV_POWER_USAGE",
                             "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                             "DCGM_FI_DEV_GPU_UTIL",
                             "DCGM_FI_DEV_MEM_COPY_UTIL",
                             "DCGM_FI_DEV_ENC_UTIL",
                             "DCGM_FI_DEV_DEC_UTIL",
                             "DCGM_FI_DEV_XID_ERRORS",
                             "DCGM_FI_DEV_FB_FREE",
                             "DCGM_FI_DEV_FB_USED",
                             "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
                             "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                             "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
                             "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                             "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                             "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                             "DCGM_FI_PROF_DRAM_ACTIVE",
                             "DCGM_FI_PROF_PCIE_TX_BYTES",
                             "DCGM_FI_PROF_PCIE_RX_BYTES"};
  for (const char* name : kDefaults) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      const Sample* s = FindSample(out, name, {{"gpu", std::to_string(gpu)}});
      ASSERT_NE(s, nullptr) << name << " gpu " << gpu;
      std::vector<std::string> expected = {
          "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"};
      if (LabelValue(s->labels, "GPU_I_ID") != "<absent>") {
        expected.insert(expected.begin() + 5, {"GPU_I_PROFILE", "GPU_I_ID"});
      }
      EXPECT_EQ(LabelNames(s->labels), expected) << name;
    }
  }
  const Sample* temp = FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "3"}});
  EXPECT_EQ(LabelValue(temp->labels, "DCGM_FI_DRIVER_VERSION"), "550.90.07");
  EXPECT_EQ(LabelValue(temp->labels, "device"), "nvidia3");
  EXPECT_THAT(LabelValue(temp->labels, "modelName"), ::testing::HasSubstr("H100"));
  for (const char* ratio : {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"}) {
    for (const Sample& s : FindFamily(out, ratio)->samples) {
      EXPECT_GE(s.value, 0) << ratio;
      EXPECT_LE(s.value, 1) << ratio;
    }
  }
}

TEST(GpuCollectorSimTest, GpuFallenOffTheBusIsDownWhileTheOthersReport) {
  UseScenario("h100-faults.yaml", 80);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, 1), 1);
  SetTime(160);  // GPU 1 fell off the bus at 120 s; GPU 6's slow calls ended at 150 s
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, 1), 0);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "1"}}), nullptr);
  for (int gpu : {0, 2, 3, 4, 5, 7}) {
    EXPECT_EQ(Up(out, gpu), 1) << gpu;
    EXPECT_NE(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", std::to_string(gpu)}}), nullptr) << gpu;
  }
}

TEST(GpuCollectorSimTest, SlowCallsReportThatGpuDownWithinTheDeadlineAndItRecovers) {
  // GPU 6: every call takes 1.5 s from t=90 to t=150. Starting inside the window, its open is slow too.
  UseScenario("h100-faults.yaml", 100);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, 6), 0);
  EXPECT_EQ(Up(out, 0), 1);
  EXPECT_EQ(Up(out, 7), 1);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_POWER_USAGE", {{"gpu", "7"}}), nullptr);
  SetTime(200);  // past the slow window: the worker's current call ends, the next ones are fast
  double up = 0;
  for (int cycle = 0; cycle < 200 && up != 1; ++cycle) {
    out.clear();
    collector.Collect(out);
    up = Up(out, 6);
    if (up != 1) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(up, 1);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_POWER_USAGE", {{"gpu", "6"}}), nullptr);
  EXPECT_NE(LabelValue(FindSample(out, "gpuscope_gpu_up", {{"gpu", "6"}})->labels, "UUID"), "");
}

TEST(GpuCollectorSimTest, GpuHungFromStartIsDownInTheFirstCycleWhileTheOthersReport) {
  UseScenarioText("gpu_hung_at_start", R"(
gpus: {count: 8, model: h100-sxm, workload: {type: training}}
faults:
  - {type: hang, gpu: 3, from: 0, to: 1000}
)",
                  10);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  // Before, the collector opened every GPU in the first Collect() and this call never returned.
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, 3), 0);
  for (int gpu : {0, 1, 2, 4, 5, 6, 7}) {
    EXPECT_EQ(Up(out, gpu), 1) << gpu;
    EXPECT_NE(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", std::to_string(gpu)}}), nullptr) << gpu;
  }
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "3"}}), nullptr);
  const Sample* down = FindSample(out, "gpuscope_gpu_up", {{"gpu", "3"}});
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(LabelValue(down->labels, "UUID"), "");
  SetTime(2000);  // the hang ends: the open finishes and the GPU's real labels take over
  double up = 0;
  for (int cycle = 0; cycle < 200 && up != 1; ++cycle) {
    out.clear();
    collector.Collect(out);
    up = Up(out, 3);
    if (up != 1) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(up, 1);
  const Sample* back = FindSample(out, "gpuscope_gpu_up", {{"gpu", "3"}});
  EXPECT_THAT(LabelValue(back->labels, "UUID"), ::testing::StartsWith("GPU-"));
  EXPECT_EQ(LabelValue(back->labels, "device"), "nvidia3");
  EXPECT_NE(FindSample(out, "gpuscope_gpu_info", {{"gpu", "3"}}), nullptr);
}

TEST(GpuCollectorSimTest, GpuFallenOffTheBusAtStartIsDownWithPlaceholderLabels) {
  UseScenarioText("gpu_lost_at_start", R"(
gpus: {count: 8, model: h100-sxm, workload: {type: training}}
faults:
  - {type: fall_off_bus, gpu: 4, at: 0}
)",
                  10);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  const Sample* down = FindSample(out, "gpuscope_gpu_up", {{"gpu", "4"}});
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->value, 0);
  // The family's label set, with every identity label but the host and driver empty (absent for
  // Prometheus): gpuscope_gpu_up{gpu="4",Hostname="sim-node",DCGM_FI_DRIVER_VERSION="550.90.07"} 0.
  EXPECT_EQ(down->labels, (Labels{{"gpu", "4"},
                                  {"UUID", ""},
                                  {"pci_bus_id", ""},
                                  {"device", ""},
                                  {"modelName", ""},
                                  {"Hostname", "sim-node"},
                                  {"DCGM_FI_DRIVER_VERSION", "550.90.07"}}));
  EXPECT_EQ(LabelNames(down->labels), LabelNames(FindSample(out, "gpuscope_gpu_up", {{"gpu", "0"}})->labels));
  EXPECT_EQ(FindSample(out, "gpuscope_gpu_info", {{"gpu", "4"}}), nullptr);
  for (int gpu : {0, 1, 2, 3, 5, 6, 7}) EXPECT_EQ(Up(out, gpu), 1) << gpu;
  // Still lost on the next cycles (the open is retried at most every init_retry_interval).
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, 4), 0);
}

TEST(GpuCollectorSimTest, XidEventsOfAGpuThatOpensLateAreCountedOnceAndEarlierCountsKept) {
  // GPU 1 hangs until t=20; its XID 31 (t=10) is pending when it finally opens. The simulator delivers
  // an event set every past event of its GPUs, so watching GPU 0 again would count its XID 13 twice.
  UseScenarioText("xid_late_open", R"(
gpus: {count: 2, model: h100-sxm}
faults:
  - {type: hang, gpu: 1, from: 0, to: 20}
  - {type: xid, gpu: 0, at: 5, code: 13}
  - {type: xid, gpu: 1, at: 10, code: 31}
)",
                  15);
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  auto count = [&out](const char* gpu, const char* xid) {
    const Sample* s = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", gpu}, {"xid", xid}});
    return s == nullptr ? 0.0 : s->value;
  };
  for (int cycle = 0; cycle < 100 && count("0", "13") == 0; ++cycle) {
    out.clear();
    collector.Collect(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(count("0", "13"), 1);
  EXPECT_EQ(Up(out, 1), 0);
  SetTime(30);
  for (int cycle = 0; cycle < 200 && (Up(out, 1) != 1 || count("1", "31") == 0); ++cycle) {
    out.clear();
    collector.Collect(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(Up(out, 1), 1);
  EXPECT_EQ(count("1", "31"), 1);
  for (int cycle = 0; cycle < 3; ++cycle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    out.clear();
    collector.Collect(out);
  }
  EXPECT_EQ(count("0", "13"), 1);
  EXPECT_EQ(count("1", "31"), 1);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "1"}})->value, 31);
}

TEST(GpuCollectorSimTest, XidEventsAreCountedOnceEach) {
  UseScenario("h100-faults.yaml", 50);  // GPU 2: XID 13 at 30 s and XID 31 at 45 s
  GpuCollector collector(SimOptions());
  std::vector<MetricFamily> out;
  const Sample* x13 = nullptr;
  const Sample* x31 = nullptr;
  for (int cycle = 0; cycle < 100 && (x13 == nullptr || x31 == nullptr); ++cycle) {
    out.clear();
    collector.Collect(out);
    x13 = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "2"}, {"xid", "13"}});
    x31 = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "2"}, {"xid", "31"}});
    if (x13 == nullptr || x31 == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(x13, nullptr);
  ASSERT_NE(x31, nullptr);
  for (int cycle = 0; cycle < 3; ++cycle) {
    out.clear();
    collector.Collect(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  EXPECT_EQ(FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "2"}, {"xid", "13"}})->value, 1);
  EXPECT_EQ(FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "2"}, {"xid", "31"}})->value, 1);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "2"}})->value, 31);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "0"}})->value, 0);
}

TEST(GpuCollectorSimTest, MigInstancesCarryProfileAndInstanceLabels) {
  UseScenario("a100-mig.yaml", 100);
  GpuCollector collector(SimOptions(DcgmCompat::kDcgm49));
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  SetTime(101);
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  const Sample* fb = FindSample(out, "DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"GPU_I_ID", "1"}});
  ASSERT_NE(fb, nullptr);
  EXPECT_EQ(LabelValue(fb->labels, "GPU_I_PROFILE"), "3g.40gb");
  EXPECT_THAT(LabelNames(fb->labels),
              ElementsAre("gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID",
                          "hostname", "DCGM_FI_DRIVER_VERSION"));
  EXPECT_NE(FindSample(out, "gpuscope_gpu_mig_instance_info",
                       {{"gpu", "1"}, {"GPU_I_ID", "14"}, {"GPU_I_PROFILE", "1g.10gb"}}),
            nullptr);
  EXPECT_EQ(FindSample(out, "gpuscope_gpu_mig_instance_info", {{"gpu", "2"}}), nullptr);
  // Each instance names its MIG device by the UUID NVML gives the MIG handle (what CUDA_VISIBLE_DEVICES
  // and jobstats' mapping files use), distinct from the parent GPU's.
  std::set<std::string> mig_uuids;
  for (const Sample& s : FindFamily(out, "gpuscope_gpu_mig_instance_info")->samples) {
    std::string uuid = LabelValue(s.labels, "mig_uuid");
    EXPECT_THAT(uuid,
                ::testing::MatchesRegex("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
    EXPECT_NE(uuid, LabelValue(s.labels, "UUID"));
    mig_uuids.insert(uuid);
  }
  EXPECT_EQ(mig_uuids.size(), FindFamily(out, "gpuscope_gpu_mig_instance_info")->samples.size());
  // Whole-GPU series of a non-MIG GPU: MIG labels empty (absent for Prometheus).
  EXPECT_EQ(LabelValue(FindSample(out, "DCGM_FI_DEV_FB_USED", {{"gpu", "2"}})->labels, "GPU_I_ID"), "");
  // NOT_SUPPORTED on one GPU only: utilisation is gone on the MIG parents, present on the others.
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}}), nullptr);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", "2"}}), nullptr);
  // A100: no GPM, so no DCGM_FI_PROF_* activity, but PCIe bytes come from nvmlDeviceGetPcieThroughput.
  EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr);
  EXPECT_NE(FindSample(out, "DCGM_FI_PROF_PCIE_TX_BYTES", {{"gpu", "2"}}), nullptr);
  EXPECT_EQ(Up(out, 0), 1);
}

TEST(GpuCollectorSimTest, PublishesATypedInventoryAndMarksEverySampleWithItsSubject) {
  UseScenario("a100-mig.yaml", 100);
  NodeState node;
  GpuCollectorOptions options = SimOptions();
  options.node_state = &node;
  GpuCollector collector(options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  std::shared_ptr<const GpuInventory> inventory = node.gpus().Current();
  ASSERT_EQ(inventory->devices.size(), 4u);
  EXPECT_EQ(inventory->host_label, "Hostname");
  EXPECT_EQ(inventory->hostname, "sim-node");
  for (const GpuDeviceInventory& device : inventory->devices) {
    const std::string gpu = std::to_string(device.index);
    const Sample* info = FindSample(out, "gpuscope_gpu_info", {{"gpu", gpu}});
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(device.opened && device.up);
    EXPECT_EQ(device.uuid, LabelValue(info->labels, "UUID"));
    EXPECT_EQ(device.pci_bus_id, LabelValue(info->labels, "pci_bus_id"));
    EXPECT_EQ("nvidia" + std::to_string(device.minor), LabelValue(info->labels, "device"));
    EXPECT_EQ(device.model, LabelValue(info->labels, "modelName"));
    EXPECT_TRUE(device.processes_listed);
  }
  // GPU 0: four MIG instances, each with its GPU_I_ID and its own MIG UUID.
  const GpuDeviceInventory& mig_parent = inventory->devices[0];
  ASSERT_EQ(mig_parent.mig.size(), 4u);
  EXPECT_EQ(mig_parent.mig[0].gpu_instance_id, 1u);
  EXPECT_EQ(mig_parent.mig[0].profile, "3g.40gb");
  ASSERT_FALSE(mig_parent.mig[0].uuids.empty());
  EXPECT_TRUE(mig_parent.mig[0].uuids[0].starts_with("MIG-")) << mig_parent.mig[0].uuids[0];
  EXPECT_NE(mig_parent.mig[0].uuids, mig_parent.mig[1].uuids);
  EXPECT_FALSE(mig_parent.gpu_utilization.has_value()) << "NOT_SUPPORTED on a MIG parent";
  ASSERT_TRUE(inventory->devices[2].gpu_utilization.has_value());
  EXPECT_TRUE(inventory->devices[2].mig.empty());
  // Processes: the ones NVML listed, with their MIG instance where they run in one.
  size_t process_samples = FindFamily(out, "gpuscope_gpu_process_memory_bytes")->samples.size();
  ASSERT_GT(process_samples, 0u);
  EXPECT_EQ(inventory->processes.size(), process_samples);
  for (const Sample& s : FindFamily(out, "gpuscope_gpu_process_memory_bytes")->samples) {
    EXPECT_NE(s.subject.pid, 0u);
    EXPECT_EQ(LabelValue(s.labels, "pid"), std::to_string(s.subject.pid));
    EXPECT_EQ(LabelValue(s.labels, "GPU_I_ID"),
              s.subject.gpu_instance == SampleSubject::kNone ? "" : std::to_string(s.subject.gpu_instance));
  }
  // Every sample says which GPU (and MIG instance) it is about, as its labels do; the node-wide families
  // (the profiling pause, the DCGM connection) carry the Hostname alone and no GPU.
  for (const MetricFamily& family : out) {
    if (family.name.starts_with("gpuscope_profiling_") || family.name.starts_with("gpuscope_dcgm_connects") ||
        family.name == "gpuscope_dcgm_up") {
      for (const Sample& s : family.samples) {
        EXPECT_EQ(s.subject.gpu, SampleSubject::kNone) << family.name;
        EXPECT_EQ(LabelValue(s.labels, "gpu"), "<absent>") << family.name;
      }
      continue;
    }
    for (const Sample& s : family.samples) {
      ASSERT_NE(s.subject.gpu, SampleSubject::kNone) << family.name;
      EXPECT_EQ(LabelValue(s.labels, "gpu"), std::to_string(s.subject.gpu)) << family.name;
      if (family.name != "gpuscope_gpu_process_memory_bytes" &&
          s.subject.gpu_instance != SampleSubject::kNone) {
        EXPECT_EQ(LabelValue(s.labels, "GPU_I_ID"), std::to_string(s.subject.gpu_instance)) << family.name;
      }
    }
  }
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// Steady state builds no label sets: every series of a later cycle carries the very set (same storage)
// it carried the cycle before, values alone change. This is what keeps collection from churning memory.
TEST(GpuCollectorSimTest, SteadyStateCyclesReuseEverySeriesLabelSet) {
  UseScenario("h100-training.yaml", 200);
  GpuCollector collector(SimOptions());
  std::map<std::pair<std::string, Labels>, const void*> first;
  for (int cycle = 0; cycle < 4; ++cycle) {
    SetTime(201 + cycle);
    std::vector<MetricFamily> out;
    ASSERT_TRUE(collector.Collect(out).ok());
    if (cycle < 2) continue;  // the first cycles open devices and start GPM
    size_t compared = 0;
    for (const MetricFamily& family : out) {
      for (const Sample& sample : family.samples) {
        auto [it, inserted] = first.try_emplace({family.name, sample.labels}, sample.labels.identity());
        if (!inserted) {
          ++compared;
          EXPECT_EQ(it->second, sample.labels.identity()) << family.name;
        }
      }
    }
    if (cycle == 3) {
      EXPECT_GT(compared, 1000u);  // 8 GPUs, every family
    }
  }
}

}  // namespace
}  // namespace gpuscope
