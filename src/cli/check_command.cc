#include "src/cli/check_command.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/prometheus_flags.h"
#include "src/parsers/slurm_scheduler.h"
#include "src/parsers/text.h"
#include "src/platform/command.h"
#include "src/platform/host.h"
#include "src/platform/http_client.h"

namespace gpuscope {
namespace {

constexpr std::chrono::milliseconds kSlurmTimeout{15000};
constexpr size_t kMaxMetricsBytes = 64 << 20;
constexpr size_t kMaxDrainReason = 200;

// Reads the agent's /metrics. Ok with the body, or a reason for people.
Status FetchMetrics(std::string url, double timeout_seconds, std::string* body) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  const std::string suffix = "/metrics";
  if (url.size() > suffix.size() && url.compare(url.size() - suffix.size(), suffix.size(), suffix) == 0) {
    url.resize(url.size() - suffix.size());
  }
  HttpClientOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeout_seconds * 1000));
  options.max_response_body_bytes = kMaxMetricsBytes;
  options.max_response_head_bytes = 64 << 10;
  std::unique_ptr<HttpClient> client;
  Status status = HttpClient::Create(url, options, &client);
  if (!status.ok()) return status;
  HttpClientResponse response;
  // The text format 0.0.4, which the parser reads (not OpenMetrics).
  status = client->Get("/metrics", {{"Accept", "text/plain;version=0.0.4"}}, &response);
  if (!status.ok()) return status;
  if (response.status != 200) {
    return Status::Unavailable("HTTP " + std::to_string(response.status) + " from /metrics");
  }
  if (response.body_truncated) {
    return Status::Unavailable("/metrics is larger than " + std::to_string(kMaxMetricsBytes >> 20) + " MiB");
  }
  *body = std::move(response.body);
  return Status::Ok();
}

bool ParseCount(const std::string& text, int* out) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1024) return false;
  *out = static_cast<int>(value);
  return true;
}

bool ParseNonNegative(const std::string& text, double* out) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0)) return false;
  *out = value;
  return true;
}

// "a, b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text::Trim(text.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return out;
}

Status OptionsFromFlags(const CommandLine& line, CheckOptions* options) {
  const auto& f = line.flags;
  if (!f.at("expect-gpus").empty() && !ParseCount(f.at("expect-gpus"), &options->expect_gpus)) {
    return Status::InvalidArgument("--expect-gpus must be a whole number from 0 to 1024");
  }
  options->expect_driver = f.at("expect-driver");
  options->runbook_url_base = f.at("runbook-url-base");
  if (!ParseNonNegative(f.at("nvlink.max-errors"), &options->nvlink_max_errors)) {
    return Status::InvalidArgument("--nvlink.max-errors must be a number >= 0");
  }
  if (!ParseNonNegative(f.at("pcie.busy-utilization"), &options->pcie_busy_utilization)) {
    return Status::InvalidArgument("--pcie.busy-utilization must be a percentage >= 0");
  }
  options->infiniband_ignore = SplitCommas(f.at("infiniband.ignore"));
  return Status::Ok();
}

nlohmann::json FindingsJson(const std::vector<CheckFinding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const CheckFinding& f : findings) {
    out.push_back({{"check", f.check},
                   {"status", std::string(CheckStatusName(f.status))},
                   {"subject", f.subject},
                   {"message", f.message},
                   {"runbook", f.runbook}});
  }
  return out;
}

// Runs the plan. The result line for people; *failed when scontrol failed.
std::string CarryOut(const SlurmPlan& plan, const std::string& node, bool* failed) {
  *failed = false;
  if (plan.action == SlurmAction::kNone) return plan.note;
  std::vector<std::string> argv = {"scontrol", "update", "nodename=" + node};
  if (plan.action == SlurmAction::kDrain) {
    argv.push_back("state=drain");
    argv.push_back("reason=" + plan.reason);
  } else {
    argv.push_back("state=resume");
  }
  CommandResult result = RunCommandWithTimeout(argv, kSlurmTimeout, 64 << 10);
  if (!result.status.ok()) {
    *failed = true;
    return "could not " + std::string(plan.action == SlurmAction::kDrain ? "drain " : "resume ") + node +
           ": scontrol: " + result.status.message();
  }
  return plan.note;
}

int RunCheck(const CommandLine& line) {
  if (!line.positional.empty()) {
    std::cerr << "gpuscope check: takes no arguments (got '" << line.positional[0] << "')\n";
    return kExitUsage;
  }
  CheckOptions options;
  Status status = OptionsFromFlags(line, &options);
  double timeout = 0;
  if (status.ok() && !ParsePositiveSeconds(line.flags.at("agent.timeout"), &timeout)) {
    status = Status::InvalidArgument("--agent.timeout must be a positive number of seconds");
  }
  const std::string format = line.flags.at("format");
  if (status.ok() && format != "text" && format != "json") {
    status = Status::InvalidArgument("--format must be text or json");
  }
  const bool drain = line.flags.at("slurm-drain") == "true";
  const bool resume = line.flags.at("slurm-resume-if-clean") == "true";
  std::string node = line.flags.at("node-name");
  if (node.empty()) node = ShortHostName();
  if (status.ok() && (drain || resume) && node.empty()) {
    status = Status::InvalidArgument("cannot tell this host's name: give --node-name");
  }
  if (!status.ok()) {
    std::cerr << "gpuscope check: " << status.message() << "\n";
    return kExitUsage;
  }

  const std::string url = line.flags.at("agent.url");
  std::string body;
  status = FetchMetrics(url, timeout, &body);
  std::vector<CheckFinding> findings =
      status.ok() ? EvaluateAgentMetrics(body, options)
                  : std::vector<CheckFinding>{AgentUnreachableFinding(url, status.message(), options)};
  const CheckStatus verdict = Verdict(findings);

  std::string slurm_line;
  SlurmPlan plan;
  bool slurm_failed = false;
  if (drain || resume) {
    const std::vector<std::string> sinfo = {"sinfo", "-N", "-h", "-n", node, "-O", std::string(kSinfoFormat)};
    CommandResult result = RunCommandWithTimeout(sinfo, kSlurmTimeout, 1 << 20);
    SlurmNodeState state = ParseSlurmNodeState(result.output, node);
    if (!result.status.ok() || !state.found) {
      slurm_failed = true;
      slurm_line = "cannot read node " + node + " from sinfo: " +
                   (result.status.ok() ? std::string("no such node") : result.status.message());
    } else {
      plan = PlanSlurmAction(findings, drain, resume, node, state);
      slurm_line = CarryOut(plan, node, &slurm_failed);
    }
  }

  if (format == "json") {
    nlohmann::json out = {{"verdict", std::string(CheckStatusName(verdict))},
                          {"exit_code", ExitCodeOf(verdict)},
                          {"agent_url", url},
                          {"findings", FindingsJson(findings)}};
    if (drain || resume) {
      const char* action = slurm_failed                          ? "error"
                           : plan.action == SlurmAction::kDrain  ? "drain"
                           : plan.action == SlurmAction::kResume ? "resume"
                                                                 : "none";
      out["slurm"] = {{"node", node}, {"action", action}, {"reason", plan.reason}, {"message", slurm_line}};
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << RenderFindingsText(findings);
    if (!slurm_line.empty()) (slurm_failed ? std::cerr : std::cout) << "slurm: " << slurm_line << "\n";
  }
  int code = ExitCodeOf(verdict);
  if (slurm_failed && code == 0) code = 1;
  return code;
}

}  // namespace

SlurmNodeState ParseSlurmNodeState(std::string_view sinfo_output, const std::string& node) {
  SlurmNodeState state;
  SinfoNodes nodes = ParseSinfo(sinfo_output);
  for (const SinfoNode& n : nodes.nodes) {
    if (n.node != node) continue;
    state.found = true;
    state.state = n.state;
    state.drained = IsDrainState(n.state);
    state.reason = std::string(n.reason);
  }
  return state;
}

std::string DrainReason(const std::vector<CheckFinding>& findings) {
  const CheckFinding* first = nullptr;
  int failing = 0;
  for (const CheckFinding& f : findings) {
    if (f.status != CheckStatus::kFail) continue;
    if (first == nullptr) first = &f;
    ++failing;
  }
  if (first == nullptr) return "";
  std::string reason = std::string(kDrainReasonPrefix) + " " + first->check + " " +
                       (first->subject.empty() ? "" : first->subject + ": ") + first->message;
  const std::string more = failing > 1 ? " (+" + std::to_string(failing - 1) + " more)" : "";
  if (reason.size() + more.size() > kMaxDrainReason) {
    reason.resize(kMaxDrainReason - more.size() - 3);
    reason += "...";
  }
  return reason + more;
}

SlurmPlan PlanSlurmAction(const std::vector<CheckFinding>& findings, bool drain, bool resume_if_clean,
                          const std::string& node, const SlurmNodeState& state) {
  SlurmPlan plan;
  const bool ours = state.reason.rfind(kDrainReasonPrefix, 0) == 0;
  if (Verdict(findings) == CheckStatus::kFail) {
    if (!drain) {
      plan.note = "node " + node + " fails the check; not drained (no --slurm-drain)";
    } else if (state.drained && !ours) {
      plan.note =
          "node " + node + " already drained by someone else (reason: " + state.reason + "); left as is";
    } else if (state.drained && state.reason == DrainReason(findings)) {
      plan.note = "node " + node + " already drained by gpuscope for the same reason";
    } else {
      plan.action = SlurmAction::kDrain;
      plan.reason = DrainReason(findings);
      plan.note = "drained node " + node + " (reason: " + plan.reason + ")";
    }
    return plan;
  }
  if (!resume_if_clean) {
    plan.note = state.drained ? "node " + node + " is drained; not resumed (no --slurm-resume-if-clean)"
                              : "node " + node + " is not drained";
  } else if (!state.drained) {
    plan.note = "node " + node + " is not drained; nothing to resume";
  } else if (!ours) {
    plan.note = "node " + node + " drained by someone else (reason: " + state.reason + "); not resumed";
  } else {
    plan.action = SlurmAction::kResume;
    plan.note = "resumed node " + node + " (gpuscope had drained it: " + state.reason + ")";
  }
  return plan;
}

Command CheckCommand() {
  Command command;
  command.name = "check";
  command.usage = "check [flags]";
  command.summary = "node health check for Slurm's HealthCheckProgram or NHC, from the local agent";
  command.details =
      "Reads the local gpuscope-agent's /metrics and judges the node: NVML reachable, every expected GPU\n"
      "present and answering, the driver version, ECC double-bit errors, row remaps and page retirement,\n"
      "XIDs whose catalog action is reset_gpu/reboot/contact_support, PCIe links, NVLink, hardware clock\n"
      "slowdown, DCGM's health checks (where the agent uses DCGM), InfiniBand ports. One line per finding\n"
      "with its runbook; exit 0 pass, 1 warn, 2 fail (an agent that cannot be read is fail).\n";
  command.flags = {
      {"agent.url", "the local agent", "http://127.0.0.1:9400"},
      {"agent.timeout", "seconds the agent may take to answer", "10"},
      {"format", "text (one line per finding) or json", "text"},
      {"expect-gpus", "GPUs the node must have (default: as many as the agent knows)", ""},
      {"expect-driver", "driver version the GPUs must run (\"550\" matches 550.54.15)", ""},
      {"nvlink.max-errors",
       "CRC, replay and recovery errors per link (since the driver loaded) before a warning", "0"},
      {"pcie.busy-utilization", "GPU utilisation (%) from which a PCIe link below its generation warns",
       "50"},
      {"infiniband.ignore", "ports not to check: device or device:port, comma-separated", ""},
      {"runbook-url-base", "where the runbooks are published (the mixin's runbookUrlBase)",
       "https://runbooks.example.invalid/gpuscope/"},
      {"slurm-drain", "drain this node in Slurm when the check fails", "", false},
      {"slurm-resume-if-clean", "resume this node when nothing fails and gpuscope drained it", "", false},
      {"node-name", "the node's Slurm name (default: the short host name)", ""},
  };
  command.run = RunCheck;
  return command;
}

}  // namespace gpuscope
