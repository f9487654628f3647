#include "src/sinks/otlp/otlp_traces_sink.h"

#include "src/core/log.h"
#include "src/core/version.h"
#include "src/sinks/otlp/otlp_traces.h"
#include "src/sinks/push/snapshot_producer.h"

namespace gpuscope {
namespace {

constexpr std::string_view kConsumer = "otlp_traces";

MetricDescription UnqueuedDescription() {
  return {"gpuscope_otlp_traces_unqueued_spans_total",
          MetricType::kCounter,
          "Spans the OTLP traces sink could not queue, by reason: not_started (exported before the sink "
          "started), queue_error (a queue write error, or a span larger than the queue).",
          "",
          {"reason"},
          "OTLP traces sink"};
}

}  // namespace

OtlpTracesSink::OtlpTracesSink(OtlpTracesOptions options) : options_(std::move(options)) {}

OtlpTracesSink::~OtlpTracesSink() { Stop(); }

Status OtlpTracesSink::Start() {
  MutexLock lock(&mu_);
  if (running_) return Status::Internal("otlp_traces already running");
  if (options_.endpoint.url.empty()) return Status::InvalidArgument("otlp_traces needs a URL");
  if (queue_ == nullptr) {  // an earlier start's queue stays open after Stop()
    Status status = OpenMetricsQueue(kConsumer, options_.queue_directory, options_.queue_max_bytes,
                                     {std::string(kConsumer)}, &queue_);
    if (!status.ok()) return status;
  }
  PushSinkOptions o;
  static_cast<PushEndpoint&>(o) = options_.endpoint;
  o.name = std::string(kConsumer);
  o.max_batch_records = 1000;
  o.min_backoff = options_.min_backoff;
  o.max_backoff = options_.max_backoff;
  o.encode = [resource = options_.resource_attributes](const std::vector<std::string>& records) {
    EncodedBody body;
    body.body = EncodeOtlpTracesRequest(resource, "gpuscope", Version(), records);
    body.content_type = std::string(kOtlpContentType);
    return body;
  };
  auto sender = std::make_unique<PushSender>(queue_.get(), std::move(o));
  Status status = sender->Start();  // its thread never takes mu_
  if (!status.ok())
    return Status::InvalidArgument("otlp_traces " + options_.endpoint.url + ": " + status.message());
  sender_ = std::move(sender);
  running_ = true;
  return Status::Ok();
}

void OtlpTracesSink::Stop() {
  MutexLock lock(&mu_);
  if (!running_) return;
  sender_->Stop();  // the sender's thread never takes mu_
  running_ = false;
}

void OtlpTracesSink::Wake() {
  MutexLock lock(&mu_);
  if (sender_ != nullptr) sender_->Wake();
}

void OtlpTracesSink::Export(const std::vector<Span>& spans) {
  if (spans.empty()) return;
  MutexLock lock(&mu_);
  if (queue_ == nullptr) {
    unqueued_not_started_ += spans.size();
    return;
  }
  Status failure = Status::Ok();
  for (const Span& span : spans) {
    Status status = queue_->Append(EncodeOtlpSpan(span));
    if (!status.ok()) {
      ++unqueued_queue_error_;
      failure = status;
    }
  }
  Status synced = queue_->Sync();
  if (!synced.ok()) failure = synced;
  if (!failure.ok()) Log(LogLevel::kWarn, "otlp_traces cannot queue spans", {{"error", failure.message()}});
  if (sender_ != nullptr) sender_->Wake();
}

std::vector<MetricDescription> OtlpTracesSink::Describe() {
  std::vector<MetricDescription> out = PushSender::Describe();
  for (MetricDescription& d : DurableQueue::Describe()) out.push_back(std::move(d));
  out.push_back(UnqueuedDescription());
  return out;
}

std::vector<MetricFamily> OtlpTracesSink::Metrics() const {
  std::vector<MetricFamily> out;
  MutexLock lock(&mu_);
  if (sender_ == nullptr) {  // not started: the families, without samples
    for (const MetricDescription& d : PushSender::Describe())
      out.push_back({d.name, d.help, d.type, d.unit, {}});
    for (const MetricDescription& d : DurableQueue::Describe())
      out.push_back({d.name, d.help, d.type, d.unit, {}});
  } else {
    out = sender_->Metrics();
    for (MetricFamily& f : queue_->Metrics(std::string(kConsumer))) out.push_back(std::move(f));
  }
  const MetricDescription d = UnqueuedDescription();
  MetricFamily unqueued{d.name, d.help, d.type, d.unit, {}};
  unqueued.samples.emplace_back(Labels{{"reason", "not_started"}},
                                static_cast<double>(unqueued_not_started_));
  unqueued.samples.emplace_back(Labels{{"reason", "queue_error"}},
                                static_cast<double>(unqueued_queue_error_));
  out.push_back(std::move(unqueued));
  return out;
}

}  // namespace gpuscope
