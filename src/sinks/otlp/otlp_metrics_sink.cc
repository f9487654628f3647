#include "src/sinks/otlp/otlp_metrics_sink.h"

#include <algorithm>

#include "src/core/log.h"
#include "src/core/version.h"
#include "src/sinks/otlp/otlp_metrics.h"

namespace gpuscope {
namespace {

constexpr std::string_view kConsumer = "otlp_metrics";

}  // namespace

OtlpMetricsSink::OtlpMetricsSink(OtlpMetricsOptions options)
    : options_(std::move(options)),
      producer_({.name = "otlp_metrics",
                 .interval = options_.interval,
                 .snapshots = options_.snapshots,
                 .now_unix_ms = options_.now_unix_ms,
                 .produce = [this](const Snapshot& snapshot, int64_t timestamp_ms) {
                   return QueueSnapshot(snapshot, timestamp_ms);
                 }}) {}

OtlpMetricsSink::~OtlpMetricsSink() { Stop(); }

Status OtlpMetricsSink::Start() {
  {
    MutexLock lock(&mu_);
    if (running_) return Status::Internal("otlp_metrics already running");
  }
  if (options_.endpoint.url.empty()) return Status::InvalidArgument("otlp_metrics needs a URL");
  if (options_.snapshots == nullptr) return Status::InvalidArgument("otlp_metrics needs the snapshot store");
  std::unique_ptr<DurableQueue> queue;
  Status status = OpenMetricsQueue(kConsumer, options_.queue_directory, options_.queue_max_bytes,
                                   {std::string(kConsumer)}, &queue);
  if (!status.ok()) return status;

  PushSinkOptions o;
  static_cast<PushEndpoint&>(o) = options_.endpoint;
  o.name = std::string(kConsumer);
  o.max_batch_records = 10;  // one interval each: a catch-up request holds ten intervals
  o.max_batch_bytes = 4 << 20;
  o.min_backoff = options_.min_backoff;
  o.max_backoff = options_.max_backoff;
  o.encode = [](const std::vector<std::string>& records) {
    EncodedBody body;
    for (const std::string& record : records) body.body.append(record);  // requests concatenate
    body.content_type = std::string(kOtlpContentType);
    return body;
  };
  auto sender = std::make_unique<PushSender>(queue.get(), std::move(o));
  status = sender->Start();
  if (!status.ok())
    return Status::InvalidArgument("otlp_metrics " + options_.endpoint.url + ": " + status.message());
  {
    MutexLock lock(&mu_);
    queue_ = std::move(queue);
    sender_ = std::move(sender);
    start_ms_ = producer_.NowMs();
    running_ = true;
  }
  producer_.Start();
  return Status::Ok();
}

void OtlpMetricsSink::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
  }
  producer_.Stop();  // not under mu_: a QueueSnapshot in progress takes it
  MutexLock lock(&mu_);
  sender_->Stop();  // the sender's thread never takes mu_
  running_ = false;
}

void OtlpMetricsSink::Wake() {
  MutexLock lock(&mu_);
  if (sender_ != nullptr) sender_->Wake();
}

Status OtlpMetricsSink::QueueSnapshot(const Snapshot& snapshot, int64_t timestamp_ms) {
  MutexLock lock(&mu_);
  if (queue_ == nullptr) return Status::Unavailable("otlp_metrics is not started");
  OtlpMetricsRequest request;
  request.resource_attributes = options_.resource_attributes;
  request.scope_version = std::string(Version());
  request.time_unix_nano = static_cast<uint64_t>(timestamp_ms) * 1000000u;
  request.start_time_unix_nano = static_cast<uint64_t>(std::min(start_ms_, timestamp_ms)) * 1000000u;
  Status status = queue_->Append(EncodeOtlpMetricsRequest(request, snapshot.families()));
  if (status.ok()) status = queue_->Sync();
  if (!status.ok()) return status;
  sender_->Wake();
  return Status::Ok();
}

std::vector<MetricDescription> OtlpMetricsSink::Describe() {
  std::vector<MetricDescription> out = PushSender::Describe();
  for (MetricDescription& d : DurableQueue::Describe()) out.push_back(std::move(d));
  return out;
}

std::vector<MetricFamily> OtlpMetricsSink::Metrics() const {
  std::vector<MetricFamily> out;
  MutexLock lock(&mu_);
  if (sender_ == nullptr) {  // not started: the families, without samples
    for (const MetricDescription& d : Describe()) out.push_back({d.name, d.help, d.type, d.unit, {}});
    return out;
  }
  out = sender_->Metrics();
  if (queue_ != nullptr) {
    for (MetricFamily& f : queue_->Metrics(std::string(kConsumer))) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gpuscope
