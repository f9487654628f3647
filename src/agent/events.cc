#include "src/agent/events.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "src/agent/event_registry.h"
#include "src/core/log.h"
#include "src/events/event_pipeline.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {
namespace {

class EventsCollector : public Collector {
 public:
  EventsCollector(const EventPipeline* pipeline, const DurableQueue* queue,
                  std::vector<const PushSink*> sinks)
      : pipeline_(pipeline), queue_(queue), sinks_(std::move(sinks)) {}
  std::string_view Name() const override { return "events"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    if (pipeline_ != nullptr) {
      for (MetricFamily& f : pipeline_->Metrics()) out.push_back(std::move(f));
    }
    if (queue_ != nullptr) {
      for (MetricFamily& f : queue_->Metrics("events")) out.push_back(std::move(f));
    }
    for (const PushSink* sink : sinks_) {
      for (MetricFamily& f : sink->Metrics()) out.push_back(std::move(f));
    }
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override { return EventPath::Describe(); }

 private:
  const EventPipeline* pipeline_;
  const DurableQueue* queue_;
  std::vector<const PushSink*> sinks_;
};

}  // namespace

EventPath::~EventPath() { Stop(); }

Status EventPath::Create(const AgentConfig& config, std::string host, XidLedger* ledger, const JobTable* jobs,
                         const GpuDirectory* gpus, const SnapshotStore* snapshots,
                         const EventSourceContext* detectors, std::unique_ptr<EventPath>* path) {
  path->reset();
  std::vector<const EventSourceEntry*> sources;
  for (const EventSourceEntry& entry : BuiltinEventSources().entries()) {
    if (!entry.joins_only && entry.enabled(config)) sources.push_back(&entry);
  }
  std::vector<const PushSinkEntry*> sinks;
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) {
    if (entry.enabled(config)) sinks.push_back(&entry);
  }
  if (sources.empty() && sinks.empty()) return Status::Ok();
  for (const EventSourceEntry& entry : BuiltinEventSources().entries()) {
    if (!sources.empty() && entry.joins_only && entry.enabled(config)) sources.push_back(&entry);
  }
  std::unique_ptr<EventPath> out(new EventPath());

  const bool event_sinks =
      std::any_of(sinks.begin(), sinks.end(), [](const PushSinkEntry* entry) { return entry->reads_events; });
  if (event_sinks) {
    DurableQueueOptions q;
    q.directory = !config.queue_dir.empty()
                      ? config.queue_dir
                      : (std::filesystem::path(config.events_state_dir) / "queue").string();
    q.max_total_bytes = static_cast<uint64_t>(config.queue_max_mib) << 20;
    q.segment_bytes = std::min<uint64_t>(16ull << 20, std::max<uint64_t>(q.max_total_bytes / 8, 64 << 10));
    // The pipeline syncs once per poll (flush below) instead of once per record.
    q.sync = QueueSyncPolicy::kNone;
    for (const PushSinkEntry* entry : sinks) {
      if (entry->reads_events) q.consumers.push_back(entry->name);
    }
    Status status = DurableQueue::Open(q, &out->queue_);
    if (!status.ok()) return Status::Unavailable("event queue " + q.directory + ": " + status.message());
  }
  const PushSinkContext context{out->queue_.get(), snapshots, host};
  for (const PushSinkEntry* entry : sinks) {
    out->sinks_.push_back(entry->create(config, context));
    if (entry->span_exporter) out->spans_ = entry->span_exporter(*out->sinks_.back());
  }

  if (!sources.empty()) {
    if (!config.events_state_dir.empty()) {  // the sources' checkpoints
      std::error_code ignored;               // a source that cannot write its checkpoint counts that
      std::filesystem::create_directories(config.events_state_dir, ignored);
    }
    EventPipelineOptions p;
    p.host = std::move(host);
    const EventSourceContext source_context = detectors != nullptr ? *detectors : EventSourceContext{};
    for (const EventSourceEntry* entry : sources) p.sources.push_back(entry->create(config, source_context));
    p.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
    p.poll_interval = config.events_poll_interval;
    p.ship_severity =
        ParseEventSeverity(config.events_ship_severity).value_or(EventSeverity::kInfo);  // validated
    if (DurableQueue* queue = out->queue_.get()) {
      p.ship = [queue](const EventRecord& record) { return queue->Append(EncodeEventRecord(record)); };
      std::vector<PushSink*> sinks_to_wake;
      for (auto& s : out->sinks_) sinks_to_wake.push_back(s.get());
      p.flush = [queue, sinks_to_wake] {
        Status status = queue->Sync();
        if (!status.ok()) Log(LogLevel::kWarn, "event queue sync failed", {{"error", status.message()}});
        for (PushSink* s : sinks_to_wake) s->Wake();
      };
    }
    out->pipeline_ = std::make_unique<EventPipeline>(std::move(p), ledger, jobs, gpus);
  } else if (event_sinks) {
    Log(LogLevel::kWarn, "push sinks configured without event sources: only what is already queued is sent");
  }
  *path = std::move(out);
  return Status::Ok();
}

Status EventPath::Start() {
  for (auto& sink : sinks_) {
    Status status = sink->Start();
    if (!status.ok()) return status;
  }
  if (pipeline_) return pipeline_->Start();
  return Status::Ok();
}

void EventPath::Stop() {
  if (pipeline_) pipeline_->Stop();
  for (auto& sink : sinks_) sink->Stop();
}

std::unique_ptr<Collector> EventPath::MakeCollector() {
  std::vector<const PushSink*> sinks;
  for (auto& s : sinks_) sinks.push_back(s.get());
  return std::make_unique<EventsCollector>(pipeline_.get(), queue_.get(), std::move(sinks));
}

std::vector<MetricDescription> EventPath::Describe() {
  // Sinks of one kind share families (labelled sink=...): each family once.
  std::vector<MetricDescription> out;
  std::set<std::string> seen;
  auto add = [&](std::vector<MetricDescription> descriptions) {
    for (MetricDescription& d : descriptions) {
      if (seen.insert(d.name).second) out.push_back(std::move(d));
    }
  };
  add(EventPipeline::Describe());
  for (const EventSourceEntry& entry : BuiltinEventSources().entries()) add(entry.describe());
  add(DurableQueue::Describe());
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) add(entry.describe());
  return out;
}

std::string EventPath::Help() {
  auto list = [](const auto& entries) {
    std::string out;
    for (const auto& entry : entries) out += (out.empty() ? "" : ", ") + entry.name + " (" + entry.help + ")";
    return out;
  };
  return "The event path (on with any event source or push sink): events classified from the sources " +
         list(BuiltinEventSources().entries()) + "; the push sinks' durable queue; the sinks " +
         list(BuiltinPushSinks().entries());
}

}  // namespace gpuscope
