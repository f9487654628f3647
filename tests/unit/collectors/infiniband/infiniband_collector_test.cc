// Tests of InfinibandCollector against the committed sysfs fixture (mlx5 InfiniBand HDR and RoCE,
// irdma, rxe without PMA, GPUs under one PCIe switch with the HCA and elsewhere) and against small
// temporary trees that isolate one quirk each.
//
// Golden file: testdata/fixture.prom. To regenerate it after an intended change, run
//   GPUSCOPE_UPDATE_GOLDEN=1 ./infiniband_collector_test --gtest_filter='*Golden*'
// and review the diff.
#include "src/collectors/infiniband/infiniband_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "src/core/snapshot.h"
#include "src/sinks/prometheus/exposition.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

const MetricFamily* FindFamily(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Label(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "<absent>";
}

// The value of the sample of `family` whose labels include all of `match`; nullopt when none.
std::optional<double> Value(const std::vector<MetricFamily>& families, std::string_view family,
                            const Labels& match) {
  const MetricFamily* f = FindFamily(families, family);
  if (!f) return std::nullopt;
  for (const Sample& s : f->samples) {
    bool all = true;
    for (const auto& [k, v] : match) all = all && Label(s.labels, k) == v;
    if (all) return s.value;
  }
  return std::nullopt;
}

std::vector<MetricFamily> CollectFrom(const std::string& sysfs, Status* status = nullptr,
                                      InfinibandCollectorOptions options = {}) {
  options.sysfs = sysfs;
  InfinibandCollector collector(options);
  std::vector<MetricFamily> out;
  Status s = collector.Collect(out);
  if (status) *status = s;
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A temporary sysfs root, removed at the end of the test.
class TempSysfs {
 public:
  TempSysfs() {
    std::string pattern = ::testing::TempDir() + "/ib_sysfs_XXXXXX";
    root_ = mkdtemp(pattern.data());
  }
  ~TempSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Write(const std::string& relative, const std::string& content) {
    fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }
  // A device with one port: state ACTIVE/LinkUp, the given rate and link layer.
  std::string Port(const std::string& device, const std::string& link_layer = "InfiniBand") {
    std::string port = "class/infiniband/" + device + "/ports/1/";
    Write(port + "state", "4: ACTIVE\n");
    Write(port + "phys_state", "5: LinkUp\n");
    Write(port + "rate", "100 Gb/sec (4X EDR)\n");
    Write(port + "link_layer", link_layer + "\n");
    return port;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(InfinibandCollector, NoDataWithoutClassInfiniband) {
  TempSysfs sysfs;
  Status status;
  std::vector<MetricFamily> out = CollectFrom(sysfs.root(), &status);
  EXPECT_EQ(status.code(), Status::Code::kNoData) << status.ToString();
  EXPECT_TRUE(out.empty());
}

TEST(InfinibandCollector, NoDataWithEmptyClassInfiniband) {
  TempSysfs sysfs;
  fs::create_directories(sysfs.root() + "/class/infiniband");
  Status status;
  std::vector<MetricFamily> out = CollectFrom(sysfs.root(), &status);
  EXPECT_EQ(status.code(), Status::Code::kNoData);
  EXPECT_TRUE(out.empty());
}

TEST(InfinibandCollector, NoDataWhenSysfsRootIsMissing) {
  Status status;
  CollectFrom("/nonexistent/gpuscope/sysfs", &status);
  EXPECT_EQ(status.code(), Status::Code::kNoData);
}

TEST(InfinibandCollector, DataCountersAreMultipliedByFourLanes) {
  TempSysfs sysfs;
  std::string port = sysfs.Port("mlx5_0");
  sysfs.Write(port + "counters/port_rcv_data", "1000\n");
  sysfs.Write(port + "counters/port_xmit_data", "250\n");
  sysfs.Write(port + "counters/port_rcv_packets", "1000\n");
  std::vector<MetricFamily> out = CollectFrom(sysfs.root());
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_data_received_bytes_total", {{"device", "mlx5_0"}}), 4000);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_data_transmitted_bytes_total", {{"device", "mlx5_0"}}),
            1000);
  // Packet counters are not scaled.
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_packets_received_total", {{"device", "mlx5_0"}}), 1000);
}

TEST(InfinibandCollector, NoPmaCounterIsAbsentNotZero) {
  TempSysfs sysfs;
  std::string port = sysfs.Port("rxe0", "Ethernet");
  sysfs.Write(port + "counters/symbol_error", "N/A (no PMA)\n");
  sysfs.Write(port + "counters/port_rcv_data", "N/A (no PMA)\n");
  sysfs.Write(port + "counters/link_downed", "0\n");
  std::vector<MetricFamily> out = CollectFrom(sysfs.root());
  EXPECT_EQ(FindFamily(out, "gpuscope_infiniband_port_symbol_errors_total"), nullptr);
  EXPECT_EQ(FindFamily(out, "gpuscope_infiniband_port_data_received_bytes_total"), nullptr);
  // A real zero stays a zero.
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_link_downed_total", {{"device", "rxe0"}}), 0);
  // N/A is not malformed.
  EXPECT_EQ(Value(out, "gpuscope_infiniband_sysfs_malformed_values_total", {}), 0);
}

TEST(InfinibandCollector, MalformedValuesAreSkippedAndCountedAcrossCycles) {
  TempSysfs sysfs;
  std::string port = sysfs.Port("mlx5_0");
  sysfs.Write(port + "counters/symbol_error", "garbage\n");
  sysfs.Write(port + "counters/link_downed", "2\n");
  sysfs.Write(port + "state", "ACTIVE\n");
  InfinibandCollector collector({.sysfs = sysfs.root()});
  std::vector<MetricFamily> first;
  ASSERT_TRUE(collector.Collect(first).ok());
  EXPECT_EQ(FindFamily(first, "gpuscope_infiniband_port_symbol_errors_total"), nullptr);
  EXPECT_EQ(FindFamily(first, "gpuscope_infiniband_port_state_id"), nullptr);
  EXPECT_EQ(Value(first, "gpuscope_infiniband_port_link_downed_total", {}), 2);
  EXPECT_EQ(Value(first, "gpuscope_infiniband_port_info", {{"state", "unknown"}}), 1);
  EXPECT_EQ(Value(first, "gpuscope_infiniband_sysfs_malformed_values_total", {}), 2);
  std::vector<MetricFamily> second;
  ASSERT_TRUE(collector.Collect(second).ok());
  EXPECT_EQ(Value(second, "gpuscope_infiniband_sysfs_malformed_values_total", {}), 4);
}

TEST(InfinibandCollector, HwCountersSkipSettingsSanitiseNamesAndSeparateGauges) {
  TempSysfs sysfs;
  std::string port = sysfs.Port("bnxt_re0", "Ethernet");
  sysfs.Write(port + "hw_counters/lifespan", "10\n");
  sysfs.Write(port + "hw_counters/rx-bytes.total", "77\n");
  sysfs.Write(port + "hw_counters/active_qps", "3\n");
  sysfs.Write(port + "hw_counters/np_cnp_sent", "5\n");
  std::vector<MetricFamily> out = CollectFrom(sysfs.root());
  const MetricFamily* counters = FindFamily(out, "gpuscope_infiniband_port_hw_stat_total");
  ASSERT_NE(counters, nullptr);
  EXPECT_EQ(counters->type, MetricType::kCounter);
  std::set<std::string> names;
  for (const Sample& s : counters->samples) names.insert(Label(s.labels, "counter"));
  EXPECT_EQ(names, (std::set<std::string>{"np_cnp_sent", "rx_bytes_total"}));
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_hw_stat_level", {{"counter", "active_qps"}}), 3);
}

TEST(InfinibandCollector, HwCountersCanBeSwitchedOff) {
  TempSysfs sysfs;
  std::string port = sysfs.Port("mlx5_0");
  sysfs.Write(port + "hw_counters/out_of_sequence", "5\n");
  std::vector<MetricFamily> out = CollectFrom(sysfs.root(), nullptr, {.hw_counters = false});
  EXPECT_EQ(FindFamily(out, "gpuscope_infiniband_port_hw_stat_total"), nullptr);
  EXPECT_NE(FindFamily(out, "gpuscope_infiniband_port_state_id"), nullptr);
}

TEST(InfinibandCollector, PortSeriesVanishWithThePort) {
  TempSysfs sysfs;
  sysfs.Port("mlx5_0");
  std::string port = sysfs.Port("mlx5_1");
  InfinibandCollector collector({.sysfs = sysfs.root()});
  std::vector<MetricFamily> before;
  ASSERT_TRUE(collector.Collect(before).ok());
  EXPECT_TRUE(Value(before, "gpuscope_infiniband_port_state_id", {{"device", "mlx5_1"}}));
  fs::remove_all(sysfs.root() + "/class/infiniband/mlx5_1");
  std::vector<MetricFamily> after;
  ASSERT_TRUE(collector.Collect(after).ok());
  EXPECT_FALSE(Value(after, "gpuscope_infiniband_port_state_id", {{"device", "mlx5_1"}}));
  EXPECT_TRUE(Value(after, "gpuscope_infiniband_port_state_id", {{"device", "mlx5_0"}}));
}

TEST(InfinibandCollector, FixtureReportsLinkStateRateAndWidth) {
  std::vector<MetricFamily> out = CollectFrom(GPUSCOPE_IB_FIXTURE);
  Labels hdr = {{"device", "mlx5_0"}, {"port", "1"}, {"link_layer", "InfiniBand"}};
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_state_id", hdr), 4);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_physical_state_id", hdr), 5);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_rate_bytes_per_second", hdr), 25e9);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_link_width_lanes", hdr), 4);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_info", {{"device", "mlx5_1"}, {"link_layer", "Ethernet"}}),
            1);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_state_id", {{"device", "irdma0"}}), 1);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_rate_bytes_per_second", {{"device", "rxe0"}}), 2.5e9 / 8);
}

TEST(InfinibandCollector, FixtureRoceHwCountersAreExported) {
  std::vector<MetricFamily> out = CollectFrom(GPUSCOPE_IB_FIXTURE);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_port_hw_stat_total",
                  {{"device", "mlx5_1"}, {"counter", "np_ecn_marked_roce_packets"}}),
            2718);
  EXPECT_EQ(
      Value(out, "gpuscope_infiniband_port_hw_stat_total", {{"device", "irdma0"}, {"counter", "cnpHandled"}}),
      12);
  EXPECT_FALSE(Value(out, "gpuscope_infiniband_port_hw_stat_total", {{"counter", "lifespan"}}));
  // irdma has no counters/ directory and rxe prints N/A: neither has a standard counter series.
  EXPECT_FALSE(Value(out, "gpuscope_infiniband_port_symbol_errors_total", {{"device", "irdma0"}}));
  EXPECT_FALSE(Value(out, "gpuscope_infiniband_port_symbol_errors_total", {{"device", "rxe0"}}));
}

TEST(InfinibandCollector, FixtureGpuAffinityFollowsPcieSwitchThenNumaNode) {
  std::vector<MetricFamily> out = CollectFrom(GPUSCOPE_IB_FIXTURE);
  auto relation = [&](const std::string& device, const std::string& gpu) {
    const MetricFamily* f = FindFamily(out, "gpuscope_infiniband_gpu_affinity_info");
    if (!f) return std::string("<no family>");
    for (const Sample& s : f->samples) {
      if (Label(s.labels, "device") == device && Label(s.labels, "gpu_pci_bus_id") == gpu) {
        return Label(s.labels, "relation");
      }
    }
    return std::string("<none>");
  };
  EXPECT_EQ(relation("mlx5_0", "00000000:03:00.0"), "pcie_switch");
  EXPECT_EQ(relation("mlx5_0", "00000000:04:00.0"), "pcie_switch");
  EXPECT_EQ(relation("mlx5_1", "00000000:04:00.0"), "pcie_switch");
  EXPECT_EQ(relation("mlx5_0", "00000000:81:00.0"), "system");
  EXPECT_EQ(relation("irdma0", "00000000:03:00.0"), "numa_node");
  EXPECT_EQ(relation("irdma0", "00000000:81:00.0"), "system");
  // Neither the GPU's audio function nor an NVIDIA bridge-class device is a GPU; rxe0 has no PCI device.
  EXPECT_EQ(relation("mlx5_0", "00000000:03:00.1"), "<none>");
  EXPECT_EQ(relation("mlx5_0", "00000000:80:02.0"), "<none>");
  EXPECT_EQ(relation("rxe0", "00000000:03:00.0"), "<none>");
  EXPECT_EQ(FindFamily(out, "gpuscope_infiniband_gpu_affinity_info")->samples.size(), 9u);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_device_info",
                  {{"device", "mlx5_0"}, {"pci_bus_id", "00000000:05:00.0"}, {"numa_node", "0"}}),
            1);
  EXPECT_EQ(Value(out, "gpuscope_infiniband_device_info", {{"device", "rxe0"}, {"pci_bus_id", "none"}}), 1);
}

TEST(InfinibandCollector, GpuAffinityCanBeSwitchedOff) {
  std::vector<MetricFamily> out = CollectFrom(GPUSCOPE_IB_FIXTURE, nullptr, {.gpu_affinity = false});
  EXPECT_EQ(FindFamily(out, "gpuscope_infiniband_gpu_affinity_info"), nullptr);
}

TEST(InfinibandCollector, EveryEmittedFamilyIsDescribedWithItsLabels) {
  InfinibandCollector collector({.sysfs = GPUSCOPE_IB_FIXTURE});
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  std::vector<MetricDescription> descriptions = collector.Describe();
  for (const MetricFamily& f : out) {
    const MetricDescription* d = nullptr;
    for (const MetricDescription& candidate : descriptions) {
      if (candidate.name == f.name) d = &candidate;
    }
    ASSERT_NE(d, nullptr) << f.name;
    EXPECT_EQ(d->type, f.type) << f.name;
    EXPECT_TRUE(IsValidMetricName(f.name)) << f.name;
    for (const Sample& s : f.samples) {
      ASSERT_EQ(s.labels.size(), d->labels.size()) << f.name;
      for (size_t i = 0; i < s.labels.size(); ++i) {
        EXPECT_EQ(s.labels[i].first, d->labels[i]) << f.name;
        EXPECT_FALSE(s.labels[i].second.empty()) << f.name << " " << s.labels[i].first;
      }
    }
  }
}

std::string RenderFixture() {
  std::vector<MetricFamily> families = CollectFrom(GPUSCOPE_IB_FIXTURE);
  std::sort(families.begin(), families.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  return RenderSnapshot(Snapshot::Of(std::move(families)), ExpositionFormat::kText004, nullptr);
}

TEST(InfinibandCollector, FixtureMatchesGoldenExposition) {
  std::string rendered = RenderFixture();
  if (std::getenv("GPUSCOPE_UPDATE_GOLDEN")) {
    std::ofstream(GPUSCOPE_IB_GOLDEN) << rendered;
    GTEST_SKIP() << "golden file rewritten: " << GPUSCOPE_IB_GOLDEN;
  }
  EXPECT_EQ(rendered, ReadAll(GPUSCOPE_IB_GOLDEN))
      << "to accept: GPUSCOPE_UPDATE_GOLDEN=1 " << ::testing::internal::GetArgvs()[0];
}

TEST(InfinibandCollector, PromtoolAcceptsFixtureExposition) {
  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  std::string path = ::testing::TempDir() + "/infiniband_fixture.prom";
  std::ofstream(path) << RenderFixture();
  std::string command = std::string(promtool) + " check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe)) output += buf;
  int rc = pclose(pipe);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "") << output;
}

}  // namespace
}  // namespace gpuscope
