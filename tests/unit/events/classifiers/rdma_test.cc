// Unit tests for the verbs completion errors of UCX, Open MPI, the verbs providers and libfabric
// (src/events/classifiers/rdma.cc): which fields each format yields, and what must not match. The
// fixture corpus (tests/fixtures/events/jobs/ib_completion.log) checks the class of every format through
// the dispatcher; these check the fields that tie an error to a device, a QP, a rank and a status.
#include <gtest/gtest.h>

#include <string>

#include "src/events/classifiers/job_classifier.h"

namespace gpuscope {
namespace {

TEST(EventsJobsRdma, UcxLineNamesHostPidHcaPortLinkLayerAndTheStatusOfItsSyndrome) {
  const auto event = ClassifyJobLine(
      "[gpu-node03:41207:0:41207] ib_mlx5_log.c:177  Transport retry count exceeded on mlx5_2:1/IB (synd "
      "0x15 vend 0x81 hw_synd 0/0)");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->event_class, "ib_completion");
  EXPECT_EQ(event->severity, EventSeverity::kError);
  EXPECT_EQ(event->Field("library"), "ucx");
  EXPECT_EQ(event->Field("process_host"), "gpu-node03");
  EXPECT_EQ(event->Field("pid"), "41207");
  EXPECT_EQ(event->Field("hca"), "mlx5_2");
  EXPECT_EQ(event->Field("port"), "1");
  EXPECT_EQ(event->Field("link_layer"), "IB");
  EXPECT_EQ(event->Field("status"), "12");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RETRY_EXC_ERR");
  EXPECT_EQ(event->Field("syndrome"), "21");
  EXPECT_EQ(event->Field("vendor_err"), "129");  // 0x81, as NCCL prints the same vendor error
  EXPECT_EQ(event->Field("error"), "Transport retry count exceeded");
  EXPECT_EQ(event->summary, "UCX completion error on mlx5_2: Transport retry count exceeded");
}

TEST(EventsJobsRdma, UcxSyndromeDecidesTheStatusOverTheWords) {
  const auto event = ClassifyJobLine(
      "[n1:8812:0:8830] ib_mlx5_log.c:143  Local protection on mlx5_1:1/RoCE (synd 0x4 vend 0x56 hw_synd "
      "0/0)");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_LOC_PROT_ERR");
  EXPECT_EQ(event->Field("link_layer"), "RoCE");
}

TEST(EventsJobsRdma, OldUcxLineNamesQpWqeOpcodeAndDeviceEvenWithAPaddedPid) {
  const auto event = ClassifyJobLine(
      "[gpu-node12:6807 :0:6807] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport "
      "retry count exceeded (synd 0x15 vend 0x81) opcode RDMA_READ");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("pid"), "6807");
  EXPECT_EQ(event->Field("hca"), "mlx5_3");
  EXPECT_EQ(event->Field("port"), "1");
  EXPECT_EQ(event->Field("qp"), "0xe6d7");
  EXPECT_EQ(event->Field("wqe"), "7821");
  EXPECT_EQ(event->Field("opcode"), "RDMA_READ");
  EXPECT_EQ(event->Field("status"), "12");
  EXPECT_EQ(event->Field("error"), "Transport retry count exceeded");
}

TEST(EventsJobsRdma, OldUcxLineWithoutDeviceBehindALauncherPrefixStillHasItsQp) {
  const auto event = ClassifyJobLine(
      "Sun Oct 21 04:41:17 2025[1,620]<stderr>:[gpu-node11:27796:0:27796] ib_mlx5_log.c:113  FATAL: Error on "
      "QP 0x6b10 wqe[057]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode SEND");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("process_host"), "gpu-node11");
  EXPECT_EQ(event->Field("hca"), "");
  EXPECT_EQ(event->Field("qp"), "0x6b10");
  EXPECT_EQ(event->Field("opcode"), "SEND");
}

TEST(EventsJobsRdma, OpenMpiOpenibLineNamesRankPeerCqStatusVendorErrorAndQpIndex) {
  const auto event = ClassifyJobLine(
      "[gpu-node07][[40212,1],5][btl_openib_component.c:3644:handle_wc] from gpu-node07 to: gpu-node08 error "
      "polling LP CQ with status RETRY EXCEEDED ERROR status number 12 for wr_id 31465472 opcode 0  vendor "
      "error "
      "129 qp_idx 0");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("library"), "openmpi");
  EXPECT_EQ(event->Field("process_host"), "gpu-node07");
  EXPECT_EQ(event->Field("rank"), "5");
  EXPECT_EQ(event->Field("peer"), "gpu-node08");
  EXPECT_EQ(event->Field("cq"), "LP CQ");
  EXPECT_EQ(event->Field("status"), "12");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RETRY_EXC_ERR");
  EXPECT_EQ(event->Field("opcode"), "0");
  EXPECT_EQ(event->Field("vendor_err"), "129");
  EXPECT_EQ(event->Field("qp_idx"), "0");
  EXPECT_EQ(event->Field("error"), "RETRY EXCEEDED ERROR");
}

TEST(EventsJobsRdma, VerbsProviderLineNamesProviderAndHost) {
  const auto event = ClassifyJobLine("mlx5: gpu-node04: got completion with error:");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("library"), "verbs");
  EXPECT_EQ(event->Field("provider"), "mlx5");
  EXPECT_EQ(event->Field("process_host"), "gpu-node04");
}

TEST(EventsJobsRdma, LibfabricLineNamesProviderErrnosAndStatusFromTheWords) {
  const auto event = ClassifyJobLine(
      "libfabric:ofi_rxm:cq:rxm_cq_read_write_error():819<warn> fi_cq_readerr: err: 5, prov_err: remote "
      "access error (10)");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("library"), "libfabric");
  EXPECT_EQ(event->Field("provider"), "ofi_rxm");
  EXPECT_EQ(event->Field("fi_errno"), "5");
  EXPECT_EQ(event->Field("prov_errno"), "10");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_REM_ACCESS_ERR");
  EXPECT_EQ(event->Field("error"), "remote access error");
}

TEST(EventsJobsRdma, StatusWordsLineNeedsTheNumberAndTheWordsToAgree) {
  const auto event = ClassifyJobLine(
      "CQE ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa "
      "qp_num=0x2c10");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("library"), "other");
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RETRY_EXC_ERR");
  EXPECT_EQ(event->Field("vendor_err"), "10");
  EXPECT_EQ(event->Field("qp"), "0x2c10");
  EXPECT_FALSE(ClassifyJobLine("CQE ERROR wr_id=3 status=4(transport retry counter exceeded)").has_value());
  EXPECT_FALSE(ClassifyJobLine("GET /v1 status=200(OK) in 3 ms").has_value());
}

TEST(EventsJobsRdma, RnrRetryIsNotReadAsTransportRetry) {
  const auto event = ClassifyJobLine("CQE ERROR wr_id=9 status=13(RNR retry counter exceeded) qp_num=0x11");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->Field("status_name"), "IBV_WC_RNR_RETRY_EXC_ERR");
}

TEST(EventsJobsRdma, NcclCompletionLinesKeepTheirNcclClassifier) {
  const auto event = ClassifyJobLine(
      "gpu-node12:9911:10022 [0] NCCL WARN NET/IB : Got completion from peer 10.20.0.13<52711> with error "
      "12, "
      "opcode 129, len 0, vendor err 129");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->event_class, "ib_completion");
  EXPECT_EQ(event->Field("library"), "");
  EXPECT_EQ(event->Field("peer"), "10.20.0.13<52711>");
}

TEST(EventsJobsRdma, TruncatedAndHostileLinesAreSafe) {
  for (const std::string& line :
       {std::string("[h:1:0:1] ib_mlx5_log.c:1  (synd 0x"), std::string(" (synd 0x15"),
        std::string("[[[ (synd 0xffffffffffffffffffff vend 0x"), std::string("error polling  with status "),
        std::string("x got completion with error"), std::string("fi_cq_readerr prov_err: ("),
        std::string("status=99999999999999999999999("), std::string("status=1(") + std::string(5000, 'a'),
        std::string("[\xff\xfe:1] ib_mlx5_log.c:2  Local protection on \xff:1/IB (synd 0x4 vend 0x1)")}) {
    const auto event = ClassifyRdmaCompletionLine(line);
    if (event) {
      EXPECT_EQ(event->event_class, "ib_completion") << line;
      for (const auto& [key, value] : event->fields) EXPECT_LE(value.size(), 1030u) << key;
    }
  }
}

}  // namespace
}  // namespace gpuscope
