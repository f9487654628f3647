// `gpuscope profile-pause`, `profile-resume` and `profile-status`: a node-wide profiling pause, so that a
// person can run Nsight Compute or Nsight Systems on a GPU node. They talk to the local agent's control
// endpoints on its metrics listener (--agent.url, default http://127.0.0.1:9400), not to Prometheus:
//   POST /api/v1/profiling/pause  {"duration_seconds": N, "reason": "..."}  (credentials required)
//   POST /api/v1/profiling/resume {}                                        (credentials required)
//   GET  /api/v1/profiling                                                  (open)
// Each answers the pause state {"paused", "until_unix", "reason", "dcgm"}. While paused the agent has
// DCGM pause its profiling module (when it uses DCGM) and stops its own NVML GPM sampling; it resumes
// by itself when the pause expires. Credentials: HTTP basic auth (--agent.username and
// --agent.password-file) when the agent's --web.config.file has basic_auth_users, else the bearer token of
// --agent.token-file (the agent reads the same secret from its --profiling.token-file).
//
// Exit codes: 0 done; 1 the agent could not be reached or refused, or DCGM did not follow; 2 usage.
//
// Thread-safety: value types and free functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "src/cli/command.h"
#include "src/core/status.h"

namespace gpuscope {

// The agent's longest pause (86400 s), and the longest reason it keeps (bytes).
inline constexpr int64_t kMaxProfilingPauseSeconds = 86400;
inline constexpr size_t kMaxProfilingReasonBytes = 200;
// Where the agent (--profiling.token-file) and the command (--agent.token-file) read the token by default.
inline constexpr std::string_view kDefaultProfilingTokenFile = "/etc/gpuscope/profiling.token";

// The pause state as the agent answers it.
struct ProfilingState {
  bool paused = false;
  double until_unix = 0;  // when the pause ends by itself; 0 when not paused
  std::string reason;
  std::string dcgm;  // "paused", "resumed", "not in use", "not connected...", or DCGM's error text
};

// The agent's JSON answer. InvalidArgument when it is not a JSON object with a boolean "paused" (the
// other keys are optional; until_unix must be a number and reason and dcgm strings when present).
Status ParseProfilingState(std::string_view body, ProfilingState* state);

// A --for value ("10m", "1h30m", "90s") as whole seconds from 1 to kMaxProfilingPauseSeconds;
// InvalidArgument naming --for otherwise.
Status ParsePauseSeconds(std::string_view text, int64_t* seconds);

// Whether DCGM's part of the state agrees with `paused`: "paused" (or "resumed" when not paused), "not in
// use" (no DCGM), "not connected..." (the agent's DCGM holds nothing), or nothing said. Anything else is
// DCGM's error text, or a change DCGM has not applied yet.
bool DcgmAgrees(std::string_view dcgm, bool paused);

// The node a person knows the agent by: this host's short name for a loopback URL, else the URL's host.
std::string AgentHostForPeople(std::string_view agent_url);

// The lines people read (each ends in a newline). `now` is Unix seconds; times are UTC, with the date
// when the pause ends on another day than `now`.
//   Profiling paused on n1 until 14:32:05 UTC (10m); DCGM: paused. Run `gpuscope profile-resume` when done.
std::string RenderPaused(const ProfilingState& state, const std::string& host, std::chrono::seconds asked,
                         double now);
std::string RenderResumed(const ProfilingState& state, const std::string& host);
std::string RenderStatus(const ProfilingState& state, const std::string& host, double now);

// Which of the three commands.
enum class ProfileAction { kPause, kResume, kStatus };

// Runs one of them on a parsed command line, writing to `out` (the result) and `err` (errors and
// warnings). What the table entries' run functions call with std::cout and std::cerr.
int RunProfileCommand(ProfileAction action, const CommandLine& line, std::ostream& out, std::ostream& err);

// The entries of the command table.
Command ProfilePauseCommand();
Command ProfileResumeCommand();
Command ProfileStatusCommand();

}  // namespace gpuscope
