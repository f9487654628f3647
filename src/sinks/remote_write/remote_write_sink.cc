#include "src/sinks/remote_write/remote_write_sink.h"

#include <algorithm>
#include <filesystem>

#include "src/core/log.h"
#include "src/sinks/remote_write/remote_write_record.h"

namespace gpuscope {
namespace {

constexpr std::string_view kVersionHeader = "X-Prometheus-Remote-Write-Version";

}  // namespace

struct RemoteWriteSink::Destination {
  std::string url;
  // As configured; `protocol` is what the next request uses.
  RemoteWriteProtocol mode = RemoteWriteProtocol::kV1;
  std::string consumer;  // queue consumer and the sender's sink label
  std::unique_ptr<PushSender> sender;
  std::atomic<int> protocol{1};  // what the next request uses: 1 or 2
  mutable Mutex mu;
  uint64_t samples_sent GUARDED_BY(mu) = 0;
  uint64_t samples_retried GUARDED_BY(mu) = 0;
  uint64_t samples_dropped GUARDED_BY(mu) = 0;
  int64_t highest_sent_ms GUARDED_BY(mu) = 0;
  // 1.0 bodies; used on the sender's thread only.
  RemoteWriteV1Writer v1_writer;
};

bool ParseRemoteWriteProtocol(std::string_view text, RemoteWriteProtocol* protocol) {
  if (text == "1.0")
    *protocol = RemoteWriteProtocol::kV1;
  else if (text == "2.0")
    *protocol = RemoteWriteProtocol::kV2;
  else if (text == "auto")
    *protocol = RemoteWriteProtocol::kAuto;
  else
    return false;
  return true;
}

RemoteWriteSink::RemoteWriteSink(RemoteWriteOptions options)
    : options_(std::move(options)),
      producer_({.name = "remote_write",
                 .interval = options_.interval,
                 .snapshots = options_.snapshots,
                 .now_unix_ms = options_.now_unix_ms,
                 .produce = [this](const Snapshot& snapshot, int64_t timestamp_ms) {
                   return QueueSnapshot(snapshot, timestamp_ms);
                 }}) {}

RemoteWriteSink::~RemoteWriteSink() { Stop(); }

Status RemoteWriteSink::Start() {
  {
    MutexLock lock(&mu_);
    if (running_) return Status::Internal("remote_write already running");
  }
  if (options_.endpoints.empty()) return Status::InvalidArgument("remote_write needs a URL");
  if (options_.snapshots == nullptr) return Status::InvalidArgument("remote_write needs the snapshot store");
  std::vector<std::string> consumers;
  for (size_t i = 0; i < options_.endpoints.size(); ++i)
    consumers.push_back("remote_write_" + std::to_string(i));
  std::unique_ptr<DurableQueue> queue;
  Status status =
      OpenMetricsQueue("remote_write", options_.queue_directory, options_.queue_max_bytes, consumers, &queue);
  if (!status.ok()) return status;

  std::vector<std::unique_ptr<Destination>> destinations;
  for (size_t i = 0; i < options_.endpoints.size(); ++i) {
    const RemoteWriteEndpoint& endpoint = options_.endpoints[i];
    auto d = std::make_unique<Destination>();
    d->url = endpoint.url;
    d->consumer = consumers[i];
    d->mode = endpoint.protocol;
    d->protocol = endpoint.protocol == RemoteWriteProtocol::kV1 ? 1 : 2;
    PushSinkOptions o;
    static_cast<PushEndpoint&>(o) = endpoint;  // URL, headers, TLS and credentials of this receiver
    o.name = d->consumer;
    o.max_batch_records = 10;  // batches of one interval each: a catch-up request holds ten intervals
    o.max_batch_bytes = 4 << 20;
    o.min_backoff = options_.min_backoff;
    o.max_backoff = options_.max_backoff;
    Destination* raw = d.get();
    o.encode = [this, raw](const std::vector<std::string>& records) { return Encode(*raw, records); };
    o.accept = [this, raw](const HttpClientResponse& response) { return Accept(*raw, response); };
    o.on_result = [this, raw](const std::vector<std::string>& records, BatchFate fate) {
      OnResult(*raw, records, fate);
    };
    d->sender = std::make_unique<PushSender>(queue.get(), std::move(o));
    destinations.push_back(std::move(d));
  }
  // What an earlier run left queued: the consumer furthest behind holds every record still kept.
  SampleBacklog backlog;
  const auto furthest = std::max_element(
      consumers.begin(), consumers.end(),
      [&](const auto& a, const auto& b) { return queue->pending_records(a) < queue->pending_records(b); });
  status = queue->ForEachPending(*furthest, [&backlog](std::string_view record) {
    uint64_t samples = 0;
    int64_t timestamp_ms = 0;
    SummarizeRemoteWriteRecord(record, &samples, &timestamp_ms);  // 2.0 records and older plain 1.0 ones
    backlog.Appended(samples);
  });
  if (!status.ok())
    Log(LogLevel::kWarn, "remote_write cannot count the queued samples", {{"error", status.message()}});
  // The series of the last batch queued before this start: those gone meanwhile get their stale markers
  // in the first batch.
  auto series_memory = std::make_unique<SeriesMemory>(options_.queue_directory + "/series");
  auto batcher = std::make_unique<RemoteWriteBatcher>(options_.external_labels);
  std::vector<RemoteWriteLabels> remembered;
  for (auto& [key, labels] : series_memory->Load()) remembered.push_back(std::move(labels));
  if (batcher->Restore(remembered) < remembered.size()) {
    Log(LogLevel::kWarn, "remote_write series memory holds label sets no batch could have; left out",
        {{"path", series_memory->path()}});
  }

  for (auto& d : destinations) {
    status = d->sender->Start();
    if (!status.ok()) {
      for (auto& started : destinations) started->sender->Stop();
      return Status::InvalidArgument("remote_write " + d->url + ": " + status.message());
    }
  }
  {
    MutexLock lock(&mu_);
    queue_ = std::move(queue);
    destinations_ = std::move(destinations);
    batcher_ = std::move(batcher);
    series_memory_ = std::move(series_memory);
    remembered_changes_ = 0;
    series_memory_failing_ = false;
    backlog_ = std::move(backlog);
    running_ = true;
  }
  producer_.Start();
  return Status::Ok();
}

void RemoteWriteSink::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
  }
  producer_.Stop();  // not under mu_: a QueueSnapshot in progress takes it
  MutexLock lock(&mu_);
  for (auto& d : destinations_) d->sender->Stop();  // a sender's thread never takes mu_
  running_ = false;
}

void RemoteWriteSink::Wake() {
  MutexLock lock(&mu_);
  for (auto& d : destinations_) d->sender->Wake();
}

Status RemoteWriteSink::QueueSnapshot(const Snapshot& snapshot, int64_t timestamp_ms) {
  MutexLock lock(&mu_);
  if (queue_ == nullptr) return Status::Unavailable("remote_write is not started");
  const RemoteWriteBatcher::Built built = batcher_->Build(snapshot, timestamp_ms, &record_);
  Status status = queue_->Append(record_);
  if (status.ok()) status = queue_->Sync();
  batcher_->Committed(status.ok());
  if (!status.ok()) {
    ++queue_errors_;
    return status;
  }
  ++batches_queued_;
  samples_queued_ += built.samples;
  stale_markers_ += built.stale_markers;
  highest_queued_ms_ = std::max(highest_queued_ms_, timestamp_ms);
  backlog_.Appended(built.samples);
  uint64_t needed = 0;
  for (auto& d : destinations_) needed = std::max(needed, queue_->pending_records(d->consumer));
  backlog_.Keep(needed);
  for (auto& d : destinations_) d->sender->Wake();
  RememberQueuedSeries();
  return Status::Ok();
}

void RemoteWriteSink::RememberQueuedSeries() {
  const uint64_t changes = batcher_->queued_series_changes();
  if (changes == remembered_changes_) return;  // the steady state: the same series as last written
  RemoteWriteSeriesSet series;
  for (RemoteWriteLabels& labels : batcher_->QueuedSeries()) {
    std::string key = RemoteWriteSeriesKey(labels);
    series.emplace(std::move(key), std::move(labels));
  }
  const Status status = series_memory_->Store(series);
  if (!status.ok()) {
    // Tried again after the next batch; a restart before then misses the stale markers of the change.
    if (!series_memory_failing_) {
      Log(LogLevel::kWarn, "remote_write cannot write its series memory",
          {{"path", series_memory_->path()}, {"error", status.message()}});
    }
    series_memory_failing_ = true;
    return;
  }
  series_memory_failing_ = false;
  remembered_changes_ = changes;
}

EncodedBody RemoteWriteSink::Encode(Destination& destination, const std::vector<std::string>& records) const {
  EncodedBody body;
  body.content_encoding = "snappy";
  size_t unreadable = 0;
  if (destination.protocol.load() == 2) {
    std::string scratch;
    body.body = SnappyCompress(RemoteWriteRecordsToV2(records, &scratch, &unreadable));
    body.content_type = std::string(kRemoteWriteV2ContentType);
    body.headers.emplace_back(std::string(kVersionHeader), "2.0.0");
  } else {
    body.body = SnappyCompress(destination.v1_writer.Request(records, &unreadable));
    body.content_type = std::string(kRemoteWriteV1ContentType);
    body.headers.emplace_back(std::string(kVersionHeader), "0.1.0");
  }
  if (unreadable > 0) {
    Log(LogLevel::kWarn, "remote_write skips unreadable queued batches",
        {{"url", destination.url}, {"batches", std::to_string(unreadable)}});
  }
  return body;
}

bool RemoteWriteSink::Accept(Destination& destination, const HttpClientResponse& response) const {
  if (destination.mode != RemoteWriteProtocol::kAuto || destination.protocol.load() != 2) return true;
  const bool confirmed =
      response.status != 415 && !response.Header("x-prometheus-remote-write-samples-written").empty();
  if (confirmed) return true;
  destination.protocol = 1;
  Log(LogLevel::kInfo, "remote_write receiver does not take 2.0, using 1.0",
      {{"url", destination.url}, {"status", std::to_string(response.status)}});
  return false;
}

void RemoteWriteSink::OnResult(Destination& destination, const std::vector<std::string>& records,
                               BatchFate fate) {
  uint64_t samples = 0;
  int64_t timestamp_ms = 0;
  for (const std::string& record : records) SummarizeRemoteWriteRecord(record, &samples, &timestamp_ms);
  MutexLock lock(&destination.mu);
  switch (fate) {
    case BatchFate::kDelivered:
      destination.samples_sent += samples;
      destination.highest_sent_ms = std::max(destination.highest_sent_ms, timestamp_ms);
      break;
    case BatchFate::kRejected:
      destination.samples_dropped += samples;
      break;
    case BatchFate::kRetry:
      destination.samples_retried += samples;
      break;
  }
}

std::vector<MetricDescription> RemoteWriteSink::Describe() {
  std::vector<MetricDescription> out = {
      {"gpuscope_remote_write_batches_queued_total",
       MetricType::kCounter,
       "Batches (one per interval: the whole snapshot) queued for remote_write.",
       "",
       {"sink"},
       "remote_write sink"},
      {"gpuscope_remote_write_samples_queued_total",
       MetricType::kCounter,
       "Samples queued for remote_write, stale markers included.",
       "",
       {"sink"},
       "remote_write sink"},
      {"gpuscope_remote_write_stale_markers_total",
       MetricType::kCounter,
       "Stale markers queued for series that disappeared since the previous batch (job ended, GPU lost).",
       "",
       {"sink"},
       "remote_write sink"},
      {"gpuscope_remote_write_queue_errors_total",
       MetricType::kCounter,
       "Batches that could not be written to the queue (disk error): those samples are lost.",
       "",
       {"sink"},
       "remote_write sink"},
      {"gpuscope_remote_write_highest_timestamp_seconds",
       MetricType::kGauge,
       "Timestamp of the newest queued batch; 0 before the first.",
       "seconds",
       {"sink"},
       "remote_write sink"},
      {"gpuscope_remote_write_samples_sent_total",
       MetricType::kCounter,
       "Samples a URL accepted (2xx).",
       "",
       {"sink", "url"},
       "remote_write sink"},
      {"gpuscope_remote_write_samples_retried_total",
       MetricType::kCounter,
       "Samples in requests that failed recoverably (5xx, 429, connection errors) and stay queued for a "
       "retry; counted per attempt.",
       "",
       {"sink", "url"},
       "remote_write sink"},
      {"gpuscope_remote_write_samples_dropped_total",
       MetricType::kCounter,
       "Samples given up on because the URL rejected them (4xx other than 429); batches dropped because the "
       "queue was full are gpuscope_queue_dropped_total{queue=\"remote_write\"}.",
       "",
       {"sink", "url", "reason"},
       "remote_write sink"},
      {"gpuscope_remote_write_pending_batches",
       MetricType::kGauge,
       "Queued batches a URL has not yet accepted.",
       "",
       {"sink", "url"},
       "remote_write sink"},
      {"gpuscope_remote_write_highest_sent_timestamp_seconds",
       MetricType::kGauge,
       "Timestamp of the newest sample a URL accepted; 0 before the first.",
       "seconds",
       {"sink", "url"},
       "remote_write sink"},
      {"gpuscope_remote_write_lag_seconds",
       MetricType::kGauge,
       "Newest queued timestamp minus newest sent timestamp (0 before the first delivery; the age of the "
       "oldest pending batch is gpuscope_queue_oldest_age_seconds).",
       "seconds",
       {"sink", "url"},
       "remote_write sink"},
      {"gpuscope_remote_write_protocol",
       MetricType::kGauge,
       "1 for the protocol a URL is sent now (protocol=1.0 or 2.0; auto may fall back to 1.0).",
       "",
       {"sink", "url", "protocol"},
       "remote_write sink"},
      {"gpuscope_remote_write_samples_pending",
       MetricType::kGauge,
       "Queued samples a URL has not yet accepted, stale markers included (queued by this run or an "
       "earlier one).",
       "",
       {"sink", "url"},
       "remote_write sink"},
  };
  for (MetricDescription& d : PushSender::Describe()) out.push_back(std::move(d));
  for (MetricDescription& d : DurableQueue::Describe()) out.push_back(std::move(d));
  return out;
}

std::vector<MetricFamily> RemoteWriteSink::Metrics() const {
  std::vector<MetricFamily> out;
  const std::vector<MetricDescription> descriptions = Describe();
  for (size_t i = 0; i < 13; ++i) {
    const MetricDescription& d = descriptions[i];
    out.push_back({d.name, d.help, d.type, d.unit, {}});
  }
  const Labels sink{{"sink", "remote_write"}};
  int64_t highest_queued_ms = 0;
  MutexLock lock(&mu_);  // the queue's and senders' own locks are taken inside it, never the other way
  {
    out[0].samples.push_back({sink, static_cast<double>(batches_queued_)});
    out[1].samples.push_back({sink, static_cast<double>(samples_queued_)});
    out[2].samples.push_back({sink, static_cast<double>(stale_markers_)});
    out[3].samples.push_back({sink, static_cast<double>(queue_errors_)});
    out[4].samples.push_back({sink, highest_queued_ms_ / 1000.0});
    highest_queued_ms = highest_queued_ms_;
  }
  for (const auto& d : destinations_) {
    const Labels url{{"sink", "remote_write"}, {"url", d->url}};
    const uint64_t pending = queue_ != nullptr ? queue_->pending_records(d->consumer) : 0;
    MutexLock destination_lock(&d->mu);
    out[5].samples.push_back({url, static_cast<double>(d->samples_sent)});
    out[6].samples.push_back({url, static_cast<double>(d->samples_retried)});
    out[7].samples.push_back({Labels{{"sink", "remote_write"}, {"url", d->url}, {"reason", "rejected"}},
                              static_cast<double>(d->samples_dropped)});
    out[8].samples.push_back({url, static_cast<double>(pending)});
    out[9].samples.push_back({url, d->highest_sent_ms / 1000.0});
    const int64_t lag_ms =
        d->highest_sent_ms > 0 ? std::max<int64_t>(0, highest_queued_ms - d->highest_sent_ms) : 0;
    out[10].samples.push_back({url, lag_ms / 1000.0});
    out[11].samples.push_back({Labels{{"sink", "remote_write"},
                                      {"url", d->url},
                                      {"protocol", d->protocol.load() == 2 ? "2.0" : "1.0"}},
                               1.0});
    out[12].samples.push_back({url, static_cast<double>(backlog_.Pending(pending))});
  }
  for (const auto& d : destinations_) {
    for (MetricFamily& f : d->sender->Metrics()) out.push_back(std::move(f));
  }
  if (queue_ != nullptr) {
    for (MetricFamily& f : queue_->Metrics("remote_write")) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gpuscope
