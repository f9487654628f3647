// Tests of HostCollector against the fixture trees tests/fixtures/sysfs/host and tests/fixtures/procfs/host
// (a two-socket node, see their READMEs), with a golden exposition file, and tests/fixtures/sysfs/host-no-gpu
// (a node without NVIDIA GPUs).
//
// To regenerate the golden file after an intended change:
//   GPUSCOPE_UPDATE_GOLDEN=1 ctest --test-dir <build> -R host_collector_test
// then review the diff of tests/unit/collectors/host/testdata/host.prom.
#include "src/collectors/host/host_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/core/snapshot.h"
#include "src/node/gpu_process_table.h"
#include "src/sinks/prometheus/exposition.h"

namespace gpuscope {
namespace {

const std::string kSysfs = GPUSCOPE_HOST_SYSFS_FIXTURE;
const std::string kProcfs = GPUSCOPE_HOST_PROCFS_FIXTURE;
const std::string kSysfsNoGpu = GPUSCOPE_HOST_SYSFS_NO_GPU_FIXTURE;
const std::string kGolden = std::string(GPUSCOPE_HOST_TESTDATA) + "/host.prom";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The GPU cycle's view of the fixture node: two processes per GPU, one that has exited since, and one on
// a GPU sysfs does not show.
void FillTable(GpuProcessTable& table) {
  table.Update({
      {"0", "00000000:18:00.0", 1100, "4242"},
      {"0", "00000000:18:00.0", 1200, "4242"},
      {"0", "00000000:18:00.0", 1500, "4243"},  // exited: no /proc/1500
      {"1", "00000000:83:00.0", 1300, "4243"},
      {"1", "00000000:83:00.0", 1400, ""},
      {"7", "00000000:99:00.0", 1100, "4242"},  // a GPU not in sysfs
  });
}

struct CollectResult {
  Status status;
  std::vector<MetricFamily> families;
};

CollectResult Collect(HostCollectorOptions options) {
  HostCollector collector(std::move(options));
  CollectResult run;
  run.status = collector.Collect(run.families);
  return run;
}

CollectResult CollectFixture(const GpuProcessTable* table) {
  HostCollectorOptions options;
  options.sysfs = kSysfs;
  options.procfs = kProcfs;
  options.gpu_processes = table;
  return Collect(options);
}

const MetricFamily* Find(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const auto& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

// Values of a family keyed by the rendering of its labels "k=v,k=v".
std::map<std::string, double> Values(const std::vector<MetricFamily>& families, std::string_view name) {
  std::map<std::string, double> values;
  const MetricFamily* family = Find(families, name);
  if (family == nullptr) return values;
  for (const auto& sample : family->samples) {
    std::string key;
    for (const auto& [label, value] : sample.labels) key += (key.empty() ? "" : ",") + label + "=" + value;
    values[key] = sample.value;
  }
  return values;
}

std::string Render(std::vector<MetricFamily> families) {
  std::sort(families.begin(), families.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  return RenderSnapshot(Snapshot::Of(std::move(families)), ExpositionFormat::kText004, nullptr);
}

TEST(HostCollector, FixtureNodeRendersAsTheGoldenFile) {
  GpuProcessTable table;
  FillTable(table);
  CollectResult run = CollectFixture(&table);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  std::string rendered = Render(run.families);
  if (std::getenv("GPUSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden) << rendered;
    GTEST_SKIP() << "golden file rewritten: " << kGolden;
  }
  EXPECT_EQ(rendered, ReadAll(kGolden)) << "rendered:\n" << rendered;
}

TEST(HostCollector, PromtoolAcceptsTheGoldenFile) {
  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  std::string command = std::string(promtool) + " check metrics < " + kGolden + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), pipe)) output += buffer;
  EXPECT_EQ(pclose(pipe), 0) << output;
  EXPECT_EQ(output, "");
}

TEST(HostCollector, ReportsEachGpusNumaNodeAndLocalCpusButNoOtherDevice) {
  CollectResult run = CollectFixture(nullptr);
  EXPECT_THAT(Values(run.families, "gpuscope_gpu_numa_info"),
              ::testing::ElementsAre(
                  ::testing::Pair("pci_bus_id=00000000:18:00.0,numa_node=0,local_cpus=0-3,8-11", 1),
                  ::testing::Pair("pci_bus_id=00000000:83:00.0,numa_node=1,local_cpus=4-7,12-15", 1)));
}

TEST(HostCollector, NarrowLinkIsDegradedButIdleDowntrainingOnlyFlagsSpeed) {
  CollectResult run = CollectFixture(nullptr);
  auto width = Values(run.families, "gpuscope_gpu_pcie_link_degraded");
  EXPECT_EQ(width["pci_bus_id=00000000:18:00.0"], 0);  // x16 of x16, idle at 2.5 GT/s
  EXPECT_EQ(width["pci_bus_id=00000000:83:00.0"], 1);  // x8 of x16
  auto speed = Values(run.families, "gpuscope_gpu_pcie_link_speed_degraded");
  EXPECT_EQ(speed["pci_bus_id=00000000:18:00.0"], 1);
  EXPECT_EQ(speed["pci_bus_id=00000000:83:00.0"], 0);
}

TEST(HostCollector, LinkMaximumIsTheLowerOfBothEnds) {
  CollectResult run = CollectFixture(nullptr);
  // GPU A supports 32 GT/s (Gen5) but sits in a Gen4 root port.
  auto max_generation = Values(run.families, "gpuscope_host_pcie_link_max_generation");
  EXPECT_EQ(max_generation["pci_bus_id=00000000:18:00.0,hop=0,pci_device=00000000:18:00.0"], 4);
  auto generation = Values(run.families, "gpuscope_host_pcie_link_generation");
  EXPECT_EQ(generation["pci_bus_id=00000000:18:00.0,hop=0,pci_device=00000000:18:00.0"], 1);
}

TEST(HostCollector, WalksFromTheGpuThroughTheSwitchToTheRootPort) {
  CollectResult run = CollectFixture(nullptr);
  auto width = Values(run.families, "gpuscope_host_pcie_link_width");
  EXPECT_EQ(width["pci_bus_id=00000000:83:00.0,hop=0,pci_device=00000000:83:00.0"], 8);
  EXPECT_EQ(width["pci_bus_id=00000000:83:00.0,hop=1,pci_device=00000000:81:00.0"], 16);
  EXPECT_EQ(width.size(), 3u);  // GPU A: one link to its root port; GPU B: two
}

TEST(HostCollector, WithoutUpstreamLinksOnlyTheGpusOwnLinkIsReported) {
  HostCollectorOptions options;
  options.sysfs = kSysfs;
  options.procfs = kProcfs;
  options.upstream_links = false;
  CollectResult run = Collect(options);
  auto width = Values(run.families, "gpuscope_host_pcie_link_width");
  EXPECT_EQ(width.size(), 2u);
  EXPECT_EQ(width.count("pci_bus_id=00000000:83:00.0,hop=1,pci_device=00000000:81:00.0"), 0u);
}

TEST(HostCollector, ProcessesOffTheirGpusNumaNodeAreMisplaced) {
  GpuProcessTable table;
  FillTable(table);
  CollectResult run = CollectFixture(&table);
  auto misplaced = Values(run.families, "gpuscope_gpu_process_numa_misplaced");
  EXPECT_THAT(misplaced, ::testing::ElementsAre(
                             // pinned to the GPU's CPUs
                             ::testing::Pair("gpu=0,pci_bus_id=00000000:18:00.0,pid=1100,hpc_job=4242", 0),
                             // pinned to the other socket
                             ::testing::Pair("gpu=0,pci_bus_id=00000000:18:00.0,pid=1200,hpc_job=4242", 1),
                             // unpinned, last ran on the other socket
                             ::testing::Pair("gpu=1,pci_bus_id=00000000:83:00.0,pid=1300,hpc_job=4243", 1),
                             // unpinned, last ran on the GPU's socket
                             ::testing::Pair("gpu=1,pci_bus_id=00000000:83:00.0,pid=1400,hpc_job=", 0)));
  EXPECT_THAT(Values(run.families, "gpuscope_gpu_numa_misplaced_processes"),
              ::testing::ElementsAre(::testing::Pair("pci_bus_id=00000000:18:00.0", 1),
                                     ::testing::Pair("pci_bus_id=00000000:83:00.0", 1)));
}

TEST(HostCollector, WithoutAProcessTableNoPlacementSeriesAreMade) {
  CollectResult run = CollectFixture(nullptr);
  EXPECT_EQ(Find(run.families, "gpuscope_gpu_process_numa_misplaced"), nullptr);
  EXPECT_EQ(Find(run.families, "gpuscope_gpu_numa_misplaced_processes"), nullptr);
}

TEST(HostCollector, PressureIsReportedAsRatiosAndSecondsWithoutCpuFull) {
  CollectResult run = CollectFixture(nullptr);
  auto ratio = Values(run.families, "gpuscope_host_pressure_stalled_ratio");
  EXPECT_DOUBLE_EQ(ratio["resource=memory,kind=some,window=10s"], 0.125);
  EXPECT_DOUBLE_EQ(ratio["resource=memory,kind=full,window=300s"], 0.005);
  EXPECT_EQ(ratio.count("resource=cpu,kind=full,window=10s"), 0u);
  EXPECT_EQ(ratio.size(), 15u);  // cpu some, memory some/full, io some/full; 3 windows each
  auto seconds = Values(run.families, "gpuscope_host_pressure_stalled_seconds_total");
  EXPECT_DOUBLE_EQ(seconds["resource=io,kind=some"], 2.5);
  EXPECT_DOUBLE_EQ(seconds["resource=cpu,kind=some"], 123.456789);
  EXPECT_EQ(Find(run.families, "gpuscope_host_pressure_stalled_seconds_total")->type, MetricType::kCounter);
}

TEST(HostCollector, KernelWithoutPsiLeavesPressureOutAndStillSucceeds) {
  std::filesystem::path empty_proc = std::filesystem::path(::testing::TempDir()) / "host_no_psi_proc";
  std::filesystem::create_directories(empty_proc);
  HostCollectorOptions options;
  options.sysfs = kSysfs;
  options.procfs = empty_proc.string();
  CollectResult run = Collect(options);
  EXPECT_TRUE(run.status.ok());
  EXPECT_EQ(Find(run.families, "gpuscope_host_pressure_stalled_ratio"), nullptr);
  EXPECT_NE(Find(run.families, "gpuscope_gpu_numa_info"), nullptr);
}

// The names of the families a run appended, sorted.
std::vector<std::string> FamilyNames(const std::vector<MetricFamily>& families) {
  std::vector<std::string> names;
  for (const auto& family : families) names.push_back(family.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path EmptyProcfs() {
  std::filesystem::path procfs = std::filesystem::path(::testing::TempDir()) / "host_empty_proc";
  std::filesystem::create_directories(procfs);
  return procfs;
}

TEST(HostCollector, HostWithoutNvidiaGpusStillReportsPressure) {
  GpuProcessTable table;
  FillTable(table);  // processes the GPU cycle saw on GPUs this sysfs does not show
  HostCollectorOptions options;
  options.sysfs = kSysfsNoGpu;
  options.procfs = kProcfs;
  options.gpu_processes = &table;
  CollectResult run = Collect(options);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  EXPECT_THAT(FamilyNames(run.families),
              ::testing::ElementsAre("gpuscope_host_pressure_stalled_ratio",
                                     "gpuscope_host_pressure_stalled_seconds_total"));
  auto ratio = Values(run.families, "gpuscope_host_pressure_stalled_ratio");
  EXPECT_EQ(ratio.size(), 15u);
  EXPECT_DOUBLE_EQ(ratio["resource=memory,kind=some,window=10s"], 0.125);
  EXPECT_DOUBLE_EQ(
      Values(run.families, "gpuscope_host_pressure_stalled_seconds_total")["resource=io,kind=some"], 2.5);
}

TEST(HostCollector, HostWithoutNvidiaGpusOrPressureIsNoData) {
  HostCollectorOptions options;
  options.sysfs = kSysfsNoGpu;
  options.procfs = EmptyProcfs().string();
  CollectResult run = Collect(options);
  EXPECT_EQ(run.status.code(), Status::Code::kNoData);
  EXPECT_TRUE(run.families.empty());
}

TEST(HostCollector, WithPressureSwitchedOffAHostWithoutGpusIsNoData) {
  HostCollectorOptions options;
  options.sysfs = kSysfsNoGpu;
  options.procfs = kProcfs;
  options.pressure = false;
  CollectResult run = Collect(options);
  EXPECT_EQ(run.status.code(), Status::Code::kNoData);
  EXPECT_TRUE(run.families.empty());
}

TEST(HostCollector, MissingSysfsIsNoDataWithoutPressureAndPressureOnlyWithIt) {
  HostCollectorOptions options;
  options.sysfs = ::testing::TempDir() + "/host_does_not_exist";
  options.procfs = EmptyProcfs().string();
  CollectResult run = Collect(options);
  EXPECT_EQ(run.status.code(), Status::Code::kNoData);
  EXPECT_TRUE(run.families.empty());

  options.procfs = kProcfs;
  run = Collect(options);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  EXPECT_THAT(FamilyNames(run.families),
              ::testing::ElementsAre("gpuscope_host_pressure_stalled_ratio",
                                     "gpuscope_host_pressure_stalled_seconds_total"));
}

TEST(HostCollector, EveryEmittedFamilyIsDescribedWithItsTypeAndLabels) {
  GpuProcessTable table;
  FillTable(table);
  HostCollectorOptions options;
  options.sysfs = kSysfs;
  options.procfs = kProcfs;
  options.gpu_processes = &table;
  HostCollector collector(options);
  std::vector<MetricFamily> families;
  ASSERT_TRUE(collector.Collect(families).ok());
  auto descriptions = collector.Describe();
  EXPECT_EQ(families.size(), descriptions.size());  // the fixture exercises every family
  for (const auto& family : families) {
    auto it = std::find_if(descriptions.begin(), descriptions.end(),
                           [&](const MetricDescription& d) { return d.name == family.name; });
    ASSERT_NE(it, descriptions.end()) << family.name;
    EXPECT_EQ(family.type, it->type) << family.name;
    EXPECT_EQ(family.unit, it->unit) << family.name;
    for (const auto& sample : family.samples) {
      std::vector<std::string> names;
      for (const auto& label : sample.labels) names.push_back(label.first);
      EXPECT_EQ(names, it->labels) << family.name;
    }
  }
}

}  // namespace
}  // namespace gpuscope
