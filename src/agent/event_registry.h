// The event sources and push sinks the agent knows, each created by name from its entry, as collectors
// are (registry.h). An entry says whether the agent config turns it on, builds it from that config, and
// describes the families of its own (for docs/metrics.md). The event path (events.h) creates every
// enabled entry and knows them only through EventSource (src/events/event_source.h) and PushSink
// (src/sinks/push_sink.h): adding a source or a sink is its own folder plus one entry here.
//
// Thread-safety: build at start-up on one thread, then read-only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/agent/config.h"
#include "src/agent/named_registry.h"
#include "src/core/metric.h"
#include "src/core/span.h"
#include "src/events/event_source.h"
#include "src/sinks/push_sink.h"

namespace gpuscope {

class DurableQueue;
class PostedEvents;
class SnapshotStore;

// What the agent shares with the event sources it creates.
struct EventSourceContext {
  // The training collector's training_hang events (the "training" source); outlives the sources. Null:
  // that source reads nothing.
  PostedEvents* training_events = nullptr;
  // Falco's events POSTed to the agent (--events.falco-http; the "falco" source); outlives the sources.
  // Null: that source reads its files only.
  PostedEvents* falco_events = nullptr;
  // The ebpf collector's unexpected connections, foreign file opens and CUDA allocation failures (the
  // "ebpf" source); null: that source reads nothing.
  PostedEvents* ebpf_events = nullptr;
  // The gpu collector's DCGM health incidents and the profiling pause's changes (the "gpu" source).
  PostedEvents* gpu_events = nullptr;
};

struct EventSourceEntry {
  static constexpr std::string_view kKind = "event source";
  std::string name;  // the created source's Name(): the `source` label
  std::string help;
  std::function<bool(const AgentConfig&)> enabled;
  // Called for enabled entries only, after the state directory (config.events_state_dir) exists.
  std::function<std::unique_ptr<EventSource>(const AgentConfig&, const EventSourceContext&)> create;
  // The families the source appends itself (EventSource::AppendMetrics); the pipeline's per-source ones
  // (lines, truncated, errors) are described by the pipeline.
  std::function<std::vector<MetricDescription>()> describe;
  // A source that never makes the event path exist by itself: enabled, it joins only when another source
  // is on (the gpu collector's, on by default, must not start an event path on every node).
  bool joins_only = false;
};

// What the agent shares with the push sinks it creates.
struct PushSinkContext {
  DurableQueue* queue = nullptr;  // the events' durable queue, opened with a consumer per enabled event sink
  const SnapshotStore* snapshots = nullptr;  // the metrics, for sinks that push them (remote_write)
  std::string_view host = {};                // this node's name (OTLP resource host.name)
};

struct PushSinkEntry {
  static constexpr std::string_view kKind = "push sink";
  std::string name;  // the created sink's Name(): the `sink` label and its queue consumer name
  std::string help;
  std::function<bool(const AgentConfig&)> enabled;
  std::function<std::unique_ptr<PushSink>(const AgentConfig&, const PushSinkContext&)> create;
  std::function<std::vector<MetricDescription>()> describe;  // families of the sink (may repeat a peer's)
  // Whether the sink reads the events' queue (a consumer of it); a metrics sink keeps a queue of its own.
  bool reads_events = true;
  // For a sink that takes spans (OTLP traces): the created sink as the SpanExporter the agent hands the
  // collectors that make spans (training). Empty for the others.
  std::function<SpanExporter*(PushSink& sink)> span_exporter = nullptr;
};

using EventSourceRegistry = NamedRegistry<EventSourceEntry>;
using PushSinkRegistry = NamedRegistry<PushSinkEntry>;

// The sources and sinks built into gpuscope-agent, in the order they are polled and started.
const EventSourceRegistry& BuiltinEventSources();
const PushSinkRegistry& BuiltinPushSinks();

}  // namespace gpuscope
