// The GPU collector against a tiny stand-in NVML (tests/unit/platform/nvml/fake_nvml.cc) that exports a
// few entry points only and lets the test hang a call, lose a GPU or inject XID events.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "src/collectors/gpu/gpu_collector.h"
#include "src/events/classifiers/xid_catalog.h"
#include "src/node/node_state.h"
#include "tests/unit/collectors/gpu/gpu_test_util.h"

namespace gpuscope {
namespace {

using testing::FindFamily;
using testing::FindSample;
using testing::LabelValue;

// The stand-in's test controls, reached through its own handle (the same one the collector loads).
class FakeNvml {
 public:
  FakeNvml() : handle_(dlopen(GPUSCOPE_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(handle_, nullptr) << dlerror();
    Reset();
  }
  ~FakeNvml() {
    Reset();
    dlclose(handle_);
  }
  void Reset() { Fn<void (*)()>("fake_nvml_reset")(); }
  void Hang(int gpu, bool on) { Fn<void (*)(int, int)>("fake_nvml_set_hang")(gpu, on ? 1 : 0); }
  void Lose(int gpu, bool on) { Fn<void (*)(int, int)>("fake_nvml_set_lost")(gpu, on ? 1 : 0); }
  void PushXid(int gpu, unsigned long long xid) {
    Fn<void (*)(int, unsigned long long)>("fake_nvml_push_xid")(gpu, xid);
  }
  int Calls(const char* name) { return Fn<int (*)(const char*)>("fake_nvml_calls")(name); }

 private:
  template <typename F>
  F Fn(const char* name) {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }
  void* handle_;
};

GpuCollectorOptions FakeOptions() {
  GpuCollectorOptions options;
  options.nvml_library = GPUSCOPE_FAKE_NVML_PATH;
  options.hostname = "node1";
  options.call_deadline = std::chrono::milliseconds(300);
  options.event_wait = std::chrono::milliseconds(20);
  return options;
}

double Up(const std::vector<MetricFamily>& out, const std::string& gpu) {
  const Sample* s = FindSample(out, "gpuscope_gpu_up", {{"gpu", gpu}});
  return s == nullptr ? -1 : s->value;
}

TEST(GpuCollectorFakeTest, MissingSymbolsDisableTheirFieldsAndTheRestReports) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_TRUE(collector.Healthy());
  EXPECT_EQ(Up(out, "0"), 1);
  EXPECT_EQ(Up(out, "1"), 1);
  const Sample* temp = FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "1"}});
  ASSERT_NE(temp, nullptr);
  EXPECT_EQ(temp->value, 41);
  EXPECT_EQ(LabelValue(temp->labels, "UUID"), "GPU-fake-0001");
  EXPECT_EQ(LabelValue(temp->labels, "pci_bus_id"), "00000000:19:00.0");
  EXPECT_EQ(LabelValue(temp->labels, "device"), "nvidia1");
  EXPECT_EQ(LabelValue(temp->labels, "DCGM_FI_DRIVER_VERSION"), "550.54.15");
  // The stand-in has no nvmlDeviceGetPowerUsage, no NVLink, no GPM: those families are absent.
  EXPECT_EQ(FindFamily(out, "DCGM_FI_DEV_POWER_USAGE"), nullptr);
  EXPECT_EQ(FindFamily(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr);
  // Clock reasons come through the ThrottleReasons fallback.
  const Sample* reason =
      FindSample(out, "gpuscope_gpu_clock_event_active", {{"gpu", "0"}, {"reason", "sw_power_cap"}});
  ASSERT_NE(reason, nullptr);
  EXPECT_EQ(reason->value, 1);
  const Sample* idle =
      FindSample(out, "gpuscope_gpu_clock_event_active", {{"gpu", "0"}, {"reason", "gpu_idle"}});
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->value, 0);
}

TEST(GpuCollectorFakeTest, NotSupportedDisablesAFieldOnOneGpuOnlyAndIsNotRetried) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  for (int cycle = 0; cycle < 3; ++cycle) {
    std::vector<MetricFamily> out;
    ASSERT_TRUE(collector.Collect(out).ok());
    EXPECT_NE(FindSample(out, "DCGM_FI_DEV_FB_USED", {{"gpu", "0"}}), nullptr);
    EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_FB_USED", {{"gpu", "1"}}), nullptr);
  }
  // GPU 0 asked each cycle (3), GPU 1 once and never again.
  EXPECT_EQ(fake.Calls("nvmlDeviceGetMemoryInfo_v2"), 4);
}

TEST(GpuCollectorFakeTest, HungCallReportsThatGpuDownWithinTheDeadlineAndItRecovers) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  fake.Hang(1, true);
  out.clear();
  EXPECT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, "0"), 1);
  EXPECT_EQ(Up(out, "1"), 0);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "0"}}), nullptr);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "1"}}), nullptr);
  // Still stuck: the worker is skipped, not queued, and the other GPU keeps reporting.
  out.clear();
  EXPECT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, "1"), 0);
  EXPECT_EQ(Up(out, "0"), 1);
  fake.Hang(1, false);
  // Once the call returns, the GPU reports again (give its worker a few cycles to come back).
  double up = 0;
  for (int cycle = 0; cycle < 50 && up != 1; ++cycle) {
    out.clear();
    collector.Collect(out);
    up = Up(out, "1");
    if (up != 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(up, 1);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_GPU_TEMP", {{"gpu", "1"}}), nullptr);
}

TEST(GpuCollectorFakeTest, ShutdownDoesNotBlockOnAHungWorker) {
  FakeNvml fake;
  {
    GpuCollector collector(FakeOptions());
    std::vector<MetricFamily> out;
    ASSERT_TRUE(collector.Collect(out).ok());
    fake.Hang(0, true);
    out.clear();
    collector.Collect(out);
    EXPECT_EQ(Up(out, "0"), 0);
  }                     // destroyed with GPU 0's worker stuck in NVML: must return
  fake.Hang(0, false);  // lets the detached worker finish
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST(GpuCollectorFakeTest, LostGpuReportsDownWhileTheOtherKeepsReporting) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  fake.Lose(0, true);
  out.clear();
  EXPECT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Up(out, "0"), 0);
  EXPECT_EQ(Up(out, "1"), 1);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_SM_CLOCK", {{"gpu", "0"}}), nullptr);
  EXPECT_NE(FindSample(out, "DCGM_FI_DEV_SM_CLOCK", {{"gpu", "1"}}), nullptr);
  // Identity stays published for the lost GPU.
  EXPECT_NE(FindSample(out, "gpuscope_gpu_info", {{"gpu", "0"}}), nullptr);
}

TEST(GpuCollectorFakeTest, KernelLogAndNvmlXidsOfOneEventCountOnceAndUnknownGpusKeepTheirBusId) {
  FakeNvml fake;
  GpuCollectorOptions options = FakeOptions();
  // The node state as the agent makes it: a 30 s match window, actions named by the XID catalog.
  NodeStateOptions node_options;
  node_options.xid_match_window = std::chrono::seconds(30);
  node_options.xid_action = [](uint32_t xid) { return std::string(XidActionName(LookupXid(xid).action)); };
  NodeState node(node_options);
  XidLedger* ledger = &node.xids();
  options.node_state = &node;
  GpuCollector collector(options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  const Sample* info = FindSample(out, "gpuscope_gpu_info", {{"gpu", "1"}});
  ASSERT_NE(info, nullptr);
  const std::string bus(LabelValue(info->labels, "pci_bus_id"));
  ASSERT_FALSE(bus.empty());
  const double now = static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  // The kernel log's line arrives first; NVML's event for the same XID follows.
  EXPECT_TRUE(ledger->Record(XidObserver::kKernelLog, bus, 79, now));
  // An XID on a bus NVML does not show (a GPU lost before the agent started).
  EXPECT_TRUE(ledger->Record(XidObserver::kKernelLog, "0000:ee:00.0", 79, now));
  fake.PushXid(1, 79);
  for (int cycle = 0; cycle < 100 && ledger->merged() == 0; ++cycle) {
    out.clear();
    collector.Collect(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ledger->merged(), 1u);
  out.clear();
  collector.Collect(out);
  const Sample* known = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "1"}, {"xid", "79"}});
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->value, 1);
  EXPECT_EQ(LabelValue(known->labels, "action"), "reboot");
  const Sample* unknown =
      FindSample(out, "gpuscope_xid_errors_total", {{"pci_bus_id", "00000000:EE:00.0"}, {"xid", "79"}});
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->value, 1);
  EXPECT_EQ(LabelValue(unknown->labels, "gpu"), "");
  EXPECT_EQ(LabelValue(unknown->labels, "Hostname"), "node1");
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "1"}})->value, 79);
}

TEST(GpuCollectorFakeTest, XidEventsAreCountedOnceEach) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  const Sample* last = FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "1"}});
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->value, 0);
  EXPECT_EQ(FindFamily(out, "gpuscope_xid_errors_total"), nullptr);
  fake.PushXid(1, 79);
  fake.PushXid(1, 79);
  fake.PushXid(0, 48);
  double count79 = 0;
  for (int cycle = 0; cycle < 100; ++cycle) {
    out.clear();
    collector.Collect(out);
    const Sample* s = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "1"}, {"xid", "79"}});
    const Sample* s48 = FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "0"}, {"xid", "48"}});
    count79 = s == nullptr ? 0 : s->value;
    if (count79 == 2 && s48 != nullptr) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(count79, 2);
  // Later cycles do not count the same events again.
  for (int cycle = 0; cycle < 3; ++cycle) {
    out.clear();
    collector.Collect(out);
  }
  EXPECT_EQ(FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "1"}, {"xid", "79"}})->value, 2);
  EXPECT_EQ(FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "0"}, {"xid", "48"}})->value, 1);
  EXPECT_EQ(FindSample(out, "gpuscope_xid_errors_total", {{"gpu", "1"}, {"xid", "48"}}), nullptr);
  EXPECT_EQ(FindSample(out, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "1"}})->value, 79);
  EXPECT_GT(FindSample(out, "gpuscope_xid_last_seen_timestamp_seconds", {{"gpu", "1"}, {"xid", "79"}})->value,
            0);
}

TEST(GpuCollectorFakeTest, CompatSwitchChangesHostLabelAndViolationUnit) {
  FakeNvml fake;
  GpuCollectorOptions options = FakeOptions();
  GpuCollector dcgm3(options);
  options.dcgm_compat = DcgmCompat::kDcgm49;
  GpuCollector dcgm49(options);
  std::vector<MetricFamily> out3, out49;
  ASSERT_TRUE(dcgm3.Collect(out3).ok());
  ASSERT_TRUE(dcgm49.Collect(out49).ok());
  const Sample* v3 = FindSample(out3, "DCGM_FI_DEV_POWER_VIOLATION", {{"gpu", "0"}});
  const Sample* v49 = FindSample(out49, "DCGM_FI_DEV_POWER_VIOLATION", {{"gpu", "0"}});
  ASSERT_NE(v3, nullptr);
  ASSERT_NE(v49, nullptr);
  EXPECT_EQ(v3->value, 5000);      // us
  EXPECT_EQ(v49->value, 5000000);  // ns
  EXPECT_EQ(LabelValue(v3->labels, "Hostname"), "node1");
  EXPECT_EQ(LabelValue(v3->labels, "hostname"), "<absent>");
  EXPECT_EQ(LabelValue(v49->labels, "hostname"), "node1");
  EXPECT_EQ(FindSample(out3, "gpuscope_gpu_clock_event_seconds_total", {{"reason", "power"}})->value, 0.005);
}

TEST(GpuCollectorFakeTest, FbReservedIsExportedInEveryCompatMode) {
  FakeNvml fake;
  for (DcgmCompat compat : {DcgmCompat::kDcgm3, DcgmCompat::kDcgm49}) {
    GpuCollectorOptions options = FakeOptions();
    options.dcgm_compat = compat;
    GpuCollector collector(options);
    std::vector<MetricFamily> out;
    ASSERT_TRUE(collector.Collect(out).ok());
    const Sample* reserved = FindSample(out, "DCGM_FI_DEV_FB_RESERVED", {{"gpu", "0"}});
    ASSERT_NE(reserved, nullptr) << DcgmCompatName(compat);
    EXPECT_EQ(reserved->value, 512) << DcgmCompatName(compat);
    bool described = false;
    for (const MetricDescription& d : collector.Describe()) described |= d.name == "DCGM_FI_DEV_FB_RESERVED";
    EXPECT_TRUE(described) << DcgmCompatName(compat);
  }
}

TEST(GpuCollectorFakeTest, UnloadableLibraryIsUnavailableUnhealthyAndRetried) {
  FakeNvml fake;
  // A path that does not exist yet; it appears (a link to the stand-in) after the first attempt.
  const std::string library =
      ::testing::TempDir() + "/gpu_fake_late_" + std::to_string(getpid()) + "/libnvidia-ml.so.1";
  std::filesystem::remove_all(std::filesystem::path(library).parent_path());
  GpuCollectorOptions options = FakeOptions();
  options.nvml_library = library;
  options.init_retry_interval = std::chrono::milliseconds(0);
  GpuCollector collector(options);
  std::vector<MetricFamily> out;
  Status status = collector.Collect(out);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), ::testing::HasSubstr(library));
  EXPECT_FALSE(collector.Healthy());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(collector.Collect(out).code(), Status::Code::kUnavailable);
  // Once the library is there, the next cycle loads it: init is retried, not given up.
  std::filesystem::create_directories(std::filesystem::path(library).parent_path());
  std::filesystem::create_symlink(GPUSCOPE_FAKE_NVML_PATH, library);
  EXPECT_TRUE(collector.Collect(out).ok());
  EXPECT_TRUE(collector.Healthy());
  EXPECT_EQ(Up(out, "0"), 1);
  std::filesystem::remove_all(std::filesystem::path(library).parent_path());
}

TEST(GpuCollectorFakeTest, InitRetryIntervalSpacesInitAttempts) {
  FakeNvml fake;
  const std::string library =
      ::testing::TempDir() + "/gpu_fake_spaced_" + std::to_string(getpid()) + "/libnvidia-ml.so.1";
  std::filesystem::remove_all(std::filesystem::path(library).parent_path());
  GpuCollectorOptions options = FakeOptions();
  options.nvml_library = library;
  options.init_retry_interval = std::chrono::hours(1);
  GpuCollector collector(options);
  std::vector<MetricFamily> out;
  EXPECT_EQ(collector.Collect(out).code(), Status::Code::kUnavailable);
  std::filesystem::create_directories(std::filesystem::path(library).parent_path());
  std::filesystem::create_symlink(GPUSCOPE_FAKE_NVML_PATH, library);
  // Within the interval the earlier failure is returned without a new attempt.
  EXPECT_EQ(collector.Collect(out).code(), Status::Code::kUnavailable);
  EXPECT_FALSE(collector.Healthy());
  std::filesystem::remove_all(std::filesystem::path(library).parent_path());
}

TEST(GpuCollectorFakeTest, DescribeCoversEveryEmittedFamily) {
  FakeNvml fake;
  GpuCollector collector(FakeOptions());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  std::vector<MetricDescription> described = collector.Describe();
  for (const MetricFamily& f : out) {
    bool found = false;
    for (const MetricDescription& d : described) found = found || (d.name == f.name && d.type == f.type);
    EXPECT_TRUE(found) << f.name;
    // Fixed label sets per family.
    for (const Sample& s : f.samples) {
      EXPECT_EQ(testing::LabelNames(s.labels), testing::LabelNames(f.samples.front().labels)) << f.name;
    }
  }
}

}  // namespace
}  // namespace gpuscope
