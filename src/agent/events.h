// EventPath: the agent's event tier, wired from the config: the EventPipeline over every enabled event
// source (sources → classifiers → attribution, counters, XID ledger), one DurableQueue shared by the push
// sinks, and every enabled push sink, all created from their registries (event_registry.h). Its metrics
// are the "events" collector's.
//
// Thread-safety: Create/Start/Stop from the agent's main thread; the collector from the scheduler.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/agent/config.h"
#include "src/core/collector.h"
#include "src/core/status.h"

namespace gpuscope {

class DurableQueue;
class EventPipeline;
class GpuDirectory;
class JobTable;
class PostedEvents;
struct EventSourceContext;
class PushSink;
class SnapshotStore;
class SpanExporter;
class XidLedger;

class EventPath {
 public:
  // Nothing configured (no source and no sink) leaves *path empty and returns Ok. The queue directory
  // must be writable when a sink is configured. `snapshots` (the metrics) feeds the sinks that push
  // metrics (remote_write) and `detectors` (may be null) the events the agent's own detectors post (the
  // "training" and "ebpf" sources); both outlive the path.
  static Status Create(const AgentConfig& config, std::string host, XidLedger* ledger, const JobTable* jobs,
                       const GpuDirectory* gpus, const SnapshotStore* snapshots,
                       const EventSourceContext* detectors, std::unique_ptr<EventPath>* path);
  ~EventPath();

  // Starts the sinks, then the pipeline. A sink that cannot start is an error.
  Status Start();
  // Stops the pipeline, then the sinks (what is queued stays queued for the next start).
  void Stop();

  // The "events" collector: pipeline, queue and sink metrics.
  std::unique_ptr<Collector> MakeCollector();
  // The enabled sink that takes spans (OTLP traces), for the collectors that make them; null when none.
  // Valid as long as the path.
  SpanExporter* spans() const { return spans_; }
  // Every family that collector may emit, with every registered source and sink (for the docs).
  static std::vector<MetricDescription> Describe();
  // What that collector covers, naming every registered source and sink (for the docs).
  static std::string Help();

 private:
  EventPath() = default;
  std::unique_ptr<DurableQueue> queue_;
  std::vector<std::unique_ptr<PushSink>> sinks_;
  SpanExporter* spans_ = nullptr;
  std::unique_ptr<EventPipeline> pipeline_;
};

}  // namespace gpuscope
