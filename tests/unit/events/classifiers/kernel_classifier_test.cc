// Tests for the kernel-family classifiers: XID/SXid, the OOM killer and Slurm interruption lines, one by
// one and through the ClassifyKernelLine dispatcher, against the fixture corpus in
// tests/fixtures/events/kernel/.
#include "src/events/classifiers/kernel_classifier.h"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/utf8.h"
#include "src/events/classifiers/oom.h"
#include "src/events/classifiers/slurm_lines.h"
#include "src/events/classifiers/xid.h"
#include "src/events/classifiers/xid_catalog.h"

namespace gpuscope {
namespace {

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_EVENTS_KERNEL_FIXTURES) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::string> lines;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      EXPECT_TRUE(line.starts_with("# "))
          << name << " must start with a line saying where its format comes from";
      first = false;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// ---- fixture corpus through the dispatcher ----

struct FixtureCase {
  const char* file;
  const char* expected_class_a;
  const char* expected_class_b;  // a second class the file may hold, or ""
};
// Printed into the test's name (ctest lists it); without this gtest prints the struct's bytes, pointers
// included, and the name changes from build to build.
void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.file; }

class EventsKernelFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(EventsKernelFixtureTest, EveryFixtureLineClassifiesToItsClassWithValidUtf8Fields) {
  const FixtureCase& c = GetParam();
  std::vector<std::string> lines = FixtureLines(c.file);
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    std::optional<Event> event = ClassifyKernelLine(line);
    ASSERT_TRUE(event.has_value()) << line;
    EXPECT_TRUE(event->event_class == c.expected_class_a || event->event_class == c.expected_class_b)
        << event->event_class << " for " << line;
    EXPECT_FALSE(event->summary.empty());
    for (const auto& [key, value] : event->fields) {
      EXPECT_TRUE(IsValidUtf8(value)) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, EventsKernelFixtureTest,
                         ::testing::Values(FixtureCase{"xid.log", "xid", ""},
                                           FixtureCase{"sxid.log", "sxid", ""},
                                           FixtureCase{"oom.log", "oom", "oom_summary"},
                                           FixtureCase{"slurm.log", "slurm_interruption", ""}));

TEST(EventsKernelDispatcher, OrdinaryLogLinesProduceNoEvent) {
  for (const std::string& line : FixtureLines("ordinary.log")) {
    EXPECT_FALSE(ClassifyKernelLine(line).has_value()) << line;
  }
}

// ---- XID ----

TEST(EventsKernelXid, ParsesBusIdCodePidProcessAndCatalogAction) {
  auto e =
      ClassifyXidLine("NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event_class, "xid");
  EXPECT_EQ(e->severity, EventSeverity::kCritical);
  EXPECT_EQ(e->Field("pci_bus_id"), "00000000:18:00.0");
  EXPECT_EQ(e->Field("xid"), "79");
  EXPECT_EQ(e->Field("name"), "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(e->Field("action"), "reboot");
  EXPECT_EQ(e->Field("pid"), "1234");
  EXPECT_EQ(e->Field("process"), "python3");
  EXPECT_EQ(e->Field("message"), "GPU has fallen off the bus.");
}

TEST(EventsKernelXid, NormalisesLowerCaseHexBusToNvmlUpperCase) {
  auto e = ClassifyXidLine("[  120.000000] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception: ESR 0x1");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("pci_bus_id"), "00000000:3B:00.0");
  EXPECT_EQ(e->Field("action"), "restart_app");
  EXPECT_EQ(e->Field("pid"), "");
  EXPECT_EQ(e->Field("message"), "Graphics Exception: ESR 0x1");
}

TEST(EventsKernelXid, ParsesOldFormatWithoutPciPrefix) {
  auto e = ClassifyXidLine("<4>NVRM: Xid (0000:03:00): 31, Ch 00000010, engmask 00000101");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("pci_bus_id"), "00000000:03:00.0");
  EXPECT_EQ(e->Field("xid"), "31");
  EXPECT_EQ(e->Field("message"), "Ch 00000010, engmask 00000101");
}

TEST(EventsKernelXid, UnknownPidAndNameAreLeftOut) {
  auto e = ClassifyXidLine(
      "kernel: NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, DBE detected");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("pid"), "");
  EXPECT_EQ(e->Field("process"), "");
  EXPECT_EQ(e->Field("message"), "DBE detected");
  EXPECT_EQ(e->Field("action"), "reset_gpu");
}

TEST(EventsKernelXid, UnknownCodeAsksForSupportAtErrorSeverity) {
  auto e = ClassifyXidLine("NVRM: Xid (PCI:0000:18:00): 999, something new");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("name"), "UNKNOWN");
  EXPECT_EQ(e->Field("action"), "contact_support");
  EXPECT_EQ(e->severity, EventSeverity::kError);
}

TEST(EventsKernelXid, Xid154ActionComesFromTheNewRecoveryAction) {
  auto reboot = ClassifyXidLine(
      "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
      "Required)");
  ASSERT_TRUE(reboot);
  EXPECT_EQ(reboot->Field("action"), "reboot");
  EXPECT_EQ(reboot->severity, EventSeverity::kCritical);
  auto none = ClassifyXidLine(
      "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x1 (Reset Required) to 0x0 (None)");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->Field("action"), "ignore");
}

TEST(EventsKernelXid, RejectsMalformedAddressOrCode) {
  EXPECT_FALSE(ClassifyXidLine("NVRM: Xid (PCI:zz:18:00): 79, x"));
  EXPECT_FALSE(ClassifyXidLine("NVRM: Xid (PCI:0000:18:00): , x"));
  EXPECT_FALSE(ClassifyXidLine("NVRM: Xid (PCI:0000:18:00) 79, x"));
  EXPECT_FALSE(ClassifyXidLine("NVRM: Xid (PCI:0000:18:00"));
  EXPECT_FALSE(ClassifyXidLine("NVRM: Xid"));
}

TEST(EventsKernelXid, SxidLineIsNotAGpuXid) {
  EXPECT_FALSE(ClassifyXidLine("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32"));
}

TEST(EventsKernelXid, LongMessageIsCappedAndInvalidUtf8Replaced) {
  std::string line = "NVRM: Xid (PCI:0000:18:00): 13, \xff\xfe";
  line += std::string(1 << 20, 'a');
  line += std::string("\0tail", 5);
  auto e = ClassifyXidLine(line);
  ASSERT_TRUE(e);
  EXPECT_LE(e->Field("message").size(), 256u);
  EXPECT_TRUE(
      e->Field("message").starts_with("\xEF\xBF\xBD\xEF\xBF\xBD"
                                      "aaa"));
  EXPECT_TRUE(IsValidUtf8(e->summary));
}

TEST(EventsKernelXidCatalog, CoversTheCodesOperatorsMeetAndIsSorted) {
  for (uint32_t code :
       {8u,   11u,  13u,  25u,  31u,  32u,  37u,  38u,  39u,  40u,  41u,  43u,  44u,  45u,  46u,  48u,  54u,
        60u,  61u,  62u,  63u,  64u,  66u,  67u,  68u,  69u,  70u,  71u,  72u,  74u,  75u,  76u,  77u,  78u,
        79u,  80u,  82u,  83u,  84u,  85u,  86u,  88u,  89u,  92u,  93u,  94u,  95u,  96u,  97u,  98u,  99u,
        100u, 101u, 102u, 103u, 104u, 105u, 106u, 107u, 109u, 110u, 119u, 120u, 121u, 126u, 127u, 128u, 129u,
        130u, 131u, 132u, 133u, 134u, 135u, 136u, 137u, 139u, 140u, 141u, 142u, 143u, 144u, 145u, 146u, 147u,
        148u, 149u, 150u, 151u, 152u, 153u, 154u, 155u, 156u, 157u, 158u, 159u, 160u, 161u}) {
    EXPECT_TRUE(IsKnownXid(code)) << code;
    EXPECT_EQ(LookupXid(code).code, code);
  }
  EXPECT_FALSE(IsKnownXid(0));
  // Rows NVIDIA's catalog marks "Unused" on Ampere and newer, and rows with no action yet, stay unknown.
  for (uint32_t code :
       {1u, 14u, 56u, 57u, 65u, 81u, 87u, 90u, 91u, 108u, 111u, 118u, 122u, 125u, 138u, 162u, 172u}) {
    EXPECT_FALSE(IsKnownXid(code)) << code;
  }
  uint32_t previous = 0;
  for (const XidInfo& info : XidCatalog()) {
    EXPECT_GT(info.code, previous);
    previous = info.code;
    EXPECT_FALSE(info.description.empty());
    EXPECT_FALSE(info.name.empty());
  }
}

// The severity follows the action (xid_catalog.cc): an alert routed on one must agree with the other.
TEST(EventsKernelXidCatalog, SeverityFollowsTheAction) {
  EXPECT_EQ(XidActionSeverity(XidAction::kIgnore), EventSeverity::kWarning);
  EXPECT_EQ(XidActionSeverity(XidAction::kRestartApp), EventSeverity::kError);
  EXPECT_EQ(XidActionSeverity(XidAction::kResetGpu), EventSeverity::kCritical);
  EXPECT_EQ(XidActionSeverity(XidAction::kReboot), EventSeverity::kCritical);
  EXPECT_EQ(XidActionSeverity(XidAction::kContactSupport), EventSeverity::kCritical);
  for (const XidInfo& info : XidCatalog()) {
    switch (info.action) {
      case XidAction::kIgnore:
        EXPECT_TRUE(info.severity == EventSeverity::kWarning || info.severity == EventSeverity::kInfo)
            << info.code;
        break;
      case XidAction::kRestartApp:
        EXPECT_EQ(info.severity, EventSeverity::kError) << info.code;
        break;
      case XidAction::kResetGpu:
      case XidAction::kReboot:
        EXPECT_EQ(info.severity, EventSeverity::kCritical) << info.code;
        break;
      case XidAction::kContactSupport:
        // 61 is unused on Ampere and newer and is treated like an unknown code.
        EXPECT_EQ(info.severity, info.code == 61 ? EventSeverity::kError : EventSeverity::kCritical)
            << info.code;
        break;
    }
  }
}

// The entries the 2026-11-29 check against NVIDIA's Xid catalog corrected, and one per bucket mapping.
TEST(EventsKernelXidCatalog, ActionsFollowNvidiasImmediateActionBucket) {
  struct Case {
    uint32_t code;
    std::string_view action;
  };
  for (const Case& c : std::initializer_list<Case>{
           {63, "ignore"},            // IGNORE (was reset_gpu)
           {64, "reset_gpu"},         // RESET_GPU
           {109, "reset_gpu"},        // RESET_GPU (was restart_app)
           {147, "ignore"},           // WORKFLOW_NVLINK5_ERR, every decoded row IGNORE (was reset_gpu)
           {148, "ignore"},           // likewise
           {149, "reset_gpu"},        // WORKFLOW_NVLINK5_ERR with fatal sub-codes
           {61, "contact_support"},   // Unused on Ampere and newer
           {45, "ignore"},            // WORKFLOW_XID_45
           {48, "reset_gpu"},         // WORKFLOW_XID_48
           {74, "reset_gpu"},         // WORKFLOW_NVLINK_ERR
           {79, "reboot"},            // RESTART_BM
           {151, "reboot"},           // RESTART_VM
           {54, "contact_support"},   // CHECK_MECHANICALS
           {78, "contact_support"},   // UPDATE_SWFW
           {142, "contact_support"},  // CONTACT_SUPPORT
           {159, "reset_gpu"},        // CHECK_UVM
           {137, "ignore"},           // IGNORE
           {105, "restart_app"},      // RESTART_APP
       }) {
    EXPECT_EQ(XidActionName(LookupXid(c.code).action), c.action) << c.code;
  }
  EXPECT_EQ(LookupXid(63).severity, EventSeverity::kWarning);
  EXPECT_EQ(LookupXid(64).severity, EventSeverity::kCritical);
  EXPECT_EQ(LookupXid(109).severity, EventSeverity::kCritical);
  EXPECT_EQ(LookupXid(106).severity, EventSeverity::kInfo);
}

TEST(EventsKernelXidCatalog, MnemonicsAreSpelledAsTheDriverAndCatalogSpellThem) {
  EXPECT_EQ(LookupXid(31).name, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT");
  EXPECT_EQ(LookupXid(48).name, "ROBUST_CHANNEL_GPU_ECC_DBE");
  EXPECT_EQ(LookupXid(140).name, "UNRECOVERABLE_ECC_ERROR_ESCAPE");
  EXPECT_EQ(LookupXid(143).name, "GPU_INIT_ERROR");
  EXPECT_EQ(LookupXid(148).name, "NVLINK_NVLPW_CTRL_ERROR");
}

TEST(EventsKernelXid, RowRemapEventAsksForNothingAndContextSwitchTimeoutForAReset) {
  auto remap = ClassifyXidLine("NVRM: Xid (PCI:0000:86:00): 63, Row Remapper: New row marked for remapping");
  ASSERT_TRUE(remap);
  EXPECT_EQ(remap->Field("name"), "INFOROM_DRAM_RETIREMENT_EVENT");
  EXPECT_EQ(remap->Field("action"), "ignore");
  EXPECT_EQ(remap->severity, EventSeverity::kWarning);
  auto ctxsw = ClassifyXidLine("NVRM: Xid (PCI:0000:86:00): 109, pid=77, name=python3, Ctx switch timeout");
  ASSERT_TRUE(ctxsw);
  EXPECT_EQ(ctxsw->Field("action"), "reset_gpu");
  EXPECT_EQ(ctxsw->severity, EventSeverity::kCritical);
}

// ---- SXid ----

TEST(EventsKernelSxid, ParsesDeviceBusCodeAndFatality) {
  auto e = ClassifySxidLine(
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress error (First)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event_class, "sxid");
  EXPECT_EQ(e->severity, EventSeverity::kWarning);
  EXPECT_EQ(e->Field("nvswitch"), "nvidia-nvswitch0");
  EXPECT_EQ(e->Field("pci_bus_id"), "00000000:05:00.0");
  EXPECT_EQ(e->Field("sxid"), "12028");
  EXPECT_EQ(e->Field("fatal"), "false");
  EXPECT_EQ(e->Field("message"), "Link 32 egress error (First)");

  auto fatal =
      ClassifySxidLine("[ 1.0] nvidia-nvswitch3: SXid (PCI:0000:88:00.0): 24007, Fatal, Link 44 DBE");
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->severity, EventSeverity::kCritical);
  EXPECT_EQ(fatal->Field("nvswitch"), "nvidia-nvswitch3");
  EXPECT_EQ(fatal->Field("action"), "reset_gpu");
}

TEST(EventsKernelSxid, ContinuationLinesOfAReportAreNotCountedAgain) {
  EXPECT_FALSE(
      ClassifySxidLine("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Severity 0 Engine instance 32"));
  EXPECT_FALSE(ClassifySxidLine("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Data {0x0, 0x0}"));
}

// ---- OOM ----

TEST(EventsKernelOom, ParsesKilledProcessPidCommandUidAndRssBytes) {
  auto e = ClassifyOomKillLine(
      "[ 8123.4] Out of memory: Killed process 1234 (python3) total-vm:10485760kB, anon-rss:8388608kB, "
      "file-rss:1024kB, shmem-rss:2kB, UID:1001 pgtables:20480kB oom_score_adj:-17");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event_class, "oom");
  EXPECT_EQ(e->severity, EventSeverity::kError);
  EXPECT_EQ(e->Field("scope"), "system");
  EXPECT_EQ(e->Field("pid"), "1234");
  EXPECT_EQ(e->Field("process"), "python3");
  EXPECT_EQ(e->Field("uid"), "1001");
  EXPECT_EQ(e->Field("rss_bytes"), std::to_string((8388608ull + 1024 + 2) * 1024));
  EXPECT_EQ(e->Field("anon_rss_bytes"), std::to_string(8388608ull * 1024));
  EXPECT_EQ(e->Field("total_vm_bytes"), std::to_string(10485760ull * 1024));
  EXPECT_EQ(e->Field("oom_score_adj"), "-17");
}

TEST(EventsKernelOom, MemoryCgroupKillHasMemcgScopeAndCommandWithSpaces) {
  auto e = ClassifyOomKillLine(
      "Memory cgroup out of memory: Killed process 5678 (my prog) total-vm:2048kB, anon-rss:1000kB, "
      "file-rss:24kB, shmem-rss:0kB, UID:0 pgtables:64kB oom_score_adj:0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("scope"), "memcg");
  EXPECT_EQ(e->Field("process"), "my prog");
  EXPECT_EQ(e->Field("uid"), "0");
}

TEST(EventsKernelOom, RejectsKilledProcessWithoutPidOrCommand) {
  EXPECT_FALSE(ClassifyOomKillLine("Out of memory: Killed process abc (x)"));
  EXPECT_FALSE(ClassifyOomKillLine("Out of memory: Killed process 12 python"));
  EXPECT_FALSE(ClassifyOomKillLine("Out of memory: Killed process 12 (python"));
}

TEST(EventsKernelOom, SummaryLineGivesSlurmJobFromCgroupV1Path) {
  auto e = ClassifyOomSummaryLine(
      "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/slurm/"
      "uid_1001/job_42,task_memcg=/slurm/uid_1001/job_42/step_0/task_0,task=python3,pid=1234,uid=1001");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event_class, "oom_summary");
  EXPECT_EQ(e->Field("constraint"), "CONSTRAINT_MEMCG");
  EXPECT_EQ(e->Field("job_id"), "42");
  EXPECT_EQ(e->Field("step_id"), "0");
  EXPECT_EQ(e->Field("pid"), "1234");
  EXPECT_EQ(e->Field("process"), "python3");
  EXPECT_EQ(e->Field("uid"), "1001");
}

TEST(EventsKernelOom, SlurmIdsFromCgroupV2PathAndNonSlurmPaths) {
  SlurmCgroupIds v2 = SlurmIdsFromCgroupPath("/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0");
  EXPECT_EQ(v2.job_id, "77");
  EXPECT_EQ(v2.step_id, "batch");
  SlurmCgroupIds none = SlurmIdsFromCgroupPath("/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(none.job_id, "");
  EXPECT_EQ(none.step_id, "");
  EXPECT_EQ(SlurmIdsFromCgroupPath("/slurm/job_abc/step_0").job_id, "");
}

// ---- Slurm ----

struct CancelCase {
  const char* line;
  const char* job;
  const char* step;
  const char* node;
  const char* reason;
  EventSeverity severity;
};
// A stable, unique test name (see FixtureCase): "42_time_limit", "42.1_time_limit".
void PrintTo(const CancelCase& c, std::ostream* os) {
  *os << c.job << (*c.step != '\0' ? "." : "") << c.step << "_" << c.reason;
}

class EventsKernelSlurmCancelTest : public ::testing::TestWithParam<CancelCase> {};

TEST_P(EventsKernelSlurmCancelTest, ParsesJobStepNodeAndReason) {
  const CancelCase& c = GetParam();
  auto e = ClassifySlurmCancelLine(c.line);
  ASSERT_TRUE(e) << c.line;
  EXPECT_EQ(e->event_class, "slurm_interruption");
  EXPECT_EQ(e->Field("job_id"), c.job);
  EXPECT_EQ(e->Field("step_id"), c.step);
  EXPECT_EQ(e->Field("node"), c.node);
  EXPECT_EQ(e->Field("reason"), c.reason);
  EXPECT_EQ(e->severity, c.severity);
}

INSTANTIATE_TEST_SUITE_P(
    Reasons, EventsKernelSlurmCancelTest,
    ::testing::Values(
        CancelCase{
            "slurmstepd: error: *** JOB 42 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***",
            "42", "", "node1", "time_limit", EventSeverity::kWarning},
        CancelCase{
            "slurmstepd: error: *** JOB 43 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO PREEMPTION ***",
            "43", "", "node1", "preemption", EventSeverity::kWarning},
        CancelCase{
            "slurmstepd: error: *** JOB 44 ON n2 CANCELLED AT 2026-01-02T03:04:05 DUE TO NODE FAILURE, SEE "
            "SLURMCTLD LOG FOR DETAILS ***",
            "44", "", "n2", "node_failure", EventSeverity::kError},
        CancelCase{"slurmstepd: error: *** JOB 45 ON node1 CANCELLED AT 2026-01-02T03:04:05 ***", "45", "",
                   "node1", "cancelled", EventSeverity::kWarning},
        CancelCase{
            "slurmstepd: error: *** JOB 46 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO JOB REQUEUE ***",
            "46", "", "node1", "job_requeue", EventSeverity::kWarning},
        CancelCase{"slurmstepd: error: *** JOB 47 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO SIGNAL "
                   "Terminated ***",
                   "47", "", "node1", "signal", EventSeverity::kWarning},
        CancelCase{"slurmstepd: error: *** STEP 42.0 ON node1 CANCELLED AT 2026-01-02T03:04:05 ***", "42",
                   "0", "node1", "cancelled", EventSeverity::kWarning},
        CancelCase{"srun: error: *** STEP 42.1 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***", "42",
                   "1", "", "time_limit", EventSeverity::kWarning},
        CancelCase{
            "slurmstepd: error: *** JOB 48 STEPD TERMINATED ON node1 AT 2026-01-02T03:04:05 DUE TO JOB NOT "
            "ENDING WITH SIGNALS ***",
            "48", "", "", "stepd_terminated", EventSeverity::kError}));

TEST(EventsKernelSlurm, SignalReasonCarriesTheSignalName) {
  auto e = ClassifySlurmCancelLine(
      "*** JOB 47 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO SIGNAL Terminated ***");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("signal"), "Terminated");
}

TEST(EventsKernelSlurm, RejectsBannersThatAreNotJobsOrSteps) {
  EXPECT_FALSE(ClassifySlurmCancelLine("*** JOB abc ON node1 CANCELLED AT x ***"));
  EXPECT_FALSE(
      ClassifySlurmCancelLine("*** JOB 42 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT"));
  EXPECT_FALSE(ClassifySlurmCancelLine("*** Hello world ***"));
}

TEST(EventsKernelSlurm, StepdOomLineGivesJobStepAndCount) {
  auto e = ClassifySlurmOomLine(
      "slurmstepd: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM "
      "Killed.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event_class, "slurm_interruption");
  EXPECT_EQ(e->severity, EventSeverity::kError);
  EXPECT_EQ(e->Field("job_id"), "42");
  EXPECT_EQ(e->Field("step_id"), "0");
  EXPECT_EQ(e->Field("reason"), "oom_kill");
  EXPECT_EQ(e->Field("count"), "1");

  auto old = ClassifySlurmOomLine("slurmstepd: error: Detected 2 oom-kill event(s) in step 50.batch cgroup.");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->Field("job_id"), "50");
  EXPECT_EQ(old->Field("step_id"), "batch");
  EXPECT_EQ(old->Field("count"), "2");
}

TEST(EventsKernelSlurm, SrunTaskExitAndSignal) {
  auto exit = ClassifySrunTaskLine("srun: error: node1: task 3: Exited with exit code 1");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->Field("node"), "node1");
  EXPECT_EQ(exit->Field("tasks"), "3");
  EXPECT_EQ(exit->Field("reason"), "task_exit");
  EXPECT_EQ(exit->Field("exit_code"), "1");
  EXPECT_EQ(exit->severity, EventSeverity::kError);

  auto killed = ClassifySrunTaskLine("srun: error: node2: tasks 0-3,5: Killed");
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->Field("tasks"), "0-3,5");
  EXPECT_EQ(killed->Field("reason"), "task_signal");
  EXPECT_EQ(killed->Field("signal"), "Killed");
}

TEST(EventsKernelSlurm, OtherSrunErrorsAreNotTaskFailures) {
  EXPECT_FALSE(ClassifySrunTaskLine("srun: error: Unable to allocate resources: Invalid partition name"));
  EXPECT_FALSE(ClassifySrunTaskLine("srun: error: node1: task x: Killed"));
}

// ---- robustness ----

TEST(EventsKernelDispatcher, GarbageNulBytesAndMegabyteLinesNeverCrash) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  EXPECT_NO_FATAL_FAILURE((void)ClassifyKernelLine(garbage));
  std::string big(1 << 20, 'x');
  EXPECT_FALSE(ClassifyKernelLine(big).has_value());
  std::string nul_xid = std::string("NVRM: Xid (PCI:0000:18:00): 79, \0\0\0", 35);
  auto e = ClassifyKernelLine(nul_xid);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->Field("message").find('\0'), std::string::npos);
  for (const char* prefix : {"NVRM: Xid (", "Killed process ", "oom-kill:constraint=", "*** JOB ",
                             "srun: error: ", "Detected 1 oom_kill event in StepId="}) {
    std::string truncated(prefix);
    EXPECT_NO_FATAL_FAILURE((void)ClassifyKernelLine(truncated));
    truncated += std::string(1 << 16, '9');
    auto maybe = ClassifyKernelLine(truncated);
    if (maybe) {
      for (const auto& [key, value] : maybe->fields) EXPECT_LE(value.size(), 256u) << prefix << key;
    }
  }
}

}  // namespace
}  // namespace gpuscope
