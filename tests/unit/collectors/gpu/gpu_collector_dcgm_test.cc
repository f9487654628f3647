// The GPU collector with its DCGM backend against the stand-in libdcgm.so.4 (sim/dcgm/) and the NVML
// simulator, both driven by one scenario with simulated time frozen (GPUSCOPE_SIM_TIME) and moved through
// each library's control: the profiling fields on GPUs without GPM, with dcgm-exporter's names and labels;
// MIG GPU instances; nothing of DCGM without the library; the profiling pause; health incidents; a host
// engine that restarts. The backend's own thread polls every 20 ms; the tests wait for what it must reach
// (bounded waits, never a timing assertion).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sim/control.h"
#include "sim/dcgm/dcgm_control.h"
#include "src/collectors/gpu/gpu_collector.h"
#include "src/node/node_state.h"
#include "tests/unit/collectors/gpu/gpu_test_util.h"

namespace gpuscope {
namespace {

using testing::FindFamily;
using testing::FindSample;
using testing::LabelNames;
using testing::LabelValue;

void SetTime(double time_s) {
  testing::SetSimTime(time_s, {{GPUSCOPE_SIM_NVML_PATH, gpuscope::sim::kSimSetTimeSymbol},
                               {GPUSCOPE_SIM_DCGM_PATH, gpuscope::sim::kSimDcgmSetTimeSymbol}});
}

void UseScenario(const std::string& name, double time_s) {
  setenv("GPUSCOPE_SIM_SCENARIO", (std::string(GPUSCOPE_SIM_SCENARIOS) + "/" + name).c_str(), 1);
  SetTime(time_s);
}

GpuCollectorOptions DcgmOptions(DcgmMode mode = DcgmMode::kEmbedded) {
  GpuCollectorOptions options;
  options.nvml_library = GPUSCOPE_SIM_NVML_PATH;
  options.hostname = "sim-node";
  options.call_deadline = std::chrono::milliseconds(2000);
  options.event_wait = std::chrono::milliseconds(20);
  options.dcgm = GpuCollectorOptions::Dcgm::kAuto;
  options.dcgm_options.libraries = {GPUSCOPE_SIM_DCGM_PATH};
  options.dcgm_options.mode = mode;
  options.dcgm_options.interval = std::chrono::milliseconds(20);
  options.dcgm_options.health_interval = std::chrono::milliseconds(20);
  options.dcgm_options.retry_interval = std::chrono::milliseconds(20);
  options.dcgm_options.health.fill(true);
  return options;
}

// Collects until `done` holds for the result (at most 30 s: the backend's thread runs on its own).
template <typename Predicate>
std::vector<MetricFamily> CollectUntil(GpuCollector& collector, Predicate done, const char* what) {
  std::vector<MetricFamily> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    out.clear();
    (void)collector.Collect(out);
    if (done(out)) return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "timed out waiting for " << what;
  return out;
}

double Value(const std::vector<MetricFamily>& out, std::string_view family, const Labels& match) {
  const Sample* s = FindSample(out, family, match);
  return s == nullptr ? -1 : s->value;
}

// Waits until the backend is connected, its watches set: only then may frozen time move on, so that the
// watches' first interval has an end.
void WaitConnected(GpuCollector& collector) {
  CollectUntil(
      collector, [](const auto& o) { return Value(o, "gpuscope_dcgm_up", {}) == 1; }, "DCGM connected");
}

bool HasProfiling(const std::vector<MetricFamily>& out, int gpus) {
  for (int gpu = 0; gpu < gpus; ++gpu) {
    if (FindSample(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"gpu", std::to_string(gpu)}}) == nullptr)
      return false;
  }
  return true;
}

TEST(GpuCollectorDcgmTest, A100GetsTheProfilingFieldsFromDcgmWithDcgmExporterNamesLabelsAndSensibleValues) {
  UseScenario("a100-dcgm.yaml", 30);
  GpuCollector collector(DcgmOptions());
  std::vector<MetricFamily> out;
  WaitConnected(collector);
  SetTime(40);  // DCGM's first watch interval completes
  out = CollectUntil(
      collector, [](const auto& o) { return HasProfiling(o, 4); }, "DCGM's profiling fields");
  for (int gpu = 0; gpu < 4; ++gpu) {
    const Labels match{{"gpu", std::to_string(gpu)}};
    const Sample* gr = FindSample(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", match);
    const Sample* tensor = FindSample(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", match);
    const Sample* dram = FindSample(out, "DCGM_FI_PROF_DRAM_ACTIVE", match);
    ASSERT_NE(tensor, nullptr);
    ASSERT_NE(dram, nullptr);
    // dcgm-exporter's labels: those of the NVML families, with the (empty) MIG instance slots.
    EXPECT_EQ(LabelNames(gr->labels),
              (std::vector<std::string>{"gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE",
                                        "GPU_I_ID", "Hostname", "DCGM_FI_DRIVER_VERSION"}));
    EXPECT_EQ(LabelValue(gr->labels, "GPU_I_ID"), "");
    EXPECT_GT(gr->value, 0.3) << "a training workload keeps the graphics engine busy";
    EXPECT_LE(gr->value, 1);
    EXPECT_GT(tensor->value, 0);
    EXPECT_LE(tensor->value, gr->value);
    EXPECT_GT(dram->value, 0);
    EXPECT_LE(dram->value, 1);
    EXPECT_GT(Value(out, "DCGM_FI_PROF_PCIE_RX_BYTES", match), 0);
    EXPECT_GT(Value(out, "DCGM_FI_PROF_NVLINK_TX_BYTES", match), 0);
    EXPECT_EQ(Value(out, "gpuscope_gpu_profiling_info", {{"gpu", std::to_string(gpu)}, {"source", "dcgm"}}),
              1);
  }
  const MetricFamily* gr = FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  EXPECT_EQ(gr->samples.size(), 4u) << "one series per GPU, no duplicate";
  EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_PCIE_TX_BYTES")->samples.size(), 4u)
      << "PCIe bytes from DCGM, not also from NVML's PCIe counters";
  EXPECT_EQ(Value(out, "gpuscope_dcgm_up", {{"mode", "embedded"}, {"Hostname", "sim-node"}}), 1);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_connects_total", {}), 1);
  EXPECT_EQ(Value(out, "gpuscope_profiling_paused", {}), 0);
}

TEST(GpuCollectorDcgmTest, MigGpuInstancesGetTheirOwnProfilingSeries) {
  UseScenario("a100-mig.yaml", 30);
  GpuCollector collector(DcgmOptions());
  std::vector<MetricFamily> out;
  WaitConnected(collector);
  SetTime(40);
  out = CollectUntil(
      collector,
      [](const auto& o) {
        return FindSample(o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"gpu", "0"}, {"GPU_I_ID", "13"}}) !=
                   nullptr &&
               FindSample(o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"gpu", "2"}}) != nullptr;
      },
      "per-instance profiling");
  const Sample* instance =
      FindSample(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"gpu", "0"}, {"GPU_I_ID", "13"}});
  EXPECT_EQ(LabelValue(instance->labels, "GPU_I_PROFILE"), "1g.10gb");
  EXPECT_GT(instance->value, 0);
  EXPECT_LE(instance->value, 1);
  const Sample* idle = FindSample(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"gpu", "0"}, {"GPU_I_ID", "14"}});
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->value, 0) << "the instance with load 0";
}

TEST(GpuCollectorDcgmTest, WithoutTheLibraryNothingOfDcgmAppearsAndOnReportsItDown) {
  UseScenario("a100-dcgm.yaml", 30);
  for (const auto mode : {GpuCollectorOptions::Dcgm::kAuto, GpuCollectorOptions::Dcgm::kOn}) {
    GpuCollectorOptions options = DcgmOptions();
    options.dcgm = mode;
    options.dcgm_options.libraries = {"/nonexistent/libdcgm.so.4", "/nonexistent/libdcgm.so.3"};
    GpuCollector collector(options);
    std::vector<MetricFamily> out;
    ASSERT_TRUE(collector.Collect(out).ok());
    SetTime(40);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    out.clear();
    ASSERT_TRUE(collector.Collect(out).ok());
    EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr);
    EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), nullptr);
    EXPECT_EQ(FindFamily(out, "gpuscope_gpu_profiling_info"), nullptr);
    EXPECT_EQ(FindFamily(out, "gpuscope_dcgm_health"), nullptr);
    EXPECT_NE(FindFamily(out, "DCGM_FI_PROF_PCIE_TX_BYTES"), nullptr)
        << "from NVML's PCIe counters, as before";
    EXPECT_NE(FindFamily(out, "DCGM_FI_DEV_GPU_UTIL"), nullptr);
    if (mode == GpuCollectorOptions::Dcgm::kAuto) {
      EXPECT_EQ(FindFamily(out, "gpuscope_dcgm_up"), nullptr);
    } else {
      EXPECT_EQ(Value(out, "gpuscope_dcgm_up", {}), 0);
    }
    SetTime(30);
  }
}

TEST(GpuCollectorDcgmTest, APauseTakesTheProfilingFieldsAwayPausesDcgmAndAResumeBringsThemBack) {
  UseScenario("a100-dcgm.yaml", 30);
  NodeState node;
  GpuCollectorOptions options = DcgmOptions();
  options.node_state = &node;
  GpuCollector collector(options);
  std::vector<MetricFamily> out;
  WaitConnected(collector);
  SetTime(40);
  CollectUntil(
      collector, [](const auto& o) { return HasProfiling(o, 4); }, "profiling before the pause");

  ASSERT_TRUE(node.profiling_pause().Pause(600, "ncu").ok());
  EXPECT_TRUE(node.profiling_pause().WaitForDcgm(node.profiling_pause().State().generation,
                                                 std::chrono::seconds(30)));
  EXPECT_EQ(node.profiling_pause().State().dcgm, "paused");
  SetTime(45);
  out = CollectUntil(
      collector, [](const auto& o) { return FindFamily(o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == nullptr; },
      "no profiling while paused");
  EXPECT_EQ(FindFamily(out, "gpuscope_gpu_profiling_info"), nullptr);
  EXPECT_EQ(Value(out, "gpuscope_profiling_paused", {}), 1);
  EXPECT_GT(Value(out, "gpuscope_profiling_pause_expiry_timestamp_seconds", {}), 1e9);
  EXPECT_EQ(Value(out, "gpuscope_profiling_pauses_total", {}), 1);
  EXPECT_NE(FindFamily(out, "DCGM_FI_DEV_GPU_UTIL"), nullptr) << "everything else goes on";

  node.profiling_pause().Resume();
  EXPECT_TRUE(node.profiling_pause().WaitForDcgm(node.profiling_pause().State().generation,
                                                 std::chrono::seconds(30)));
  EXPECT_EQ(node.profiling_pause().State().dcgm, "resumed");
  SetTime(50);
  out = CollectUntil(
      collector, [](const auto& o) { return HasProfiling(o, 4); }, "profiling after the resume");
  EXPECT_EQ(Value(out, "gpuscope_profiling_paused", {}), 0);
}

TEST(GpuCollectorDcgmTest, HealthWatchesReportADoubleBitErrorAndACorruptInforomOnce) {
  UseScenario("a100-dcgm.yaml", 30);
  std::vector<DcgmIncident> incidents;
  Mutex mu;
  GpuCollectorOptions options = DcgmOptions();
  options.on_dcgm_incident = [&](const DcgmIncident& incident) {
    MutexLock lock(&mu);
    incidents.push_back(incident);
  };
  GpuCollector collector(options);
  std::vector<MetricFamily> out = CollectUntil(
      collector,
      [](const auto& o) {
        // Every GPU's worker has read a health check (the first may land between two GPUs' reads).
        const MetricFamily* health = FindFamily(o, "gpuscope_dcgm_health");
        return health != nullptr && health->samples.size() == 4 * kDcgmHealthSystemCount &&
               Value(o, "gpuscope_dcgm_health", {{"gpu", "2"}, {"system", "inforom"}}) == 1;
      },
      "the InfoROM warning");
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health", {{"gpu", "1"}, {"system", "memory"}}), 0);
  SetTime(61);  // the double-bit error at 60 s
  out = CollectUntil(
      collector,
      [](const auto& o) {
        return Value(o, "gpuscope_dcgm_health", {{"gpu", "1"}, {"system", "memory"}}) == 2;
      },
      "the memory failure");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // more checks: still one incident each
  out.clear();
  (void)collector.Collect(out);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health_incidents_total",
                  {{"gpu", "1"}, {"system", "memory"}, {"result", "fail"}}),
            1);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health_incidents_total",
                  {{"gpu", "2"}, {"system", "inforom"}, {"result", "warn"}}),
            1);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health_incidents_total",
                  {{"gpu", "0"}, {"system", "memory"}, {"result", "fail"}}),
            0);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health", {{"gpu", "0"}, {"system", "pcie"}}), 0);
  MutexLock lock(&mu);
  ASSERT_EQ(incidents.size(), 2u);
  EXPECT_EQ(incidents[1].system, DcgmHealthSystem::kMemory);
  EXPECT_TRUE(incidents[1].failure);
  EXPECT_NE(incidents[1].message.find("GPU 1"), std::string::npos) << incidents[1].message;
  EXPECT_NE(incidents[1].code, 0u);
}

TEST(GpuCollectorDcgmTest, AHostEngineRestartDropsTheFieldsAndTheBackendReconnects) {
  UseScenario("a100-dcgm.yaml", 80);
  GpuCollector collector(DcgmOptions(DcgmMode::kHostengine));
  std::vector<MetricFamily> out;
  WaitConnected(collector);
  SetTime(85);
  out = CollectUntil(
      collector, [](const auto& o) { return HasProfiling(o, 4); }, "profiling from nv-hostengine");
  EXPECT_EQ(Value(out, "gpuscope_dcgm_up", {{"mode", "hostengine"}}), 1);
  SetTime(92);  // nv-hostengine is down from 90 s to 100 s
  out = CollectUntil(
      collector, [](const auto& o) { return Value(o, "gpuscope_dcgm_up", {}) == 0; }, "DCGM down");
  // The cycle that saw the connection go may still hold values its GPUs read just before; the next may not.
  out.clear();
  (void)collector.Collect(out);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_up", {}), 0);
  EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr) << "no stale values";
  SetTime(101);
  CollectUntil(
      collector, [](const auto& o) { return Value(o, "gpuscope_dcgm_up", {}) == 1; }, "DCGM back");
  SetTime(106);
  out = CollectUntil(
      collector, [](const auto& o) { return HasProfiling(o, 4); }, "profiling after the restart");
  EXPECT_EQ(Value(out, "gpuscope_dcgm_connects_total", {}), 2);
  // The restarted host engine reports the same incidents again: they are not new.
  out = CollectUntil(
      collector,
      [](const auto& o) {
        return Value(o, "gpuscope_dcgm_health", {{"gpu", "1"}, {"system", "memory"}}) == 2 &&
               Value(o, "gpuscope_dcgm_health", {{"gpu", "2"}, {"system", "inforom"}}) == 1;
      },
      "health checked after the restart");
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health_incidents_total",
                  {{"gpu", "1"}, {"system", "memory"}, {"result", "fail"}}),
            1);
  EXPECT_EQ(Value(out, "gpuscope_dcgm_health_incidents_total",
                  {{"gpu", "2"}, {"system", "inforom"}, {"result", "warn"}}),
            1);
}

TEST(GpuCollectorDcgmTest, HopperKeepsGpmUnlessDcgmIsPreferred) {
  UseScenario("h100-training.yaml", 100);
  for (const bool prefer : {false, true}) {
    GpuCollectorOptions options = DcgmOptions();
    options.prefer_dcgm_profiling = prefer;
    GpuCollector collector(options);
    std::vector<MetricFamily> out;
    WaitConnected(collector);
    SetTime(prefer ? 120 : 110);
    const char* source = prefer ? "dcgm" : "gpm";
    out = CollectUntil(
        collector,
        [&](const auto& o) {
          const MetricFamily* info = FindFamily(o, "gpuscope_gpu_profiling_info");
          if (info == nullptr || info->samples.size() != 8) return false;
          for (const Sample& s : info->samples) {
            if (LabelValue(s.labels, "source") != source) return false;
          }
          return HasProfiling(o, 8);
        },
        source);
    EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")->samples.size(), 8u);
    SetTime(100);
  }
}

}  // namespace
}  // namespace gpuscope
