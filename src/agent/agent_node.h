// AgentNode: one node's running agent, built from an AgentConfig: the node state, the attribution
// sources, the collectors on a scheduler, the snapshot store, the event path with its push sinks and the
// /metrics endpoint. Wiring only, like RunAgent, which runs one AgentNode per process and adds what belongs
// to the process (signals, log settings, --print-metrics-docs). The fleet runner (sim/fleet/) runs many in
// one process, each with its own config (Hostname, port, state directory) and its own NVML binding.
//
// Thread-safety: Create, Start, RunOnce, RescanMappings and Stop one at a time (not concurrently); port()
// from any thread after Start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/agent/config.h"
#include "src/core/health.h"
#include "src/core/status.h"

namespace gpuscope {

class NvmlLibrary;

// --kubernetes.pod-labels "team,app.kubernetes.io/name" as its names.
std::vector<std::string> SplitPodLabels(const std::string& list);

// What the process around a node decides for it.
struct AgentNodeSeams {
  // The GPU collector's NVML library; null: it opens config.nvml_library.
  std::shared_ptr<NvmlLibrary> nvml;
  // Hand freed pages back to the system after each collection cycle (one node per process). Off in the
  // fleet runner, where a thousand nodes would each trim the process's one heap every cycle.
  bool release_freed_memory = true;
  // Watch the mapping directory with inotify (a thread and an inotify instance per node). Off in the fleet
  // runner (the per-user limit of inotify instances is 128): the runner writes the files itself and calls
  // RescanMappings().
  bool watch_mapping_dir = true;
  // Log the collectors' and the endpoint's start-up lines (off in the fleet: one line per node).
  bool log_startup = true;
};

class AgentNode {
 public:
  // Builds every component of `config` (nothing runs yet, except the attribution sources, which start
  // before the first GPU cycle). Null with the reason in *status when a component cannot be set up.
  static std::unique_ptr<AgentNode> Create(const AgentConfig& config, AgentNodeSeams seams, Status* status);
  ~AgentNode();  // Stop()
  AgentNode(const AgentNode&) = delete;
  AgentNode& operator=(const AgentNode&) = delete;

  // Starts the collectors' threads, the event path and the /metrics endpoint.
  Status Start();
  // --once: two collection cycles (at most 1 s apart) and the exposition on stdout; the exit code (0 when
  // healthy). Instead of Start.
  int RunOnce();
  // Re-reads the mapping directory now (when the node has one); for owners that turned watching off.
  void RescanMappings();
  // Stops everything in reverse order of start. Idempotent.
  void Stop();

  // The /metrics endpoint's bound port (after Start; 0 before).
  int port() const;
  // What /healthz and /readyz answer now.
  HealthReport Health() const;

 private:
  struct Parts;
  explicit AgentNode(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace gpuscope
