#include "src/cli/check_findings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

// A node's exposition as the agent writes it (text 0.0.4), built family by family: Healthy() sets every
// family the check reads, a test then overrides one series to make its fault.
class Exposition {
 public:
  static std::string Gpu(int i, const std::string& extra = "") {
    return "gpu=\"" + std::to_string(i) + "\",UUID=\"GPU-0000000" + std::to_string(i) +
           "\",pci_bus_id=\"00000000:1" + std::to_string(i) + ":00.0\",device=\"nvidia" + std::to_string(i) +
           "\",modelName=\"NVIDIA H100 80GB "
           "HBM3\",Hostname=\"gpu-node-01\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"" +
           (extra.empty() ? "" : "," + extra);
  }

  void Set(const std::string& family, const std::string& type, const std::string& labels, double value) {
    types_[family] = type;
    series_[family][labels] = value;
  }

  void Clear(const std::string& family) { series_.erase(family); }

  static Exposition Healthy(int gpus) {
    Exposition e;
    for (const char* c : {"gpu", "host", "infiniband"}) {
      e.Set("gpuscope_collector_success", "gauge", std::string("collector=\"") + c + "\"", 1);
    }
    e.Set("gpuscope_training_step_duration_seconds_bucket", "histogram", "rank=\"0\",le=\"+Inf\"", 3);
    for (int i = 0; i < gpus; ++i) {
      e.Set("gpuscope_gpu_info", "gauge", Gpu(i, "serial=\"165000000" + std::to_string(i) + "\""), 1);
      e.Set("gpuscope_gpu_up", "gauge", Gpu(i), 1);
      e.Set("DCGM_FI_DEV_GPU_UTIL", "gauge", Gpu(i), 97);
      e.Set("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", Gpu(i), 0);
      e.Set("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", Gpu(i), 12);
      e.Set("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", Gpu(i), 0);
      e.Set("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", Gpu(i), 0);
      e.Set("DCGM_FI_DEV_RETIRED_PENDING", "counter", Gpu(i), 0);
      e.Set("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", Gpu(i), 16);
      e.Set("gpuscope_gpu_pcie_link_max_width", "gauge", Gpu(i), 16);
      e.Set("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", Gpu(i), 5);
      e.Set("gpuscope_gpu_pcie_link_max_generation", "gauge", Gpu(i), 5);
      for (const char* reason : {"gpu_idle", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown"}) {
        e.Set("gpuscope_gpu_clock_event_active", "gauge", Gpu(i, std::string("reason=\"") + reason + "\""),
              0);
      }
      for (int link = 0; link < 2; ++link) {
        const std::string l = "link=\"" + std::to_string(link) + "\"";
        e.Set("gpuscope_nvlink_up", "gauge", Gpu(i, l), 1);
        for (const char* counter : {"crc_flit", "replay", "ecc_data"}) {
          e.Set("gpuscope_nvlink_errors_total", "counter", Gpu(i, l + ",counter=\"" + counter + "\""), 0);
        }
      }
      e.Set("gpuscope_gpu_numa_info", "gauge",
            "pci_bus_id=\"0000:1" + std::to_string(i) + ":00.0\",numa_node=\"0\",local_cpus=\"0-15\"", 1);
    }
    e.Set("gpuscope_xid_errors_total", "counter", Gpu(0, "xid=\"13\",action=\"restart_app\""), 2);
    e.Set("gpuscope_infiniband_port_state_id", "gauge",
          "device=\"mlx5_0\",port=\"1\",link_layer=\"InfiniBand\"", 4);
    e.Set("gpuscope_infiniband_port_physical_state_id", "gauge",
          "device=\"mlx5_0\",port=\"1\",link_layer=\"InfiniBand\"", 5);
    e.Set("gpuscope_infiniband_port_state_id", "gauge",
          "device=\"irdma0\",port=\"1\",link_layer=\"Ethernet\"", 1);
    e.Set("gpuscope_infiniband_port_physical_state_id", "gauge",
          "device=\"irdma0\",port=\"1\",link_layer=\"Ethernet\"", 3);
    return e;
  }

  std::string Text() const {
    std::string out;
    for (const auto& [family, series] : series_) {
      out += "# HELP " + family + " for the test\n# TYPE " + family + " " + types_.at(family) + "\n";
      for (const auto& [labels, value] : series) {
        char number[32];
        std::snprintf(number, sizeof number, "%g", value);
        out += family + "{" + labels + "} " + number + "\n";
      }
    }
    return out;
  }

 private:
  std::map<std::string, std::string> types_;
  std::map<std::string, std::map<std::string, double>> series_;
};

std::vector<CheckFinding> Evaluate(const Exposition& e, CheckOptions options = {}) {
  return EvaluateAgentMetrics(e.Text(), options);
}

std::vector<CheckFinding> NotPassing(const std::vector<CheckFinding>& findings) {
  std::vector<CheckFinding> out;
  for (const CheckFinding& f : findings) {
    if (f.status != CheckStatus::kPass) out.push_back(f);
  }
  return out;
}

TEST(CheckFindings, HealthyNodePassesEveryCheckOnceWithoutRunbooks) {
  const std::vector<CheckFinding> findings = Evaluate(Exposition::Healthy(8));
  std::vector<std::string> checks;
  for (const CheckFinding& f : findings) {
    checks.push_back(f.check);
    EXPECT_EQ(f.status, CheckStatus::kPass) << f.check << ": " << f.message;
    EXPECT_EQ(f.runbook, "") << f.check;
  }
  EXPECT_EQ(checks, (std::vector<std::string>{"agent", "nvml", "gpus", "driver", "ecc", "memory", "xid",
                                              "pcie", "nvlink", "clocks", "infiniband"}));
  EXPECT_EQ(Verdict(findings), CheckStatus::kPass);
  EXPECT_EQ(ExitCodeOf(Verdict(findings)), 0);
  EXPECT_EQ(findings[2].message, "8 GPUs present, all answering");
  // The application XID is named but does not fail; the disabled port is off on purpose.
  EXPECT_EQ(findings[6].message, "no XID asking for a GPU reset or reboot (others seen: 13)");
  EXPECT_EQ(findings[10].message, "1 ports Active; irdma0 port 1 disabled");
}

TEST(CheckFindings, MigNodeWithInstanceSeriesBesideGpuSeriesPasses) {
  // The agent writes a MIG instance's series in the GPU's family, with GPU_I_PROFILE and GPU_I_ID added.
  Exposition e = Exposition::Healthy(2);
  e.Set("DCGM_FI_DEV_FB_FREE", "gauge", Exposition::Gpu(0), 1000);
  e.Set("DCGM_FI_DEV_FB_FREE", "gauge", Exposition::Gpu(0, "GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\""), 400);
  e.Set("gpuscope_gpu_up", "gauge", Exposition::Gpu(0, "GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\""), 1);
  const std::vector<CheckFinding> findings = Evaluate(e);
  EXPECT_EQ(Verdict(findings), CheckStatus::kPass) << RenderFindingsText(findings);
  EXPECT_EQ(findings[2].message, "2 GPUs present, all answering");
}

TEST(CheckFindings, DoubleBitEccErrorFailsThatGpuWithItsRunbook) {
  Exposition e = Exposition::Healthy(8);
  e.Set("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", Exposition::Gpu(5), 1);
  CheckOptions options;
  options.runbook_url_base = "https://wiki.example/runbooks/";
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e, options));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].check, "ecc");
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);
  EXPECT_EQ(bad[0].subject, "GPU 5 (GPU-00000005)");
  EXPECT_EQ(bad[0].message, "1 volatile double-bit ECC error since the driver loaded");
  EXPECT_EQ(bad[0].runbook, "https://wiki.example/runbooks/GpuEccDoubleBitError.md");
}

TEST(CheckFindings, RowRemapFailureAndPendingRepairsFail) {
  Exposition e = Exposition::Healthy(4);
  e.Set("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", Exposition::Gpu(1), 1);
  e.Set("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", Exposition::Gpu(2), 1);
  e.Set("DCGM_FI_DEV_RETIRED_PENDING", "counter", Exposition::Gpu(3), 1);
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 3u);
  for (const CheckFinding& f : bad) {
    EXPECT_EQ(f.check, "memory");
    EXPECT_EQ(f.status, CheckStatus::kFail);
  }
  EXPECT_THAT(bad[0].runbook, HasSubstr("/GpuRowRemapFailure.md"));
  EXPECT_EQ(bad[1].subject, "GPU 2 (GPU-00000002)");
  EXPECT_THAT(bad[1].message, HasSubstr("row remap pending"));
  EXPECT_THAT(bad[2].message, HasSubstr("page retirement pending"));
  EXPECT_THAT(bad[2].runbook, HasSubstr("/GpuRowRemapPending.md"));
}

TEST(CheckFindings, XidWhoseCatalogActionIsResetOrRebootFailsAndApplicationXidDoesNot) {
  Exposition e = Exposition::Healthy(8);
  e.Set("gpuscope_xid_errors_total", "counter", Exposition::Gpu(1, "xid=\"79\",action=\"reboot\""), 1);
  e.Set("gpuscope_xid_last_seen_timestamp_seconds", "gauge",
        Exposition::Gpu(1, "xid=\"79\",action=\"reboot\""), 1795000000);
  e.Set("gpuscope_xid_errors_total", "counter", Exposition::Gpu(5, "xid=\"48\",action=\"reset_gpu\""), 2);
  e.Set("gpuscope_xid_errors_total", "counter", Exposition::Gpu(6, "xid=\"94\",action=\"restart_app\""), 1);
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].subject, "GPU 1 (GPU-00000001)");
  EXPECT_EQ(bad[0].message, "XID 79 x1 (catalog action: reboot), last at 2026-11-18T11:06:40Z");
  EXPECT_THAT(bad[0].runbook, HasSubstr("/GpuXidCritical.md"));
  EXPECT_EQ(bad[1].message, "XID 48 x2 (catalog action: reset_gpu)");
}

TEST(CheckFindings, LostGpuFailsAndMissingGpusAgainstExpectationFail) {
  Exposition e = Exposition::Healthy(8);
  e.Set("gpuscope_gpu_up", "gauge", Exposition::Gpu(1), 0);
  CheckOptions options;
  options.expect_gpus = 10;
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e, options));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].message, "8 GPUs present, 10 expected");
  EXPECT_THAT(bad[0].runbook, HasSubstr("/GpuNodeGpusMissing.md"));
  EXPECT_EQ(bad[1].subject, "GPU 1 (GPU-00000001)");
  EXPECT_THAT(bad[1].message, HasSubstr("does not answer NVML"));
  EXPECT_THAT(bad[1].runbook, HasSubstr("/GpuLost.md"));
}

TEST(CheckFindings, GpuOnThePciBusOrInKernelLogXidsThatNvmlDoesNotShowIsMissing) {
  Exposition e = Exposition::Healthy(2);
  e.Set("gpuscope_gpu_numa_info", "gauge", "pci_bus_id=\"0000:9a:00.0\",numa_node=\"1\",local_cpus=\"16-31\"",
        1);
  e.Set("gpuscope_xid_errors_total", "counter",
        "gpu=\"\",UUID=\"\",pci_bus_id=\"00000000:AB:00.0\",device=\"\",modelName=\"\",Hostname=\"gpu-node-"
        "01\","
        "DCGM_FI_DRIVER_VERSION=\"\",xid=\"79\",action=\"reboot\"",
        1);
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 3u);
  EXPECT_EQ(bad[0].subject, "GPU at 00000000:9A:00.0");
  EXPECT_EQ(bad[0].message, "on the PCI bus but NVML does not show it (3 on the bus, 2 in NVML)");
  EXPECT_EQ(bad[1].subject, "GPU at 00000000:AB:00.0");
  EXPECT_THAT(bad[1].message, HasSubstr("XID 79 in the kernel log"));
  EXPECT_EQ(bad[2].check, "xid");  // and its XID asks for a reboot
}

TEST(CheckFindings, SysfsNamingOtherBusIdsButNoMoreGpusThanNvmlIsNoMissingGpu) {
  // A --path.sysfs root that is not this machine's (the demo's fixtures on simulated GPUs): one GPU on
  // the bus at an address NVML does not know, two GPUs in NVML.
  Exposition e = Exposition::Healthy(2);
  e.Clear("gpuscope_gpu_numa_info");
  e.Set("gpuscope_gpu_numa_info", "gauge", "pci_bus_id=\"0000:83:00.0\",numa_node=\"1\",local_cpus=\"16-31\"",
        1);
  const std::string text = e.Text();
  ASSERT_THAT(text, HasSubstr("0000:83:00.0"));
  EXPECT_EQ(Verdict(EvaluateAgentMetrics(text, {})), CheckStatus::kPass);
}

TEST(CheckFindings, NodeWithoutGpusWarnsUnlessZeroAreExpected) {
  Exposition e;
  e.Set("gpuscope_collector_success", "gauge", "collector=\"gpu\"", 1);
  std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status, CheckStatus::kWarn);
  EXPECT_THAT(bad[0].message, HasSubstr("knows no GPU"));
  CheckOptions options;
  options.expect_gpus = 0;
  EXPECT_EQ(Verdict(Evaluate(e, options)), CheckStatus::kPass);
}

TEST(CheckFindings, GpuCollectorFailingOrAbsentMeansNvmlUnreachable) {
  Exposition e = Exposition::Healthy(2);
  e.Set("gpuscope_collector_success", "gauge", "collector=\"gpu\"", 0);
  std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_GE(bad.size(), 1u);
  EXPECT_EQ(bad[0].check, "nvml");
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);

  Exposition without;
  without.Set("gpuscope_collector_success", "gauge", "collector=\"host\"", 1);
  bad = NotPassing(Evaluate(without));
  ASSERT_GE(bad.size(), 1u);
  EXPECT_EQ(bad[0].check, "nvml");
  EXPECT_THAT(bad[0].message, HasSubstr("no gpu collector"));
}

TEST(CheckFindings, DriverVersionMatchesExactlyOrByDottedPrefix) {
  const Exposition e = Exposition::Healthy(2);
  for (const char* ok : {"550.54.15", "550", "550.54"}) {
    CheckOptions options;
    options.expect_driver = ok;
    EXPECT_EQ(Verdict(Evaluate(e, options)), CheckStatus::kPass) << ok;
  }
  for (const char* bad : {"55", "550.5", "535.129.03"}) {
    CheckOptions options;
    options.expect_driver = bad;
    const std::vector<CheckFinding> failing = NotPassing(Evaluate(e, options));
    ASSERT_EQ(failing.size(), 1u) << bad;
    EXPECT_EQ(failing[0].check, "driver");
    EXPECT_EQ(failing[0].message, "driver 550.54.15, expected " + std::string(bad));
  }
}

TEST(CheckFindings, PcieNarrowLinkWarnsAndSlowLinkWarnsOnlyWhileBusy) {
  Exposition e = Exposition::Healthy(3);
  e.Set("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", Exposition::Gpu(0), 8);
  e.Set("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", Exposition::Gpu(1), 3);  // busy (97 %)
  e.Set("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", Exposition::Gpu(2), 1);  // idle: power saving
  e.Set("DCGM_FI_DEV_GPU_UTIL", "gauge", Exposition::Gpu(2), 0);
  // The host collector's view of a link further up GPU 2's path (a switch trained x8).
  e.Set("gpuscope_gpu_pcie_link_degraded", "gauge", "pci_bus_id=\"0000:12:00.0\"", 1);
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 3u);
  EXPECT_EQ(bad[0].message, "PCIe link x8 of x16");
  EXPECT_EQ(bad[0].subject, "GPU 0 (GPU-00000000)");
  EXPECT_EQ(bad[1].subject, "GPU 2 (GPU-00000002)");
  EXPECT_THAT(bad[1].message, HasSubstr("on its path to the root port runs narrower"));
  EXPECT_EQ(bad[2].message, "PCIe link Gen3 of Gen5 while 97 % busy");
  for (const CheckFinding& f : bad) {
    EXPECT_EQ(f.status, CheckStatus::kWarn);
    EXPECT_THAT(f.runbook, HasSubstr("/GpuPcieLinkDegraded.md"));
  }
  EXPECT_EQ(ExitCodeOf(Verdict(Evaluate(e))), 1);
}

TEST(CheckFindings, NvlinkDownFailsAndErrorsAboveTheThresholdWarn) {
  Exposition e = Exposition::Healthy(4);
  e.Set("gpuscope_nvlink_up", "gauge", Exposition::Gpu(2, "link=\"1\""), 0);
  e.Set("gpuscope_nvlink_errors_total", "counter", Exposition::Gpu(3, "link=\"0\",counter=\"crc_flit\""), 40);
  e.Set("gpuscope_nvlink_errors_total", "counter", Exposition::Gpu(3, "link=\"0\",counter=\"replay\""), 2);
  e.Set("gpuscope_nvlink_errors_total", "counter", Exposition::Gpu(1, "link=\"0\",counter=\"ecc_data\""),
        900);
  std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);
  EXPECT_EQ(bad[0].subject, "GPU 2 (GPU-00000002) link 1");
  EXPECT_EQ(bad[1].status, CheckStatus::kWarn);
  EXPECT_EQ(bad[1].subject, "GPU 3 (GPU-00000003) link 0");
  EXPECT_THAT(bad[1].message, HasSubstr("42 CRC, replay and recovery errors"));
  CheckOptions lenient;
  lenient.nvlink_max_errors = 100;
  bad = NotPassing(Evaluate(e, lenient));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);
}

TEST(CheckFindings, HardwareClockSlowdownWarnsAndSoftwareReasonsDoNot) {
  Exposition e = Exposition::Healthy(2);
  e.Set("gpuscope_gpu_clock_event_active", "gauge", Exposition::Gpu(0, "reason=\"sw_power_cap\""), 1);
  e.Set("gpuscope_gpu_clock_event_active", "gauge", Exposition::Gpu(1, "reason=\"hw_slowdown\""), 1);
  e.Set("gpuscope_gpu_clock_event_active", "gauge", Exposition::Gpu(1, "reason=\"hw_thermal_slowdown\""), 1);
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].check, "clocks");
  EXPECT_EQ(bad[0].status, CheckStatus::kWarn);
  EXPECT_EQ(bad[0].message, "clocks held down by hardware: hw_slowdown, hw_thermal_slowdown");
  EXPECT_THAT(bad[0].runbook, HasSubstr("/GpuThermalThrottling.md"));
}

// The health series of an agent using DCGM (gpuscope_dcgm_health, one per GPU and --dcgm.health system).
void SetDcgmHealth(Exposition& e, int gpus, double value = 0) {
  for (int i = 0; i < gpus; ++i) {
    for (const char* system : {"pcie", "memory", "inforom", "thermal", "power", "nvlink"}) {
      e.Set("gpuscope_dcgm_health", "gauge", Exposition::Gpu(i, std::string("system=\"") + system + "\""),
            value);
    }
  }
}

TEST(CheckFindings, DcgmHealthFailFailsAndWarnWarnsNamingTheGpuAndSystemWithTheirRunbooks) {
  Exposition e = Exposition::Healthy(4);
  SetDcgmHealth(e, 4);
  e.Set("gpuscope_dcgm_health", "gauge", Exposition::Gpu(1, "system=\"memory\""), 2);
  e.Set("gpuscope_dcgm_health", "gauge", Exposition::Gpu(2, "system=\"inforom\""), 1);
  CheckOptions options;
  options.runbook_url_base = "https://wiki.example/runbooks/";
  const std::vector<CheckFinding> bad = NotPassing(Evaluate(e, options));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].check, "dcgm");
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);
  EXPECT_EQ(bad[0].subject, "GPU 1 (GPU-00000001)");
  EXPECT_EQ(bad[0].message, "DCGM's memory health check fails");
  EXPECT_EQ(bad[0].runbook, "https://wiki.example/runbooks/GpuDcgmHealthFailure.md");
  EXPECT_EQ(bad[1].check, "dcgm");
  EXPECT_EQ(bad[1].status, CheckStatus::kWarn);
  EXPECT_EQ(bad[1].subject, "GPU 2 (GPU-00000002)");
  EXPECT_EQ(bad[1].message, "DCGM's inforom health check warns");
  EXPECT_EQ(bad[1].runbook, "https://wiki.example/runbooks/GpuDcgmHealthWarning.md");
  EXPECT_EQ(ExitCodeOf(Verdict(Evaluate(e))), 2);

  // A warning alone is exit 1.
  e.Set("gpuscope_dcgm_health", "gauge", Exposition::Gpu(1, "system=\"memory\""), 0);
  EXPECT_EQ(ExitCodeOf(Verdict(Evaluate(e))), 1);
}

TEST(CheckFindings, DcgmHealthPassingIsOnePassAndANodeWithoutDcgmSeriesHasNoDcgmFinding) {
  Exposition e = Exposition::Healthy(4);
  SetDcgmHealth(e, 4);
  std::vector<CheckFinding> findings = Evaluate(e);
  std::vector<CheckFinding> dcgm;
  for (const CheckFinding& f : findings) {
    if (f.check == "dcgm") dcgm.push_back(f);
  }
  ASSERT_EQ(dcgm.size(), 1u);
  EXPECT_EQ(dcgm[0].status, CheckStatus::kPass);
  EXPECT_EQ(dcgm[0].message,
            "DCGM's health checks pass on 4 GPUs (inforom, memory, nvlink, pcie, power, thermal)");
  EXPECT_EQ(dcgm[0].runbook, "");
  // After the clocks, before the InfiniBand ports.
  EXPECT_EQ(findings[findings.size() - 2].check, "dcgm");

  // No DCGM on the node (or its connection down: the series vanish): nothing to say, pass or not.
  for (const CheckFinding& f : Evaluate(Exposition::Healthy(4))) EXPECT_NE(f.check, "dcgm");
}

TEST(CheckFindings, InfinibandPortDownFailsInitWarnsAndIgnoredPortsAreSkipped) {
  Exposition e = Exposition::Healthy(1);
  const std::string p2 = "device=\"mlx5_0\",port=\"2\",link_layer=\"InfiniBand\"";
  const std::string p3 = "device=\"mlx5_1\",port=\"1\",link_layer=\"InfiniBand\"";
  e.Set("gpuscope_infiniband_port_state_id", "gauge", p2, 1);
  e.Set("gpuscope_infiniband_port_physical_state_id", "gauge", p2, 2);  // Polling
  e.Set("gpuscope_infiniband_port_state_id", "gauge", p3, 2);           // Init
  e.Set("gpuscope_infiniband_port_physical_state_id", "gauge", p3, 5);
  std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].subject, "mlx5_0 port 2");
  EXPECT_EQ(bad[0].status, CheckStatus::kFail);
  EXPECT_EQ(bad[0].message, "port Down (physical: Polling, no link)");
  EXPECT_EQ(bad[1].subject, "mlx5_1 port 1");
  EXPECT_EQ(bad[1].status, CheckStatus::kWarn);
  CheckOptions options;
  options.infiniband_ignore = {"mlx5_0:2", "mlx5_1"};
  EXPECT_EQ(Verdict(Evaluate(e, options)), CheckStatus::kPass);
}

TEST(CheckFindings, GarbageInputIsOneFailingAgentFindingNamingTheLine) {
  for (const std::string& garbage : {std::string("<html><body>502 Bad Gateway</body></html>\n"),
                                     std::string("up 1\nup{ 2\n"), std::string("\xff\xfe binary", 9)}) {
    const std::vector<CheckFinding> findings = EvaluateAgentMetrics(garbage, {});
    ASSERT_EQ(findings.size(), 1u) << garbage;
    EXPECT_EQ(findings[0].check, "agent");
    EXPECT_EQ(findings[0].status, CheckStatus::kFail);
    EXPECT_THAT(findings[0].message, HasSubstr("does not parse: line "));
    EXPECT_THAT(findings[0].runbook, HasSubstr("/GpuscopeAgentDown.md"));
  }
  // Valid exposition from something other than the agent.
  const std::vector<CheckFinding> other = EvaluateAgentMetrics("node_load1 0.5\n", {});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_THAT(other[0].message, HasSubstr("is --agent.url a gpuscope-agent?"));
  EXPECT_EQ(EvaluateAgentMetrics("", {}).size(), 1u);
}

TEST(CheckFindings, HugeLinesAreReadWholeOrRefusedWithoutCrash) {
  // A label value of 4 MiB on an otherwise healthy node: read like any other.
  Exposition e = Exposition::Healthy(1);
  const std::string huge(4 << 20, 'x');
  // A second series of GPU 0 whose device label is huge (the same label names as the family's others).
  std::string labels = Exposition::Gpu(0);
  const std::string device = "device=\"nvidia0\"";
  labels.replace(labels.find(device), device.size(), "device=\"" + huge + "\"");
  e.Set("gpuscope_gpu_up", "gauge", labels, 0);
  std::vector<CheckFinding> bad = NotPassing(Evaluate(e));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].subject, "GPU 0 (GPU-00000000)");
  // A 4 MiB line that is not a sample is refused as a whole, with a message of readable length.
  const std::vector<CheckFinding> refused =
      EvaluateAgentMetrics(Exposition::Healthy(1).Text() + huge + "\n", {});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0].message, HasSubstr("does not parse: line "));
  EXPECT_LT(refused[0].message.size(), 400u);
}

TEST(CheckFindings, UnreachableAgentFailsWithTheReason) {
  const CheckFinding f = AgentUnreachableFinding("http://127.0.0.1:9400", "connection refused", {});
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.message, "cannot read http://127.0.0.1:9400: connection refused");
  EXPECT_EQ(ExitCodeOf(Verdict({f})), 2);
}

TEST(CheckFindings, TextHasOneLinePerFindingAndTheVerdictLast) {
  Exposition e = Exposition::Healthy(2);
  e.Set("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", Exposition::Gpu(1), 3);
  const std::string text = RenderFindingsText(Evaluate(e));
  EXPECT_THAT(
      text,
      HasSubstr("\nFAIL  ecc        GPU 1 (GPU-00000001): 3 volatile double-bit ECC errors since "
                "the driver loaded  https://runbooks.example.invalid/gpuscope/GpuEccDoubleBitError.md\n"));
  EXPECT_THAT(text, HasSubstr("PASS  nvlink     4 NVLink links up, no errors above the threshold\n"));
  EXPECT_THAT(text, ::testing::EndsWith("\ncheck: fail (1 failing, 0 warning, 10 passing)\n"));
}

}  // namespace
}  // namespace gpuscope
