// DurableQueue's API: Open, Append, Peek, Ack, the retention of segments (Normalize, dropping the
// oldest when full) and the metrics. Recovery of the directory on Open is in durable_queue_recovery.cc,
// the file names and positional I/O in queue_files.cc, the record and checkpoint formats in
// record_format.cc.
#include "src/sinks/queue/durable_queue.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/queue/queue_files.h"
#include "src/sinks/queue/record_format.h"

namespace gpuscope {
namespace {

bool IsValidConsumerName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

DurableQueue::DurableQueue(DurableQueueOptions options) : options_(std::move(options)) {}

DurableQueue::~DurableQueue() {
  for (Segment& s : segments_) {
    if (s.fd >= 0) ::close(s.fd);
  }
}

Status DurableQueue::Open(DurableQueueOptions options, std::unique_ptr<DurableQueue>* queue) {
  queue->reset();
  if (options.directory.empty()) return Status::InvalidArgument("queue directory is empty");
  if (options.consumers.empty()) return Status::InvalidArgument("queue has no consumers");
  for (size_t i = 0; i < options.consumers.size(); ++i) {
    const std::string& name = options.consumers[i];
    if (!IsValidConsumerName(name)) {
      return Status::InvalidArgument("queue consumer name \"" + name + "\" is not [a-z0-9_]+");
    }
    for (size_t j = 0; j < i; ++j) {
      if (options.consumers[j] == name) return Status::InvalidArgument("queue consumer " + name + " twice");
    }
  }
  if (options.max_total_bytes < 2 * kQueueRecordHeaderSize) {
    return Status::InvalidArgument("queue max_total_bytes is too small");
  }
  if (options.segment_bytes == 0 || options.segment_bytes > options.max_total_bytes) {
    options.segment_bytes = std::max<uint64_t>(options.max_total_bytes / 8, kQueueRecordHeaderSize);
  }
  std::error_code ec;
  std::filesystem::create_directories(options.directory, ec);
  if (ec)
    return Status::Unavailable("cannot create queue directory " + options.directory + ": " + ec.message());
  std::unique_ptr<DurableQueue> q(new DurableQueue(std::move(options)));
  {
    MutexLock lock(&q->mu_);
    Status st = q->Recover();
    if (!st.ok()) return st;
  }
  *queue = std::move(q);
  return Status::Ok();
}

std::string DurableQueue::SegmentPath(uint64_t seq) const {
  return options_.directory + "/" + QueueSegmentFileName(seq);
}

std::string DurableQueue::CheckpointPath(std::string_view consumer) const {
  return options_.directory + "/" + QueueCheckpointFileName(consumer);
}

int64_t DurableQueue::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status DurableQueue::OpenNewSegment(uint64_t seq) {
  const std::string path = SegmentPath(seq);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(ErrnoText("cannot create queue segment", path));
  if (options_.sync != QueueSyncPolicy::kNone) SyncDirectory(options_.directory);
  Segment seg;
  seg.seq = seq;
  seg.fd = fd;
  segments_.push_back(std::move(seg));
  return Status::Ok();
}

Status DurableQueue::WriteCheckpoint(const Consumer& consumer) {
  uint64_t offset = 0;
  for (const Segment& s : segments_) {
    if (s.seq != consumer.ack.seq) continue;
    offset = consumer.ack.index < s.records.size() ? s.records[consumer.ack.index].offset : s.size;
  }
  AtomicWriteOptions write;
  write.sync = options_.sync != QueueSyncPolicy::kNone;
  write.sync_directory = write.sync;
  write.mode = 0600;
  Status status = WriteFileAtomically(CheckpointPath(consumer.name),
                                      EncodeQueueCheckpoint({consumer.ack.seq, offset}), write);
  if (!status.ok()) {
    return Status::Unavailable("cannot write queue checkpoint of " + consumer.name + ": " + status.message());
  }
  return Status::Ok();
}

void DurableQueue::RemoveSegmentFile(Segment& segment) {
  if (segment.fd >= 0) ::close(segment.fd);
  segment.fd = -1;
  ::unlink(SegmentPath(segment.seq).c_str());
  total_bytes_ -= segment.size;
}

void DurableQueue::Normalize() {
  // Move each consumer past the sealed segments it has fully acknowledged and persist that position,
  // then delete every segment all consumers have passed (checkpoints first, so a crash in between
  // leaves files Recover() knows are consumed). Callers have already persisted each position unless
  // Normalize() moves it.
  uint64_t min_seq = UINT64_MAX;
  for (Consumer& consumer : consumers_) {
    size_t i = 0;
    while (i < segments_.size() && segments_[i].seq < consumer.ack.seq) ++i;
    bool moved = false;
    while (i + 1 < segments_.size() && segments_[i].seq == consumer.ack.seq &&
           consumer.ack.index >= segments_[i].records.size()) {
      ++i;
      consumer.ack = {segments_[i].seq, 0};
      moved = true;
    }
    if (moved && !WriteCheckpoint(consumer).ok()) {
      Log(LogLevel::kWarn, "queue checkpoint write failed",
          {{"directory", options_.directory}, {"consumer", consumer.name}});
    }
    min_seq = std::min(min_seq, consumer.ack.seq);
  }
  while (segments_.size() > 1 && segments_.front().seq < min_seq) {
    RemoveSegmentFile(segments_.front());
    segments_.pop_front();
  }
}

void DurableQueue::DropOldestSegment() {
  // Only called with at least two segments. Consumers still reading the front segment lose what they
  // had not acknowledged of it and move to the next one; consumers past it lose nothing.
  Segment& front = segments_.front();
  for (Consumer& consumer : consumers_) {
    if (consumer.ack.seq != front.seq) continue;
    const size_t acked = std::min(consumer.ack.index, front.records.size());
    const uint64_t lost = front.records.size() - acked;
    consumer.dropped_full += lost;
    if (lost > 0) {
      Log(LogLevel::kWarn, "queue full; dropped the oldest segment",
          {{"directory", options_.directory},
           {"consumer", consumer.name},
           {"records", std::to_string(lost)}});
    }
    consumer.ack = {segments_[1].seq, 0};
    if (!WriteCheckpoint(consumer).ok()) {
      Log(LogLevel::kWarn, "queue checkpoint write failed",
          {{"directory", options_.directory}, {"consumer", consumer.name}});
    }
  }
  RemoveSegmentFile(front);
  segments_.pop_front();
}

Status DurableQueue::Append(std::string_view payload) {
  const uint64_t encoded_size = kQueueRecordHeaderSize + payload.size();
  if (payload.size() > kQueueMaxRecordPayload || encoded_size > options_.max_total_bytes) {
    return Status::InvalidArgument("queue record of " + std::to_string(payload.size()) +
                                   " bytes can never fit");
  }
  std::string encoded;
  encoded.reserve(encoded_size);
  const int64_t now = NowMs();
  EncodeQueueRecord(payload, now, &encoded);

  MutexLock lock(&mu_);
  auto roll = [&]() -> Status {
    mu_.AssertHeld();  // runs only below, under the lock
    Segment& active = segments_.back();
    if (options_.sync != QueueSyncPolicy::kNone && ::fdatasync(active.fd) != 0) {
      return Status::Unavailable(ErrnoText("cannot sync queue segment", SegmentPath(active.seq)));
    }
    return OpenNewSegment(active.seq + 1);
  };
  if (segments_.back().size > 0 && segments_.back().size + encoded_size > options_.segment_bytes) {
    Status st = roll();
    if (!st.ok()) return st;
  }
  while (total_bytes_ + encoded_size > options_.max_total_bytes) {
    if (segments_.size() > 1) {
      DropOldestSegment();
    } else {
      Status st = roll();  // only the active segment is left and it is too full: seal it, then drop it
      if (!st.ok()) return st;
    }
  }

  Segment& active = segments_.back();
  if (!WriteAllAt(active.fd, encoded.data(), encoded.size(), active.size)) {
    Status st = Status::Unavailable(ErrnoText("cannot write queue segment", SegmentPath(active.seq)));
    if (::ftruncate(active.fd, static_cast<off_t>(active.size)) != 0) {
      Log(LogLevel::kWarn, "cannot cut a failed queue write", {{"directory", options_.directory}});
    }
    return st;
  }
  if (options_.sync == QueueSyncPolicy::kEveryAppend && ::fdatasync(active.fd) != 0) {
    Status st = Status::Unavailable(ErrnoText("cannot sync queue segment", SegmentPath(active.seq)));
    if (::ftruncate(active.fd, static_cast<off_t>(active.size)) != 0) {
      Log(LogLevel::kWarn, "cannot cut a failed queue write", {{"directory", options_.directory}});
    }
    return st;
  }
  active.records.push_back({active.size, static_cast<uint32_t>(payload.size()), now});
  active.size += encoded_size;
  total_bytes_ += encoded_size;
  ++appended_total_;
  return Status::Ok();
}

Status DurableQueue::Sync() {
  MutexLock lock(&mu_);
  const Segment& active = segments_.back();
  if (::fdatasync(active.fd) != 0) {
    return Status::Unavailable(ErrnoText("cannot sync queue segment", SegmentPath(active.seq)));
  }
  return Status::Ok();
}

DurableQueue::Consumer* DurableQueue::FindLocked(std::string_view consumer) {
  for (Consumer& c : consumers_) {
    if (c.name == consumer) return &c;
  }
  return nullptr;
}

const DurableQueue::Consumer* DurableQueue::FindLocked(std::string_view consumer) const {
  for (const Consumer& c : consumers_) {
    if (c.name == consumer) return &c;
  }
  return nullptr;
}

Status DurableQueue::Peek(std::string_view consumer_name, size_t max_records, size_t max_bytes,
                          QueueBatch* batch) {
  batch->id = 0;
  batch->records.clear();
  MutexLock lock(&mu_);
  Consumer* consumer = FindLocked(consumer_name);
  if (consumer == nullptr) {
    return Status::NotFound("queue has no consumer " + std::string(consumer_name));
  }
  Cursor cursor = consumer->ack;
  size_t bytes = 0;
  for (const Segment& seg : segments_) {
    if (seg.seq < cursor.seq) continue;
    if (seg.seq > cursor.seq) cursor = {seg.seq, 0};
    while (cursor.index < seg.records.size() && batch->records.size() < max_records) {
      const RecordIndex& r = seg.records[cursor.index];
      if (!batch->records.empty() && bytes + r.length > max_bytes) break;
      std::string payload(r.length, '\0');
      if (r.length > 0 && !ReadAllAt(seg.fd, payload.data(), r.length, r.offset + kQueueRecordHeaderSize)) {
        batch->records.clear();
        return Status::Unavailable(ErrnoText("cannot read queue segment", SegmentPath(seg.seq)));
      }
      bytes += r.length;
      batch->records.push_back(std::move(payload));
      ++cursor.index;
    }
    if (cursor.index < seg.records.size()) break;  // the batch is full
  }
  if (batch->records.empty()) return Status::Ok();
  batch->id = ++next_batch_id_;
  consumer->last_batch_id = batch->id;
  consumer->last_batch_end = cursor;
  return Status::Ok();
}

Status DurableQueue::Ack(std::string_view consumer_name, uint64_t batch_id) {
  MutexLock lock(&mu_);
  Consumer* consumer = FindLocked(consumer_name);
  if (consumer == nullptr) {
    return Status::NotFound("queue has no consumer " + std::string(consumer_name));
  }
  if (batch_id == 0 || batch_id != consumer->last_batch_id) {
    return Status::NotFound("queue batch " + std::to_string(batch_id) + " is not the latest of " +
                            consumer->name);
  }
  const Cursor end = consumer->last_batch_end;
  Cursor& ack = consumer->ack;
  if (end.seq < ack.seq || (end.seq == ack.seq && end.index <= ack.index)) {
    return Status::Ok();  // already acknowledged, or its records were dropped meanwhile
  }
  for (const Segment& seg : segments_) {
    if (seg.seq < ack.seq || seg.seq > end.seq) continue;
    const size_t from = seg.seq == ack.seq ? ack.index : 0;
    const size_t to = seg.seq == end.seq ? end.index : seg.records.size();
    if (to > from) consumer->acked_total += to - from;
  }
  ack = end;
  Status st = WriteCheckpoint(*consumer);
  Normalize();
  return st;
}

Status DurableQueue::ForEachPending(std::string_view consumer_name,
                                    const std::function<void(std::string_view)>& visit) const {
  MutexLock lock(&mu_);
  const Consumer* consumer = FindLocked(consumer_name);
  if (consumer == nullptr) {
    return Status::NotFound("queue has no consumer " + std::string(consumer_name));
  }
  std::string payload;
  for (const Segment& seg : segments_) {
    if (seg.seq < consumer->ack.seq) continue;
    const size_t from = seg.seq == consumer->ack.seq ? consumer->ack.index : 0;
    for (size_t i = from; i < seg.records.size(); ++i) {
      const RecordIndex& r = seg.records[i];
      payload.resize(r.length);
      if (r.length > 0 && !ReadAllAt(seg.fd, payload.data(), r.length, r.offset + kQueueRecordHeaderSize)) {
        return Status::Unavailable(ErrnoText("cannot read queue segment", SegmentPath(seg.seq)));
      }
      visit(payload);
    }
  }
  return Status::Ok();
}

uint64_t DurableQueue::PendingLocked(const Consumer& consumer) const {
  uint64_t n = 0;
  for (const Segment& seg : segments_) {
    if (seg.seq < consumer.ack.seq) continue;
    const size_t from = seg.seq == consumer.ack.seq ? std::min(consumer.ack.index, seg.records.size()) : 0;
    n += seg.records.size() - from;
  }
  return n;
}

bool DurableQueue::HasConsumer(std::string_view consumer) const {
  MutexLock lock(&mu_);
  return FindLocked(consumer) != nullptr;
}
uint64_t DurableQueue::pending_records(std::string_view consumer) const {
  MutexLock lock(&mu_);
  const Consumer* c = FindLocked(consumer);
  return c != nullptr ? PendingLocked(*c) : 0;
}
uint64_t DurableQueue::dropped_full(std::string_view consumer) const {
  MutexLock lock(&mu_);
  const Consumer* c = FindLocked(consumer);
  return c != nullptr ? c->dropped_full : 0;
}
uint64_t DurableQueue::dropped_corrupt(std::string_view consumer) const {
  MutexLock lock(&mu_);
  const Consumer* c = FindLocked(consumer);
  return c != nullptr ? c->dropped_corrupt : 0;
}

std::vector<MetricDescription> DurableQueue::Describe() {
  return {
      {"gpuscope_queue_records",
       MetricType::kGauge,
       "Records in the durable queue the consumer has not yet acknowledged.",
       "",
       {"queue", "consumer"},
       "durable queue index"},
      {"gpuscope_queue_bytes",
       MetricType::kGauge,
       "Bytes of the durable queue's segment files on disk.",
       "bytes",
       {"queue"},
       "durable queue segment sizes"},
      {"gpuscope_queue_oldest_age_seconds",
       MetricType::kGauge,
       "Age of the consumer's oldest unacknowledged record; 0 when it has none.",
       "seconds",
       {"queue", "consumer"},
       "record append time"},
      {"gpuscope_queue_appended_total",
       MetricType::kCounter,
       "Records appended to the durable queue.",
       "",
       {"queue"},
       "durable queue"},
      {"gpuscope_queue_acked_total",
       MetricType::kCounter,
       "Records the consumer acknowledged as delivered.",
       "",
       {"queue", "consumer"},
       "durable queue"},
      {"gpuscope_queue_dropped_total",
       MetricType::kCounter,
       "Records lost to the consumer: reason=full (oldest dropped to stay bounded) or corrupt (bad "
       "checksum, torn write).",
       "",
       {"queue", "consumer", "reason"},
       "durable queue"},
  };
}

std::vector<MetricFamily> DurableQueue::Metrics(std::string_view queue_name) const {
  MutexLock lock(&mu_);
  const std::string name(queue_name);
  const int64_t now = NowMs();
  const auto desc = Describe();
  std::vector<MetricFamily> out;
  for (const MetricDescription& d : desc) {
    MetricFamily f;
    f.name = d.name;
    f.help = d.help;
    f.type = d.type;
    f.unit = d.unit;
    out.push_back(std::move(f));
  }
  out[1].samples.push_back({{{"queue", name}}, static_cast<double>(total_bytes_)});
  out[3].samples.push_back({{{"queue", name}}, static_cast<double>(appended_total_)});
  for (const Consumer& c : consumers_) {
    double oldest_age = 0;
    for (const Segment& seg : segments_) {
      if (seg.seq < c.ack.seq) continue;
      const size_t from = seg.seq == c.ack.seq ? c.ack.index : 0;
      if (from < seg.records.size()) {
        oldest_age = std::max(0.0, static_cast<double>(now - seg.records[from].append_time_ms) / 1000.0);
        break;
      }
    }
    const Labels labels = {{"queue", name}, {"consumer", c.name}};
    out[0].samples.push_back({labels, static_cast<double>(PendingLocked(c))});
    out[2].samples.push_back({labels, oldest_age});
    out[4].samples.push_back({labels, static_cast<double>(c.acked_total)});
    out[5].samples.push_back(
        {{{"queue", name}, {"consumer", c.name}, {"reason", "full"}}, static_cast<double>(c.dropped_full)});
    out[5].samples.push_back({{{"queue", name}, {"consumer", c.name}, {"reason", "corrupt"}},
                              static_cast<double>(c.dropped_corrupt)});
  }
  return out;
}

}  // namespace gpuscope
