// The findings of `gpuscope check`: the health of one GPU node judged from its agent's own /metrics (the
// Prometheus text exposition, parsed with src/parsers/prom_text.h). Pure, text in and findings out, so
// that every fault kind is tested from exposition text; check_command.cc fetches the text and acts on the
// verdict. Each finding is pass, warn or fail, names what it is about (a GPU, an NVLink link, an
// InfiniBand port; empty for the node) and links the runbook of the mixin alert that covers the same
// fault (runbook base + alert name + ".md", as deploy/mixin/config.libsonnet builds runbook_url); a
// finding no alert covers (the driver version) has no runbook. The checks, in the order printed:
//   agent       the text parses and is a gpuscope agent's
//   nvml        the agent's gpu collector succeeded (NVML reachable)
//   gpus        every expected GPU present and answering; GPUs on the PCI bus (host collector) or in
//               kernel-log XIDs that NVML does not show
//   driver      the driver version (with an expectation)
//   ecc         volatile double-bit ECC errors
//   memory      row remap failure, row remap or page retirement pending
//   xid         XIDs whose catalog action (the agent's `action` label) is reset_gpu, reboot or
//   contact_support pcie        a link narrower than both ends support; slower only while the GPU is busy
//   nvlink      links down, error counters above a threshold
//   clocks      clocks held by a hardware slowdown (HW, HW thermal, HW power brake)
//   dcgm        DCGM's health checks (gpuscope_dcgm_health: 2 fail, 1 warn), per GPU and system; no
//               finding at all on a node whose agent reports no DCGM health series (no DCGM)
//   infiniband  ports not Active (a port whose physical state is Disabled is off on purpose)
//
// Thread-safety: value types and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

enum class CheckStatus { kPass = 0, kWarn = 1, kFail = 2 };

struct CheckFinding {
  std::string check;  // one of the names above
  CheckStatus status = CheckStatus::kPass;
  std::string subject;  // "GPU 5 (GPU-...)", "GPU 2 link 3", "mlx5_0 port 1"; empty: the node
  std::string message;  // what was found, for people
  std::string runbook;  // URL; empty when no alert covers it
};

struct CheckOptions {
  int expect_gpus = -1;       // -1: as many as the agent knows
  std::string expect_driver;  // empty: not checked; "550" matches 550.54.15 (prefix up to a dot)
  std::string runbook_url_base = "https://runbooks.example.invalid/gpuscope/";
  double nvlink_max_errors = 0;                // per link, CRC + replay + recovery since the driver loaded
  double pcie_busy_utilization = 50;           // % GPU utilisation from which a slower PCIe link counts
  std::vector<std::string> infiniband_ignore;  // "mlx5_1" (every port) or "mlx5_1:2"
};

// The findings of one exposition. Text that does not parse (or is not a gpuscope agent's) gives one fail
// finding of check "agent" saying why, and nothing else.
std::vector<CheckFinding> EvaluateAgentMetrics(std::string_view exposition, const CheckOptions& options);

// The fail finding for an agent that could not be read (`reason` says why).
CheckFinding AgentUnreachableFinding(const std::string& url, const std::string& reason,
                                     const CheckOptions& options);

// The worst status of the findings (pass when there are none).
CheckStatus Verdict(const std::vector<CheckFinding>& findings);

// "pass", "warn", "fail".
std::string_view CheckStatusName(CheckStatus status);

// The exit code of a verdict: 0 pass, 1 warn, 2 fail.
inline int ExitCodeOf(CheckStatus status) { return static_cast<int>(status); }

// One line per finding ("FAIL  ecc         GPU 5 (GPU-...): 1 volatile double-bit ECC error  <runbook>")
// and a last line with the verdict and the counts.
std::string RenderFindingsText(const std::vector<CheckFinding>& findings);

}  // namespace gpuscope
