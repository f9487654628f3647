// Unit tests for the jobs-family classifiers (NCCL, PyTorch watchdog/OOM, CUDA errors) and the fixture
// corpus under tests/fixtures/events/jobs/ (one file per event class, plus lines that must not match).
#include "src/events/classifiers/job_classifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "src/events/classifiers/jobs_text.h"

namespace gpuscope {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_JOBS_FIXTURES) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::string> lines;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      EXPECT_TRUE(line.starts_with("# ")) << name << " must start with a provenance comment";
      first = false;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// ---- fixture corpus: every line of a class file is classified as that class by the dispatcher ----

class EventsJobsFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EventsJobsFixtureTest, EveryFixtureLineIsClassifiedAsItsFileClass) {
  const std::string event_class = GetParam();
  const auto lines = FixtureLines(event_class + ".log");
  ASSERT_THAT(lines, ::testing::Not(IsEmpty()));
  for (const auto& line : lines) {
    const auto event = ClassifyJobLine(line);
    ASSERT_TRUE(event.has_value()) << line;
    EXPECT_EQ(event->event_class, event_class) << line;
    EXPECT_FALSE(event->summary.empty()) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Classes, EventsJobsFixtureTest,
                         ::testing::Values("nccl", "ib_completion", "nccl_watchdog", "cuda_oom", "cuda"));

TEST(EventsJobsFixture, OrdinaryTrainingOutputIsNotClassified) {
  const auto lines = FixtureLines("nonmatching.log");
  ASSERT_THAT(lines, SizeIs(::testing::Gt(3u)));
  for (const auto& line : lines) EXPECT_FALSE(ClassifyJobLine(line).has_value()) << line;
}

// ---- NCCL ----

TEST(EventsJobsNccl, InfoLineWithHeaderYieldsHostPidTidDeviceAtDebugSeverity) {
  const auto event = ClassifyNcclLine("node1:1234:5678 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "nccl");
  EXPECT_EQ(event->severity, EventSeverity::kDebug);
  EXPECT_EQ(event->Field("process_host"), "node1");
  EXPECT_EQ(event->Field("pid"), "1234");
  EXPECT_EQ(event->Field("tid"), "5678");
  EXPECT_EQ(event->Field("cuda_dev"), "0");
  EXPECT_EQ(event->Field("subsystem"), "Bootstrap");
  EXPECT_EQ(event->Field("message"), "Bootstrap : Using eth0:10.0.0.1<0>");
}

TEST(EventsJobsNccl, WarnLineWithElapsedTimeAndLocationIsWarning) {
  const auto event =
      ClassifyNcclLine("node1:1234:5678 [2] 12.345678 misc/socket.cc:538 NCCL WARN Net : oops");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->severity, EventSeverity::kWarning);
  EXPECT_EQ(event->Field("process_host"), "node1");
  EXPECT_EQ(event->Field("cuda_dev"), "2");
  EXPECT_EQ(event->Field("subsystem"), "Net");
  EXPECT_EQ(event->Field("message"), "Net : oops");
}

TEST(EventsJobsNccl, Nccl226TimestampPrefixDoesNotHideHeader) {
  const auto event =
      ClassifyNcclLine("[2025-03-14 09:12:44] node9:77:78 [5] init.cc:100 NCCL WARN something failed");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("process_host"), "node9");
  EXPECT_EQ(event->Field("pid"), "77");
  EXPECT_EQ(event->Field("tid"), "78");
  EXPECT_EQ(event->Field("cuda_dev"), "5");
}

TEST(EventsJobsNccl, LauncherPrefixIsNotPartOfHost) {
  const auto event = ClassifyNcclLine("[default3]:node1:1:2 [3] NCCL INFO hello");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("process_host"), "node1");
  EXPECT_EQ(event->Field("cuda_dev"), "3");
}

TEST(EventsJobsNccl, BareWarnWithoutHeaderHasOnlyMessage) {
  const auto event = ClassifyNcclLine("NCCL WARN Error : ring 0 does not loop back");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->severity, EventSeverity::kWarning);
  EXPECT_TRUE(event->Field("process_host").empty());
  EXPECT_EQ(event->Field("message"), "Error : ring 0 does not loop back");
}

TEST(EventsJobsNccl, CommInitLineYieldsRankNranksDeviceAndBusIdAtInfo) {
  const auto event = ClassifyNcclLine(
      "node1:1234:5678 [3] NCCL INFO comm 0x55d1c9a0e2b0 rank 3 nranks 8 cudaDev 3 busId 18000 - Init "
      "COMPLETE");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->severity, EventSeverity::kInfo);
  EXPECT_EQ(event->Field("rank"), "3");
  EXPECT_EQ(event->Field("nranks"), "8");
  EXPECT_EQ(event->Field("cuda_dev"), "3");
  EXPECT_EQ(event->Field("bus_id"), "18000");
}

TEST(EventsJobsNccl, CudaFailureNamesTheCudaError) {
  const auto event = ClassifyNcclLine("n:1:2 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("cuda_error"), "out of memory");
}

TEST(EventsJobsNccl, IbCompletionErrorYieldsStatusNameAndGids) {
  const auto event = ClassifyNcclLine(
      "node1:1234:5678 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<52711> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fe80::1 remoteGid "
      "fe80::2 hca mlx5_3");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "ib_completion");
  EXPECT_EQ(event->severity, EventSeverity::kError);
  EXPECT_EQ(event->Field("subsystem"), "NET/IB");
  EXPECT_EQ(event->Field("peer"), "10.0.0.2<52711>");
  EXPECT_EQ(event->Field("status"), "12");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RETRY_EXC_ERR");
  EXPECT_EQ(event->Field("opcode"), "0");
  EXPECT_EQ(event->Field("vendor_err"), "129");
  EXPECT_EQ(event->Field("local_gid"), "fe80::1");
  EXPECT_EQ(event->Field("remote_gid"), "fe80::2");
  EXPECT_EQ(event->Field("hca"), "mlx5_3");
}

TEST(EventsJobsNccl, OldIbCompletionFormatYieldsStatus) {
  const auto event = ClassifyNcclLine(
      "NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with error 13, opcode 129, len 0, vendor err "
      "135");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("status"), "13");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RNR_RETRY_EXC_ERR");
  EXPECT_EQ(event->Field("opcode"), "129");
}

TEST(EventsJobsNccl, OutOfRangeIbStatusIsUnknownNotCrash) {
  const auto event = ClassifyNcclLine("NCCL WARN NET/IB : Got completion from peer x with status=99999");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("status_name"), "unknown");
}

TEST(EventsJobsNccl, NcclWordInsideIdentifierIsNotAMarker) {
  EXPECT_FALSE(ClassifyNcclLine("ProcessGroupNCCL WARN something"));
  EXPECT_FALSE(ClassifyNcclLine("NCCL WARNING: not a debug line"));
}

// ---- PyTorch watchdog ----

TEST(EventsJobsWatchdog, GlogPrefixedTimeoutYieldsAllFields) {
  const auto event = ClassifyTorchWatchdogLine(
      "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=10, NumelOut=20, Timeout(ms)=600000) ran for 600012 "
      "milliseconds before timing out.");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "nccl_watchdog");
  EXPECT_EQ(event->severity, EventSeverity::kError);
  EXPECT_EQ(event->Field("rank"), "3");
  EXPECT_EQ(event->Field("op"), "ALLREDUCE");
  EXPECT_EQ(event->Field("seq"), "1234");
  EXPECT_EQ(event->Field("numel_in"), "10");
  EXPECT_EQ(event->Field("numel_out"), "20");
  EXPECT_EQ(event->Field("timeout_ms"), "600000");
  EXPECT_EQ(event->Field("ran_ms"), "600012");
}

TEST(EventsJobsWatchdog, TorchrunPrefixAndPgPrefixYieldRankAndPg) {
  const auto event = ClassifyTorchWatchdogLine(
      "[rank7]:[E305 08:15:02.000123 4411 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=BROADCAST, NumelIn=1, "
      "NumelOut=1, Timeout(ms)=100) ran for 101 milliseconds before timing out.");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("rank"), "7");
  EXPECT_EQ(event->Field("pg"), "0");
  EXPECT_EQ(event->Field("op"), "BROADCAST");
}

TEST(EventsJobsWatchdog, RankFallsBackToTorchrunPrefix) {
  const auto event = ClassifyTorchWatchdogLine(
      "[rank12]:Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=5) ran "
      "for 6 milliseconds before timing out.");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("rank"), "12");
  EXPECT_TRUE(event->Field("seq").empty());
}

// ---- CUDA OOM ----

TEST(EventsJobsOom, Torch20FormatYieldsSizesInBytes) {
  const auto event = ClassifyCudaOomLine(
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 79.15 GiB total capacity; 1.00 "
      "GiB already allocated; 500.00 MiB free; 3.00 GiB reserved in total by PyTorch)");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "cuda_oom");
  EXPECT_EQ(event->severity, EventSeverity::kError);
  EXPECT_EQ(event->Field("error"), "RuntimeError");
  EXPECT_EQ(event->Field("gpu"), "1");
  EXPECT_EQ(event->Field("tried_bytes"), "2147483648");
  EXPECT_EQ(event->Field("total_bytes"), "84986665370");  // 79.15 * 2^30, rounded
  EXPECT_EQ(event->Field("free_bytes"), "524288000");
  EXPECT_EQ(event->Field("allocated_bytes"), "1073741824");
}

TEST(EventsJobsOom, Torch21CapactyTypoFormatYieldsSizes) {
  const auto event = ClassifyCudaOomLine(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
      "capacty of 79.15 GiB of which 3.06 MiB is free.");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("error"), "torch.cuda.OutOfMemoryError");
  EXPECT_EQ(event->Field("gpu"), "0");
  EXPECT_EQ(event->Field("tried_bytes"), "20971520");
  EXPECT_EQ(event->Field("total_bytes"), "84986665370");
  EXPECT_EQ(event->Field("free_bytes"), "3208643");  // 3.06 * 2^20, rounded
}

TEST(EventsJobsOom, NewestFormatYieldsGpuAndSizes) {
  const auto event = ClassifyCudaOomLine(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity "
      "of 79.19 GiB of which 1.02 GiB is free. Process 1234 has 78.16 GiB memory in use. Of the allocated "
      "memory 74.00 GiB is allocated by PyTorch");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("error"), "torch.OutOfMemoryError");
  EXPECT_EQ(event->Field("gpu"), "3");
  EXPECT_EQ(event->Field("tried_bytes"), "1610612736");
  EXPECT_EQ(event->Field("free_bytes"), "1095216660");  // 1.02 * 2^30, rounded
  EXPECT_EQ(event->Field("allocated_bytes"), "79456894976");
}

TEST(EventsJobsOom, DispatcherPrefersOomOverGenericCudaError) {
  const auto event =
      ClassifyJobLine("RuntimeError: CUDA out of memory. Tried to allocate 8.00 MiB (GPU 0; ...)");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "cuda_oom");
}

// ---- CUDA errors ----

TEST(EventsJobsCuda, IllegalMemoryAccessIsCritical) {
  const auto event =
      ClassifyCudaErrorLine("RuntimeError: CUDA error: an illegal memory access was encountered");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event_class, "cuda");
  EXPECT_EQ(event->severity, EventSeverity::kCritical);
  EXPECT_EQ(event->Field("error"), "RuntimeError");
  EXPECT_EQ(event->Field("error_name"), "cudaErrorIllegalAddress");
  EXPECT_EQ(event->Field("message"), "an illegal memory access was encountered");
}

TEST(EventsJobsCuda, DeviceSideAssertIsError) {
  const auto event = ClassifyCudaErrorLine("CUDA error: device-side assert triggered");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->severity, EventSeverity::kError);
  EXPECT_EQ(event->Field("error_name"), "cudaErrorAssert");
  EXPECT_TRUE(event->Field("error").empty());
}

TEST(EventsJobsCuda, EnumNameAloneIsRecognised) {
  const auto event = ClassifyCudaErrorLine("kernel failed: cudaErrorLaunchFailure (719)");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("error_name"), "cudaErrorLaunchFailure");
  EXPECT_EQ(event->severity, EventSeverity::kError);
}

TEST(EventsJobsCuda, DriverErrorIsRecognised) {
  const auto event = ClassifyCudaErrorLine("RuntimeError: CUDA driver error: unknown error");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("error_name"), "cudaErrorUnknown");
}

TEST(EventsJobsCuda, UnknownMessageStillClassifiesWithoutName) {
  const auto event = ClassifyCudaErrorLine("CUDA error: something new in CUDA 13");
  ASSERT_TRUE(event);
  EXPECT_TRUE(event->Field("error_name").empty());
  EXPECT_EQ(event->severity, EventSeverity::kError);
}

// ---- robustness ----

TEST(EventsJobsRobustness, InvalidUtf8AndNulBytesBecomeQuestionMarks) {
  const std::string line = std::string("CUDA error: bad \xff\xfe byte ") + std::string(1, '\0') + "end";
  const auto event = ClassifyJobLine(line);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("message"), "bad ?? byte ?end");
}

TEST(EventsJobsRobustness, MegabyteLineFieldsAreCapped) {
  std::string line = "node1:1:2 [0] NCCL WARN ";
  line.append(4 << 20, 'x');
  const auto event = ClassifyJobLine(line);
  ASSERT_TRUE(event);
  EXPECT_LE(event->Field("message").size(), jobs_text::kMaxMessageBytes + 3);
  EXPECT_LE(event->summary.size(), 600u);
}

TEST(EventsJobsRobustness, MarkerBeyondParsedHeadIsIgnored) {
  std::string line(jobs_text::kMaxParsedLine + 10, 'a');
  line += " CUDA error: an illegal memory access was encountered";
  EXPECT_FALSE(ClassifyJobLine(line));
}

TEST(EventsJobsRobustness, EmptyAndTruncatedLinesDoNotMatch) {
  EXPECT_FALSE(ClassifyJobLine(""));
  EXPECT_FALSE(ClassifyJobLine("N"));
  EXPECT_FALSE(ClassifyJobLine("NC"));
  EXPECT_FALSE(ClassifyJobLine("CUD"));
  EXPECT_FALSE(ClassifyJobLine("cudaError"));
  const auto event = ClassifyJobLine("NCCL WARN");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->Field("message"), "");
}

TEST(EventsJobsText, ByteSizesUseBinaryUnits) {
  EXPECT_EQ(jobs_text::ParseByteSize("2.00 GiB"), 2ULL << 30);
  EXPECT_EQ(jobs_text::ParseByteSize("20.00 MiB"), 20ULL << 20);
  EXPECT_EQ(jobs_text::ParseByteSize("512 bytes"), 512u);
  EXPECT_EQ(jobs_text::ParseByteSize("1.5 KiB"), 1536u);
  EXPECT_FALSE(jobs_text::ParseByteSize("GiB"));
  EXPECT_FALSE(jobs_text::ParseByteSize("2.00 parsecs"));
  EXPECT_FALSE(jobs_text::ParseByteSize("99999999999999999999999 GiB"));
}

TEST(EventsJobsText, SanitizeKeepsValidUtf8AndCutsAtBoundary) {
  EXPECT_EQ(jobs_text::Sanitize("h\xc3\xa9llo"), "h\xc3\xa9llo");
  EXPECT_EQ(jobs_text::Sanitize("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");
  EXPECT_EQ(jobs_text::Sanitize("\xed\xa0\x80"), "???");  // UTF-16 surrogate encoded in UTF-8
}

}  // namespace
}  // namespace gpuscope
