#include "src/sinks/remote_write/remote_write_sink.h"

#include <algorithm>
#include <filesystem>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

constexpr std::string_view kVersionHeader = "X-Prometheus-Remote-Write-Version";

// Samples in a queued batch and their timestamp (one sample per series, all stamped alike).
void Summarize(std::string_view record, uint64_t* samples, int64_t* timestamp_ms) {
  size_t pos = 0;
  protowire::Field field;
  bool first = true;
  while (pos < record.size() && protowire::NextField(record, &pos, &field)) {
    if (field.number != 1 || field.type != protowire::WireType::kLengthDelimited) continue;
    ++*samples;
    if (!first) continue;
    first = false;
    size_t series_pos = 0;
    protowire::Field series_field;
    while (series_pos < field.bytes.size() && protowire::NextField(field.bytes, &series_pos, &series_field)) {
      if (series_field.number != 2 || series_field.type != protowire::WireType::kLengthDelimited) continue;
      size_t sample_pos = 0;
      protowire::Field sample_field;
      while (sample_pos < series_field.bytes.size() &&
             protowire::NextField(series_field.bytes, &sample_pos, &sample_field)) {
        if (sample_field.number == 2)
          *timestamp_ms = std::max(*timestamp_ms, static_cast<int64_t>(sample_field.scalar));
      }
    }
  }
}

std::string TrimmedFile(const std::string& path, bool* ok) {
  std::string content;
  *ok = ReadFileInto(path, &content, 64 << 10) == 0;
  while (!content.empty() && (content.back() == '\n' || content.back() == '\r' || content.back() == ' ')) {
    content.pop_back();
  }
  return content;
}

}  // namespace

struct RemoteWriteSink::Destination {
  std::string url;
  std::string consumer;  // queue consumer and the sender's sink label
  std::unique_ptr<PushSender> sender;
  std::atomic<int> protocol{1};  // what the next request uses: 1 or 2
  mutable Mutex mu;
  uint64_t samples_sent GUARDED_BY(mu) = 0;
  uint64_t samples_retried GUARDED_BY(mu) = 0;
  uint64_t samples_dropped GUARDED_BY(mu) = 0;
  int64_t highest_sent_ms GUARDED_BY(mu) = 0;
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

RemoteWriteSink::RemoteWriteSink(RemoteWriteOptions options) : options_(std::move(options)) {}

RemoteWriteSink::~RemoteWriteSink() { Stop(); }

int64_t RemoteWriteSink::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status RemoteWriteSink::Start() {
  {
    MutexLock lock(&mu_);
    if (running_) return Status::Internal("remote_write already running");
  }
  if (options_.urls.empty()) return Status::InvalidArgument("remote_write needs a URL");
  if (options_.snapshots == nullptr) return Status::InvalidArgument("remote_write needs the snapshot store");
  DurableQueueOptions q;
  q.directory = options_.queue_directory;
  q.max_total_bytes = options_.queue_max_bytes;
  q.segment_bytes = std::min<uint64_t>(16ull << 20, std::max<uint64_t>(q.max_total_bytes / 8, 64 << 10));
  q.sync = QueueSyncPolicy::kNone;  // synced once per batch (QueueSnapshot)
  for (size_t i = 0; i < options_.urls.size(); ++i)
    q.consumers.push_back("remote_write_" + std::to_string(i));
  std::unique_ptr<DurableQueue> queue;
  Status status = DurableQueue::Open(q, &queue);
  if (!status.ok()) return Status::Unavailable("remote_write queue " + q.directory + ": " + status.message());

  std::vector<std::unique_ptr<Destination>> destinations;
  for (size_t i = 0; i < options_.urls.size(); ++i) {
    auto d = std::make_unique<Destination>();
    d->url = options_.urls[i];
    d->consumer = q.consumers[i];
    d->protocol = options_.protocol == RemoteWriteProtocol::kV1 ? 1 : 2;
    PushSinkOptions o;
    o.name = d->consumer;
    o.url = d->url;
    o.headers = options_.headers;
    o.max_batch_records = 10;  // batches of one interval each: a catch-up request holds ten intervals
    o.max_batch_bytes = 4 << 20;
    o.min_backoff = options_.min_backoff;
    o.max_backoff = options_.max_backoff;
    o.ca_file = options_.ca_file;
    o.cert_file = options_.cert_file;
    o.key_file = options_.key_file;
    o.username = options_.username;
    o.password = options_.password;
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
      q.consumers.begin(), q.consumers.end(),
      [&](const auto& a, const auto& b) { return queue->pending_records(a) < queue->pending_records(b); });
  status = queue->ForEachPending(*furthest, [&backlog](std::string_view record) {
    uint64_t samples = 0;
    int64_t timestamp_ms = 0;
    Summarize(record, &samples, &timestamp_ms);
    backlog.Appended(samples);
  });
  if (!status.ok())
    Log(LogLevel::kWarn, "remote_write cannot count the queued samples", {{"error", status.message()}});
  auto series_memory = std::make_unique<SeriesMemory>(q.directory + "/series");
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
    previous_ = series_memory->Load();
    series_memory_ = std::move(series_memory);
    backlog_ = std::move(backlog);
    running_ = true;
    stopping_ = false;
  }
  producer_ = std::thread([this] { Produce(); });
  return Status::Ok();
}

void RemoteWriteSink::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stopping_ = true;
  }
  cv_.NotifyAll();
  producer_.join();
  MutexLock lock(&mu_);
  for (auto& d : destinations_) d->sender->Stop();  // a sender's thread never takes mu_
  running_ = false;
}

void RemoteWriteSink::Wake() {
  MutexLock lock(&mu_);
  for (auto& d : destinations_) d->sender->Wake();
}

void RemoteWriteSink::Produce() {
  auto next = std::chrono::steady_clock::now() + options_.interval;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && std::chrono::steady_clock::now() < next) cv_.WaitUntil(&mu_, next);
      if (stopping_) return;
    }
    next += options_.interval;
    // A stall (suspend, overload) does not make up for missed intervals with a burst.
    next = std::max(next, std::chrono::steady_clock::now());
    const std::shared_ptr<const Snapshot> snapshot = options_.snapshots->Current();
    if (snapshot->version() == 0) continue;  // nothing collected yet
    const Status status = QueueSnapshot(*snapshot, NowMs());
    if (!status.ok())
      Log(LogLevel::kWarn, "remote_write cannot queue a batch", {{"error", status.message()}});
  }
}

Status RemoteWriteSink::QueueSnapshot(const Snapshot& snapshot, int64_t timestamp_ms) {
  MutexLock lock(&mu_);
  if (queue_ == nullptr) return Status::Unavailable("remote_write is not started");
  RemoteWriteBatch batch;
  std::unordered_map<std::string, std::vector<std::pair<std::string, std::string>>> current;
  std::string_view last_family;
  for (const MetricFamily* family : snapshot.families()) {
    if (!IsValidMetricName(family->name) || family->samples.empty()) continue;
    if (family->name != last_family) {
      batch.metadata.push_back({family->name, family->type, family->help, family->unit});
      last_family = family->name;
    }
    for (const Sample& sample : family->samples) {
      std::vector<std::pair<std::string, std::string>> labels;
      labels.reserve(sample.labels.size() + 1 + options_.external_labels.size());
      labels.emplace_back("__name__", family->name);
      bool valid = true;
      for (const auto& pair : sample.labels) {
        valid = valid && IsValidLabelName(pair.first);
        labels.push_back(pair);
      }
      if (!valid) continue;
      for (const auto& external : options_.external_labels) {
        const bool present = std::any_of(labels.begin(), labels.end(),
                                         [&](const auto& pair) { return pair.first == external.first; });
        if (!present) labels.push_back(external);
      }
      std::sort(labels.begin(), labels.end());
      const bool duplicate_name =
          std::adjacent_find(labels.begin(), labels.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }) != labels.end();
      if (duplicate_name) continue;
      std::string key = RemoteWriteSeriesKey(labels);
      if (current.contains(key)) continue;  // the same series twice: the first wins, as in the exposition
      batch.series.push_back({labels, sample.value, timestamp_ms, 0});
      current.emplace(std::move(key), std::move(labels));
    }
  }
  uint64_t stale = 0;
  for (auto& [key, labels] : previous_) {
    if (current.contains(key)) continue;
    batch.series.push_back({labels, StaleMarker(), timestamp_ms, 0});
    ++stale;
  }
  Status status = queue_->Append(EncodeWriteRequestV1(batch));
  if (status.ok()) status = queue_->Sync();
  if (!status.ok()) {
    ++queue_errors_;
    return status;
  }
  previous_ = std::move(current);
  status = series_memory_->Store(previous_);
  if (!status.ok())
    Log(LogLevel::kWarn, "remote_write cannot write its series memory", {{"error", status.message()}});
  backlog_.Appended(batch.series.size());
  uint64_t needed = 0;
  for (auto& d : destinations_) needed = std::max(needed, queue_->pending_records(d->consumer));
  backlog_.Keep(needed);
  ++batches_queued_;
  samples_queued_ += batch.series.size();
  stale_markers_ += stale;
  highest_queued_ms_ = std::max(highest_queued_ms_, timestamp_ms);
  for (auto& d : destinations_) d->sender->Wake();
  return Status::Ok();
}

EncodedBody RemoteWriteSink::Encode(Destination& destination, const std::vector<std::string>& records) const {
  EncodedBody body;
  body.content_encoding = "snappy";
  if (destination.protocol.load() == 2) {
    RemoteWriteBatch batch;
    for (const std::string& record : records) {
      if (!DecodeWriteRequestV1(record, &batch)) {
        Log(LogLevel::kWarn, "remote_write skips an unreadable queued batch", {{"url", destination.url}});
      }
    }
    body.body = SnappyCompress(EncodeRequestV2(batch));
    body.content_type = std::string(kRemoteWriteV2ContentType);
    body.headers.emplace_back(std::string(kVersionHeader), "2.0.0");
  } else {
    size_t size = 0;
    for (const std::string& record : records) size += record.size();
    std::string joined;
    joined.reserve(size);
    for (const std::string& record : records) joined.append(record);
    body.body = SnappyCompress(joined);
    body.content_type = std::string(kRemoteWriteV1ContentType);
    body.headers.emplace_back(std::string(kVersionHeader), "0.1.0");
  }
  if (!options_.bearer_token_file.empty()) {
    bool ok = false;
    const std::string token = TrimmedFile(options_.bearer_token_file, &ok);
    if (ok) {
      body.headers.emplace_back("Authorization", "Bearer " + token);
    } else {
      Log(LogLevel::kWarn, "remote_write cannot read the bearer token file",
          {{"file", options_.bearer_token_file}});
    }
  }
  return body;
}

bool RemoteWriteSink::Accept(Destination& destination, const HttpClientResponse& response) const {
  if (options_.protocol != RemoteWriteProtocol::kAuto || destination.protocol.load() != 2) return true;
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
  for (const std::string& record : records) Summarize(record, &samples, &timestamp_ms);
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
  };
  out.push_back(
      {"gpuscope_remote_write_samples_pending",
       MetricType::kGauge,
       "Queued samples a URL has not yet accepted, stale markers included (queued by this run or an "
       "earlier one).",
       "",
       {"sink", "url"},
       "remote_write sink"});
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
