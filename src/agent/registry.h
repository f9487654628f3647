// CollectorRegistry: the collectors the agent knows, created by name. Each entry declares its defaults
// (enabled, interval) at registration, as node_exporter does; --collector.NAME / --no-collector.NAME
// flip them. Registering a name twice is an error.
//
// Thread-safety: build at start-up on one thread, then read-only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/agent/config.h"
#include "src/agent/named_registry.h"
#include "src/core/collector.h"
#include "src/core/status.h"

namespace gpuscope {

class NodeState;
class NvmlLibrary;
class SpanExporter;
class PostedEvents;

// What the agent shares with the collectors it creates.
struct CollectorContext {
  // The node's shared facts (GPU inventory, JobTable, GPU processes, XID ledger); never null when
  // created by the agent, and outlives the collectors.
  NodeState* node = nullptr;
  // Where collectors that make spans (training) hand them: the OTLP traces sink; null without one.
  SpanExporter* spans = nullptr;
  // Where the training collector's hung ranks go as training_hang events (the event path's "training"
  // source reads them); may be null (no events raised). Outlives the collectors.
  PostedEvents* training_events = nullptr;
  // The NVML library the GPU collector uses, opened by the caller (the fleet runner binds one per
  // simulated node); null: the collector opens --nvml.library itself.
  std::shared_ptr<NvmlLibrary> nvml;
  // Where the ebpf collector's events go (the event path's "ebpf" source reads them); may be null.
  PostedEvents* ebpf_events = nullptr;
  // Where the gpu collector's DCGM health incidents go (the event path's "gpu" source); may be null.
  PostedEvents* gpu_events = nullptr;
};

struct CollectorEntry {
  static constexpr std::string_view kKind = "collector";
  std::string name;
  std::string help;
  bool enabled_by_default = true;
  std::chrono::milliseconds default_interval{1000};
  // Must do no I/O: the docs generator creates every collector only to call Describe().
  std::function<std::unique_ptr<Collector>(const AgentConfig&, const CollectorContext&)> create;
};

class CollectorRegistry : public NamedRegistry<CollectorEntry> {
 public:
  // Writes every entry's defaults into config->collectors.
  void FillDefaults(AgentConfig* config) const;
};

// The collectors built into gpuscope-agent.
const CollectorRegistry& BuiltinCollectors();

}  // namespace gpuscope
