#include "src/agent/events.h"

#include <filesystem>
#include <utility>

#include "src/core/log.h"
#include "src/events/event_pipeline.h"
#include "src/sinks/loki/loki_events.h"
#include "src/sinks/otlp/otlp_events.h"
#include "src/sinks/push/push_sender.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {
namespace {

class EventsCollector : public Collector {
 public:
  EventsCollector(const EventPipeline* pipeline, const DurableQueue* queue,
                  std::vector<const PushSender*> senders)
      : pipeline_(pipeline), queue_(queue), senders_(std::move(senders)) {}
  std::string_view Name() const override { return "events"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    if (pipeline_ != nullptr) {
      for (MetricFamily& f : pipeline_->Metrics()) out.push_back(std::move(f));
    }
    if (queue_ != nullptr) {
      for (MetricFamily& f : queue_->Metrics("events")) out.push_back(std::move(f));
    }
    for (const PushSender* sender : senders_) {
      for (MetricFamily& f : sender->Metrics()) out.push_back(std::move(f));
    }
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override { return EventPath::Describe(); }

 private:
  const EventPipeline* pipeline_;
  const DurableQueue* queue_;
  std::vector<const PushSender*> senders_;
};

}  // namespace

EventPath::~EventPath() { Stop(); }

Status EventPath::Create(const AgentConfig& config, std::string host, XidLedger* ledger, const JobTable* jobs,
                         const GpuDirectory* gpus, std::unique_ptr<EventPath>* path) {
  path->reset();
  const bool any_source =
      !config.events_kmsg_path.empty() || !config.events_files.empty() || config.events_journal;
  const bool any_sink = !config.loki_url.empty() || !config.otlp_url.empty();
  if (!any_source && !any_sink) return Status::Ok();
  std::unique_ptr<EventPath> out(new EventPath());

  if (any_sink) {
    DurableQueueOptions q;
    q.directory = !config.queue_dir.empty()
                      ? config.queue_dir
                      : (std::filesystem::path(config.events_state_dir) / "queue").string();
    q.max_total_bytes = static_cast<uint64_t>(config.queue_max_mib) << 20;
    q.segment_bytes = std::min<uint64_t>(16ull << 20, std::max<uint64_t>(q.max_total_bytes / 8, 64 << 10));
    // The pipeline syncs once per poll (flush below) instead of once per record.
    q.sync = QueueSyncPolicy::kNone;
    if (!config.loki_url.empty()) q.consumers.push_back("loki");
    if (!config.otlp_url.empty()) q.consumers.push_back("otlp");
    Status status = DurableQueue::Open(q, &out->queue_);
    if (!status.ok()) return Status::Unavailable("event queue " + q.directory + ": " + status.message());

    if (!config.loki_url.empty()) {
      PushSinkOptions o;
      o.name = "loki";
      o.url = config.loki_url;
      o.ca_file = config.sink_tls_ca_file;
      if (!config.loki_tenant.empty()) o.headers.emplace_back("X-Scope-OrgID", config.loki_tenant);
      const LokiFormat format = config.loki_format == "json" ? LokiFormat::kJson : LokiFormat::kProtobuf;
      o.encode = [format](const std::vector<std::string>& records) {
        EncodedBody body;
        body.body = LokiBodyForRecords(records, format, nullptr);
        body.content_type =
            std::string(format == LokiFormat::kJson ? kLokiJsonContentType : kLokiProtobufContentType);
        return body;
      };
      out->senders_.push_back(std::make_unique<PushSender>(out->queue_.get(), std::move(o)));
    }
    if (!config.otlp_url.empty()) {
      PushSinkOptions o;
      o.name = "otlp";
      o.url = config.otlp_url;
      o.ca_file = config.sink_tls_ca_file;
      o.encode = [](const std::vector<std::string>& records) {
        EncodedBody body;
        body.body = OtlpBodyForRecords(records, nullptr);
        body.content_type = std::string(kOtlpContentType);
        return body;
      };
      out->senders_.push_back(std::make_unique<PushSender>(out->queue_.get(), std::move(o)));
    }
  }

  if (any_source) {
    EventPipelineOptions p;
    p.host = std::move(host);
    p.kmsg_path = config.events_kmsg_path;
    p.file_globs = config.events_files;
    p.journal = config.events_journal;
    p.journal_directory = config.events_journal_directory;
    p.journal_matches = config.events_journal_matches;
    p.state_dir = config.events_state_dir;
    p.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
    p.poll_interval = config.events_poll_interval;
    p.ship_severity =
        ParseEventSeverity(config.events_ship_severity).value_or(EventSeverity::kInfo);  // validated
    if (DurableQueue* queue = out->queue_.get()) {
      p.ship = [queue](const EventRecord& record) { return queue->Append(EncodeEventRecord(record)); };
      std::vector<PushSender*> senders;
      for (auto& s : out->senders_) senders.push_back(s.get());
      p.flush = [queue, senders] {
        Status status = queue->Sync();
        if (!status.ok()) Log(LogLevel::kWarn, "event queue sync failed", {{"error", status.message()}});
        for (PushSender* s : senders) s->Wake();
      };
    }
    out->pipeline_ = std::make_unique<EventPipeline>(std::move(p), ledger, jobs, gpus);
  } else {
    Log(LogLevel::kWarn, "push sinks configured without event sources: only what is already queued is sent");
  }
  *path = std::move(out);
  return Status::Ok();
}

Status EventPath::Start() {
  for (auto& sender : senders_) {
    Status status = sender->Start();
    if (!status.ok()) return status;
  }
  if (pipeline_) return pipeline_->Start();
  return Status::Ok();
}

void EventPath::Stop() {
  if (pipeline_) pipeline_->Stop();
  for (auto& sender : senders_) sender->Stop();
}

std::unique_ptr<Collector> EventPath::MakeCollector() {
  std::vector<const PushSender*> senders;
  for (auto& s : senders_) senders.push_back(s.get());
  return std::make_unique<EventsCollector>(pipeline_.get(), queue_.get(), std::move(senders));
}

std::vector<MetricDescription> EventPath::Describe() {
  std::vector<MetricDescription> out = EventPipeline::Describe();
  for (MetricDescription& d : DurableQueue::Describe()) out.push_back(std::move(d));
  for (MetricDescription& d : PushSender::Describe()) out.push_back(std::move(d));
  return out;
}

}  // namespace gpuscope
