// FleetRunner: many simulated GPU nodes in one process, each the agent's own code (src/agent/agent_node.h):
// its GPU collector on a simulated node of its own (one simulator library, a gpuscopeSimNode per node, the
// NVML binding re-binding each call: sim/control.h), attribution from its own mapping directory, its own
// snapshot, /metrics endpoint and, when the agent settings name a receiver, its own remote_write sink and
// durable queue. What the runner adds is what a cluster would: per-node Hostnames, scenarios dealt by the
// description's weights, start times spread over the scenario, and a job mix (job_mix.h) whose records it
// writes into each node's mapping directory, as a Slurm prolog and epilog would.
//
// Thread-safety: Create, Advance and Stop from one owning thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sim/fleet/fleet_description.h"
#include "src/agent/config.h"
#include "src/core/status.h"

namespace gpuscope::fleet {

struct FleetOptions {
  FleetDescription description;  // scenario paths resolved; nodes = the fleet's size
  std::string nvml_library;      // the simulator library (build/sim/libnvidia-ml.so.1)
  std::string state_dir;         // per node: <state_dir>/<hostname>/{mapping,state,devices}
  std::string listen_host = "127.0.0.1";
  int base_port = 0;    // node i listens on base_port + i; 0: an ephemeral port each
  double speed = 0;     // simulated seconds per real second on every node; 0: each scenario's
  std::string file_sd;  // written (atomically) once every node listens; empty: none
  AgentConfig agent;    // settings every node shares; the runner sets the per-node ones
};

// One target group per node, in node order: [{"targets": ["host:port"], "labels": {"node": "<hostname>"}}].
struct FleetTarget {
  std::string hostname;
  std::string address;  // host:port
};
std::string RenderFileSd(const std::vector<FleetTarget>& targets);

class FleetRunner {
 public:
  // Creates the simulated nodes and starts their agents, spread over one GPU collector interval (at most
  // 15 s), then writes the file_sd file. Null with the
  // reason in *status when a scenario, the simulator library or a node cannot be set up (what started is
  // stopped again).
  static std::unique_ptr<FleetRunner> Start(FleetOptions options, Status* status);
  ~FleetRunner();  // Stop()
  FleetRunner(const FleetRunner&) = delete;
  FleetRunner& operator=(const FleetRunner&) = delete;

  // Moves the job mix to `since_start` and rewrites the mapping records of the nodes whose job changed.
  // Returns how many nodes changed.
  size_t Advance(std::chrono::milliseconds since_start);
  // Stops every node's agent, then frees the simulated nodes. Idempotent.
  void Stop();

  const std::vector<FleetTarget>& targets() const;
  size_t running_jobs() const;
  uint64_t started_jobs() const;

 private:
  struct State;
  explicit FleetRunner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gpuscope::fleet
