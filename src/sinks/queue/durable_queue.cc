#include "src/sinks/queue/durable_queue.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/queue/record_format.h"

namespace gpuscope {
namespace {

constexpr std::string_view kSegmentPrefix = "segment-";
constexpr std::string_view kSegmentSuffix = ".log";
constexpr std::string_view kCheckpointPrefix = "checkpoint";  // checkpoint-<consumer>; bare: old format
constexpr std::string_view kCheckpointMagic = "GPSQCKP1";
constexpr size_t kCheckpointSize = 8 + 8 + 8 + 4;

std::string ErrnoText(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

bool WriteAll(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pread(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

void SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void PutU64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Parses "segment-<digits>.log"; false for any other name.
bool ParseSegmentName(const std::string& name, uint64_t* seq) {
  if (name.size() <= kSegmentPrefix.size() + kSegmentSuffix.size()) return false;
  if (name.compare(0, kSegmentPrefix.size(), kSegmentPrefix) != 0) return false;
  if (name.compare(name.size() - kSegmentSuffix.size(), kSegmentSuffix.size(), kSegmentSuffix) != 0) {
    return false;
  }
  std::string digits =
      name.substr(kSegmentPrefix.size(), name.size() - kSegmentPrefix.size() - kSegmentSuffix.size());
  if (digits.empty() || digits.size() > 20) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *seq = v;
  return true;
}

bool IsValidConsumerName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// A checkpoint is: magic | seq | byte offset of the first unacknowledged record | CRC32C of the 24 bytes.
struct CheckpointFile {
  enum State { kAbsent, kValid, kCorrupt } state = kAbsent;
  uint64_t seq = 0;
  uint64_t offset = 0;
};

CheckpointFile ReadCheckpoint(const std::string& path) {
  CheckpointFile ck;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ck;
  ck.state = CheckpointFile::kCorrupt;
  std::optional<std::string> bytes = ReadWholeFile(path);
  if (!bytes || bytes->size() != kCheckpointSize) return ck;
  const char* buf = bytes->data();
  if (std::string_view(buf, 8) != kCheckpointMagic) return ck;
  uint32_t stored = 0;
  for (int i = 3; i >= 0; --i) stored = (stored << 8) | static_cast<unsigned char>(buf[24 + i]);
  if (Crc32c(std::string_view(buf, 24)) != stored) return ck;
  ck.state = CheckpointFile::kValid;
  ck.seq = GetU64(buf + 8);
  ck.offset = GetU64(buf + 16);
  return ck;
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
  char name[64];
  std::snprintf(name, sizeof(name), "segment-%020llu.log", static_cast<unsigned long long>(seq));
  return options_.directory + "/" + name;
}

std::string DurableQueue::CheckpointPath(std::string_view consumer) const {
  return options_.directory + "/" + std::string(kCheckpointPrefix) + "-" + std::string(consumer);
}

int64_t DurableQueue::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status DurableQueue::Recover() {
  // Each configured consumer's checkpoint: absent (a new consumer), valid, or unreadable.
  std::vector<CheckpointFile> checkpoints;
  for (const std::string& name : options_.consumers) {
    const std::string path = CheckpointPath(name);
    checkpoints.push_back(ReadCheckpoint(path));
    if (checkpoints.back().state == CheckpointFile::kCorrupt) {
      Log(LogLevel::kWarn, "queue checkpoint unreadable; delivering from the oldest record",
          {{"path", path}, {"consumer", name}});
    }
  }
  std::vector<uint64_t> seqs;
  Status listed = ListSegmentsRemovingStaleCheckpoints(&seqs);
  if (!listed.ok()) return listed;

  // Segments before every known position were consumed before a crash interrupted their deletion. With
  // an unreadable checkpoint nothing is known to be consumed: keep everything (duplicates, never loss).
  bool any_valid = false;
  bool any_corrupt = false;
  uint64_t floor_seq = UINT64_MAX;
  uint64_t max_seq = seqs.empty() ? 0 : seqs.back();
  for (const CheckpointFile& ck : checkpoints) {
    if (ck.state == CheckpointFile::kCorrupt) any_corrupt = true;
    if (ck.state != CheckpointFile::kValid) continue;
    any_valid = true;
    floor_seq = std::min(floor_seq, ck.seq);
    max_seq = std::max(max_seq, ck.seq);
  }
  if (!any_valid || any_corrupt) floor_seq = 0;

  // Where the corrupt stretches of each loaded segment start, to count them per consumer below.
  std::vector<std::vector<uint64_t>> bad_offsets;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i] < floor_seq) {
      ::unlink(SegmentPath(seqs[i]).c_str());
      continue;
    }
    Status st = LoadSegment(seqs[i], /*last=*/i + 1 == seqs.size(), &bad_offsets.emplace_back());
    if (!st.ok()) return st;
  }
  if (segments_.empty()) {
    // Past every recorded position, so no checkpoint points into the new segment.
    Status st = OpenNewSegment(max_seq + 1);
    if (!st.ok()) return st;
    bad_offsets.emplace_back();
  }

  for (size_t c = 0; c < options_.consumers.size(); ++c) {
    const CheckpointFile& ck = checkpoints[c];
    std::optional<std::pair<uint64_t, uint64_t>> position;
    if (ck.state == CheckpointFile::kValid) position.emplace(ck.seq, ck.offset);
    consumers_.push_back(RestoreConsumer(options_.consumers[c], position, bad_offsets));
  }

  // Persist the position of consumers that had none, so a crash cannot let the others' checkpoints
  // delete segments this one still needs.
  for (size_t c = 0; c < consumers_.size(); ++c) {
    if (checkpoints[c].state == CheckpointFile::kValid) continue;
    Status st = WriteCheckpoint(consumers_[c]);
    if (!st.ok()) return st;
  }
  Normalize();
  return Status::Ok();
}

Status DurableQueue::ListSegmentsRemovingStaleCheckpoints(std::vector<uint64_t>* seqs) const {
  // Checkpoints of consumers no longer configured (plus the old single-consumer "checkpoint" and
  // leftover temporary files) are removed so they cannot pin segments.
  std::vector<std::string> stale_checkpoints;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.directory, ec)) {
    const std::string name = entry.path().filename().string();
    uint64_t seq = 0;
    if (ParseSegmentName(name, &seq)) {
      seqs->push_back(seq);
      continue;
    }
    if (name.rfind(kCheckpointPrefix, 0) != 0) continue;
    const std::string prefix = std::string(kCheckpointPrefix) + "-";
    const bool configured = name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                            std::find(options_.consumers.begin(), options_.consumers.end(),
                                      name.substr(prefix.size())) != options_.consumers.end();
    if (!configured) stale_checkpoints.push_back(entry.path().string());
  }
  if (ec)
    return Status::Unavailable("cannot list queue directory " + options_.directory + ": " + ec.message());
  std::sort(seqs->begin(), seqs->end());
  for (const std::string& path : stale_checkpoints) {
    Log(LogLevel::kInfo, "queue consumer no longer configured; its checkpoint removed", {{"path", path}});
    ::unlink(path.c_str());
  }
  return Status::Ok();
}

Status DurableQueue::LoadSegment(uint64_t seq, bool last, std::vector<uint64_t>* bad_offsets) {
  const std::string path = SegmentPath(seq);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable(ErrnoText("cannot open queue segment", path));
  struct stat stbuf;
  if (::fstat(fd, &stbuf) != 0) {
    ::close(fd);
    return Status::Unavailable(ErrnoText("cannot stat queue segment", path));
  }
  std::string bytes(static_cast<size_t>(stbuf.st_size), '\0');
  if (!bytes.empty() && !ReadAll(fd, bytes.data(), bytes.size(), 0)) {
    ::close(fd);
    return Status::Unavailable(ErrnoText("cannot read queue segment", path));
  }
  QueueScanResult scan =
      ScanQueueRecords(bytes, last ? QueueScanMode::kStopAtFirstBad : QueueScanMode::kSkipBad);
  Segment seg;
  seg.seq = seq;
  seg.fd = fd;
  seg.size = bytes.size();
  if (last && scan.valid_end < bytes.size()) {
    // Torn or corrupt tail of the segment being written: cut it so new appends follow valid records.
    if (::ftruncate(fd, static_cast<off_t>(scan.valid_end)) != 0) {
      ::close(fd);
      return Status::Unavailable(ErrnoText("cannot truncate queue segment", path));
    }
    seg.size = scan.valid_end;
    Log(LogLevel::kWarn, "queue segment had a torn or corrupt tail; cut", {{"path", path}});
  }
  // A bad stretch starts where the previous valid record ends (ScanQueueRecords counts it there).
  uint64_t prev_end = 0;
  seg.records.reserve(scan.records.size());
  for (const QueueRecordView& r : scan.records) {
    if (r.offset != prev_end) bad_offsets->push_back(prev_end);
    prev_end = r.offset + r.encoded_size();
    seg.records.push_back({r.offset, static_cast<uint32_t>(r.payload.size()), r.append_time_ms});
  }
  if (scan.stop_reason != QueueRecordStatus::kEnd) bad_offsets->push_back(scan.valid_end);
  total_bytes_ += seg.size;
  segments_.push_back(std::move(seg));
  return Status::Ok();
}

DurableQueue::Consumer DurableQueue::RestoreConsumer(
    const std::string& name, std::optional<std::pair<uint64_t, uint64_t>> checkpoint,
    const std::vector<std::vector<uint64_t>>& bad_offsets) const {
  // Its checkpoint, or the oldest retained record. A checkpoint before the first segment (dropped when
  // full) also means the oldest retained record.
  Consumer consumer;
  consumer.name = name;
  consumer.ack = {segments_.front().seq, 0};
  uint64_t ck_offset = 0;  // byte position of consumer.ack within its segment
  if (checkpoint && checkpoint->first >= segments_.front().seq) {
    const auto [ck_seq, offset] = *checkpoint;
    consumer.ack = {segments_.back().seq, segments_.back().records.size()};  // past every segment
    ck_offset = UINT64_MAX;
    for (const Segment& seg : segments_) {
      if (seg.seq < ck_seq) continue;
      ck_offset = seg.seq == ck_seq ? offset : 0;
      size_t index = 0;
      while (index < seg.records.size() && seg.records[index].offset < ck_offset) ++index;
      consumer.ack = {seg.seq, index};
      break;
    }
  }
  // Corrupt records this consumer had not yet passed are lost to it.
  for (size_t s = 0; s < segments_.size(); ++s) {
    if (segments_[s].seq < consumer.ack.seq) continue;
    for (uint64_t offset : bad_offsets[s]) {
      if (segments_[s].seq > consumer.ack.seq || offset >= ck_offset) ++consumer.dropped_corrupt;
    }
  }
  return consumer;
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
  char buf[kCheckpointSize];
  std::memcpy(buf, kCheckpointMagic.data(), 8);
  PutU64(consumer.ack.seq, buf + 8);
  PutU64(offset, buf + 16);
  uint32_t crc = Crc32c(std::string_view(buf, 24));
  for (int i = 0; i < 4; ++i) buf[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);

  AtomicWriteOptions write;
  write.sync = options_.sync != QueueSyncPolicy::kNone;
  write.sync_directory = write.sync;
  write.mode = 0600;
  Status status =
      WriteFileAtomically(CheckpointPath(consumer.name), std::string_view(buf, sizeof(buf)), write);
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
  if (!WriteAll(active.fd, encoded.data(), encoded.size(), active.size)) {
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
      if (r.length > 0 && !ReadAll(seg.fd, payload.data(), r.length, r.offset + kQueueRecordHeaderSize)) {
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
