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
#include <system_error>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/queue/record_format.h"

namespace gpuscope {
namespace {

constexpr std::string_view kSegmentPrefix = "segment-";
constexpr std::string_view kSegmentSuffix = ".log";
constexpr std::string_view kCheckpointName = "checkpoint";
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
  Status st = q->Recover();
  if (!st.ok()) return st;
  *queue = std::move(q);
  return Status::Ok();
}

std::string DurableQueue::SegmentPath(uint64_t seq) const {
  char name[64];
  std::snprintf(name, sizeof(name), "segment-%020llu.log", static_cast<unsigned long long>(seq));
  return options_.directory + "/" + name;
}

int64_t DurableQueue::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status DurableQueue::Recover() {
  // Checkpoint: magic | seq | byte offset of the first unacknowledged record | CRC32C of the 24 bytes.
  bool have_checkpoint = false;
  uint64_t ck_seq = 0;
  uint64_t ck_offset = 0;
  {
    const std::string path = options_.directory + "/" + std::string(kCheckpointName);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[kCheckpointSize];
      bool read_ok = ReadAll(fd, buf, sizeof(buf), 0);
      ::close(fd);
      if (read_ok && std::string_view(buf, 8) == kCheckpointMagic) {
        uint32_t stored = 0;
        for (int i = 3; i >= 0; --i) stored = (stored << 8) | static_cast<unsigned char>(buf[24 + i]);
        if (Crc32c(std::string_view(buf, 24)) == stored) {
          have_checkpoint = true;
          ck_seq = GetU64(buf + 8);
          ck_offset = GetU64(buf + 16);
        }
      }
      if (!have_checkpoint) {
        Log(LogLevel::kWarn, "queue checkpoint unreadable; delivering from the oldest record",
            {{"path", path}});
      }
    }
  }

  std::vector<uint64_t> seqs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.directory, ec)) {
    uint64_t seq = 0;
    if (ParseSegmentName(entry.path().filename().string(), &seq)) seqs.push_back(seq);
  }
  if (ec)
    return Status::Unavailable("cannot list queue directory " + options_.directory + ": " + ec.message());
  std::sort(seqs.begin(), seqs.end());

  for (size_t i = 0; i < seqs.size(); ++i) {
    const uint64_t seq = seqs[i];
    const std::string path = SegmentPath(seq);
    if (have_checkpoint && seq < ck_seq) {
      ::unlink(path.c_str());  // consumed before the crash; its deletion was interrupted
      continue;
    }
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
    const bool last = i + 1 == seqs.size();
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
    dropped_corrupt_ += scan.corrupt_records;
    seg.records.reserve(scan.records.size());
    for (const QueueRecordView& r : scan.records) {
      seg.records.push_back({r.offset, static_cast<uint32_t>(r.payload.size()), r.append_time_ms});
    }
    total_bytes_ += seg.size;
    segments_.push_back(std::move(seg));
  }

  if (segments_.empty()) {
    Status st = OpenNewSegment(have_checkpoint ? ck_seq + 1 : 1);
    if (!st.ok()) return st;
  }
  ack_ = {segments_.front().seq, 0};
  if (have_checkpoint && segments_.front().seq == ck_seq) {
    const auto& recs = segments_.front().records;
    size_t index = 0;
    while (index < recs.size() && recs[index].offset < ck_offset) ++index;
    ack_.index = index;
  }
  Normalize();
  return Status::Ok();
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

Status DurableQueue::WriteCheckpoint() {
  uint64_t offset = 0;
  for (const Segment& s : segments_) {
    if (s.seq != ack_.seq) continue;
    offset = ack_.index < s.records.size() ? s.records[ack_.index].offset : s.size;
  }
  char buf[kCheckpointSize];
  std::memcpy(buf, kCheckpointMagic.data(), 8);
  PutU64(ack_.seq, buf + 8);
  PutU64(offset, buf + 16);
  uint32_t crc = Crc32c(std::string_view(buf, 24));
  for (int i = 0; i < 4; ++i) buf[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);

  const std::string path = options_.directory + "/" + std::string(kCheckpointName);
  AtomicWriteOptions write;
  write.sync = options_.sync != QueueSyncPolicy::kNone;
  write.sync_directory = write.sync;
  write.mode = 0600;
  Status status = WriteFileAtomically(path, std::string_view(buf, sizeof(buf)), write);
  if (!status.ok()) return Status::Unavailable("cannot write queue checkpoint: " + status.message());
  return Status::Ok();
}

void DurableQueue::RemoveSegmentFile(Segment& segment) {
  if (segment.fd >= 0) ::close(segment.fd);
  segment.fd = -1;
  ::unlink(SegmentPath(segment.seq).c_str());
  total_bytes_ -= segment.size;
}

void DurableQueue::Normalize() {
  // Move past fully acknowledged sealed segments, persist the position, then delete every segment
  // before it (checkpoint first, so a crash in between leaves files Recover() knows are consumed).
  // Callers have already persisted ack_ unless Normalize() moves it.
  size_t i = 0;
  while (i < segments_.size() && segments_[i].seq < ack_.seq) ++i;
  bool moved = false;
  while (i + 1 < segments_.size() && segments_[i].seq == ack_.seq &&
         ack_.index >= segments_[i].records.size()) {
    ++i;
    ack_ = {segments_[i].seq, 0};
    moved = true;
  }
  if (moved && !WriteCheckpoint().ok()) {
    Log(LogLevel::kWarn, "queue checkpoint write failed", {{"directory", options_.directory}});
  }
  while (!segments_.empty() && segments_.front().seq < ack_.seq) {
    RemoveSegmentFile(segments_.front());
    segments_.pop_front();
  }
}

void DurableQueue::DropOldestSegment() {
  Segment& front = segments_.front();
  const size_t acked = front.seq == ack_.seq ? std::min(ack_.index, front.records.size()) : 0;
  dropped_full_ += front.records.size() - acked;
  if (front.records.size() > acked) {
    Log(LogLevel::kWarn, "queue full; dropped the oldest segment", {{"directory", options_.directory}});
  }
  ack_ = {segments_[1].seq, 0};
  if (!WriteCheckpoint().ok()) {
    Log(LogLevel::kWarn, "queue checkpoint write failed", {{"directory", options_.directory}});
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

  std::lock_guard<std::mutex> lock(mu_);
  auto roll = [&]() -> Status {
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
  std::lock_guard<std::mutex> lock(mu_);
  const Segment& active = segments_.back();
  if (::fdatasync(active.fd) != 0) {
    return Status::Unavailable(ErrnoText("cannot sync queue segment", SegmentPath(active.seq)));
  }
  return Status::Ok();
}

Status DurableQueue::Peek(size_t max_records, size_t max_bytes, QueueBatch* batch) {
  batch->id = 0;
  batch->records.clear();
  std::lock_guard<std::mutex> lock(mu_);
  Cursor cursor = ack_;
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
  batch->id = ++last_batch_id_;
  last_batch_end_ = cursor;
  return Status::Ok();
}

Status DurableQueue::Ack(uint64_t batch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (batch_id == 0 || batch_id != last_batch_id_) {
    return Status::NotFound("queue batch " + std::to_string(batch_id) + " is not the latest");
  }
  const Cursor end = last_batch_end_;
  if (end.seq < ack_.seq || (end.seq == ack_.seq && end.index <= ack_.index)) {
    return Status::Ok();  // already acknowledged, or its records were dropped meanwhile
  }
  for (const Segment& seg : segments_) {
    if (seg.seq < ack_.seq || seg.seq > end.seq) continue;
    const size_t from = seg.seq == ack_.seq ? ack_.index : 0;
    const size_t to = seg.seq == end.seq ? end.index : seg.records.size();
    if (to > from) acked_total_ += to - from;
  }
  ack_ = end;
  Status st = WriteCheckpoint();
  Normalize();
  return st;
}

uint64_t DurableQueue::PendingLocked() const {
  uint64_t n = 0;
  for (const Segment& seg : segments_) {
    if (seg.seq < ack_.seq) continue;
    const size_t from = seg.seq == ack_.seq ? std::min(ack_.index, seg.records.size()) : 0;
    n += seg.records.size() - from;
  }
  return n;
}

uint64_t DurableQueue::pending_records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PendingLocked();
}
uint64_t DurableQueue::dropped_full() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_full_;
}
uint64_t DurableQueue::dropped_corrupt() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_corrupt_;
}

std::vector<MetricDescription> DurableQueue::Describe() {
  return {
      {"gpuscope_queue_records",
       MetricType::kGauge,
       "Records in the durable queue not yet acknowledged.",
       "",
       {"queue"},
       "durable queue index"},
      {"gpuscope_queue_bytes",
       MetricType::kGauge,
       "Bytes of the durable queue's segment files on disk.",
       "bytes",
       {"queue"},
       "durable queue segment sizes"},
      {"gpuscope_queue_oldest_age_seconds",
       MetricType::kGauge,
       "Age of the oldest unacknowledged record; 0 when the queue is empty.",
       "seconds",
       {"queue"},
       "record append time"},
      {"gpuscope_queue_appended_total",
       MetricType::kCounter,
       "Records appended to the durable queue.",
       "",
       {"queue"},
       "durable queue"},
      {"gpuscope_queue_acked_total",
       MetricType::kCounter,
       "Records acknowledged as delivered.",
       "",
       {"queue"},
       "durable queue"},
      {"gpuscope_queue_dropped_total",
       MetricType::kCounter,
       "Records lost: reason=full (oldest dropped to stay bounded) or corrupt (bad checksum, torn write).",
       "",
       {"queue", "reason"},
       "durable queue"},
  };
}

std::vector<MetricFamily> DurableQueue::Metrics(std::string_view queue_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name(queue_name);
  double oldest_age = 0;
  for (const Segment& seg : segments_) {
    if (seg.seq < ack_.seq) continue;
    const size_t from = seg.seq == ack_.seq ? ack_.index : 0;
    if (from < seg.records.size()) {
      oldest_age = std::max(0.0, static_cast<double>(NowMs() - seg.records[from].append_time_ms) / 1000.0);
      break;
    }
  }
  auto gauge = [&](std::string metric, std::string help, std::string unit, MetricType type, double v) {
    MetricFamily f;
    f.name = std::move(metric);
    f.help = std::move(help);
    f.type = type;
    f.unit = std::move(unit);
    f.samples.push_back({{{"queue", name}}, v});
    return f;
  };
  std::vector<MetricFamily> out;
  const auto desc = Describe();
  out.push_back(
      gauge(desc[0].name, desc[0].help, desc[0].unit, desc[0].type, static_cast<double>(PendingLocked())));
  out.push_back(
      gauge(desc[1].name, desc[1].help, desc[1].unit, desc[1].type, static_cast<double>(total_bytes_)));
  out.push_back(gauge(desc[2].name, desc[2].help, desc[2].unit, desc[2].type, oldest_age));
  out.push_back(
      gauge(desc[3].name, desc[3].help, desc[3].unit, desc[3].type, static_cast<double>(appended_total_)));
  out.push_back(
      gauge(desc[4].name, desc[4].help, desc[4].unit, desc[4].type, static_cast<double>(acked_total_)));
  MetricFamily dropped = gauge(desc[5].name, desc[5].help, desc[5].unit, desc[5].type, 0);
  dropped.samples.clear();
  dropped.samples.push_back({{{"queue", name}, {"reason", "full"}}, static_cast<double>(dropped_full_)});
  dropped.samples.push_back(
      {{{"queue", name}, {"reason", "corrupt"}}, static_cast<double>(dropped_corrupt_)});
  out.push_back(std::move(dropped));
  return out;
}

}  // namespace gpuscope
