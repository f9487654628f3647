// `gpuscope check`: a node health check for Slurm's HealthCheckProgram or NHC. Reads the local agent's
// /metrics (--agent.url), prints the findings (check_findings.h) one line each or as JSON, and exits 0
// pass, 1 warn, 2 fail. With --slurm-drain a failing node is drained with the first failing finding as the
// reason ("gpuscope: ..."); with --slurm-resume-if-clean a node without failing findings is resumed, but
// only when the drain reason shows gpuscope set it. The node's state comes from `sinfo`, the change is
// made with `scontrol update` (both from PATH, both under a timeout).
//
// Thread-safety: value types and free functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/cli/check_findings.h"
#include "src/cli/command.h"

namespace gpuscope {

// Every drain reason gpuscope sets starts with this; a drain with another reason is someone else's.
inline constexpr std::string_view kDrainReasonPrefix = "gpuscope:";

// The node as sinfo shows it.
struct SlurmNodeState {
  bool found = false;
  bool drained = false;  // drained, draining or +drain
  std::string state;
  std::string reason;
};

// The node's state from `sinfo -N -h -n NODE -O <kSinfoFormat>` output (one line per partition).
SlurmNodeState ParseSlurmNodeState(std::string_view sinfo_output, const std::string& node);

enum class SlurmAction { kNone, kDrain, kResume };

struct SlurmPlan {
  SlurmAction action = SlurmAction::kNone;
  std::string reason;  // for kDrain
  std::string note;    // what was decided and why, for people
};

// The drain reason for failing findings: "gpuscope: <check> <subject>: <message>", "(+N more)" when
// several fail; at most 200 characters.
std::string DrainReason(const std::vector<CheckFinding>& findings);

// What to do given the verdict, the flags and the node's state: drain a failing node unless someone else
// drained it (a gpuscope drain gets the new reason when it changed); resume a node without failing
// findings only when gpuscope drained it.
SlurmPlan PlanSlurmAction(const std::vector<CheckFinding>& findings, bool drain, bool resume_if_clean,
                          const std::string& node, const SlurmNodeState& state);

// The `gpuscope check` entry of the command table.
Command CheckCommand();

}  // namespace gpuscope
