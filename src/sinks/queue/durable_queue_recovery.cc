// DurableQueue's recovery on Open: reads each consumer's checkpoint, lists the segment files (removing
// the checkpoints of consumers no longer configured), deletes segments every consumer had passed before
// a crash, indexes the others (cutting a torn tail off the last one, counting corrupt stretches of the
// older ones) and puts each consumer back at its first unacknowledged record.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/queue/durable_queue.h"
#include "src/sinks/queue/queue_files.h"
#include "src/sinks/queue/record_format.h"

namespace gpuscope {
namespace {

// A consumer's checkpoint file as found on Open (record_format.h has its format).
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
  if (!bytes) return ck;
  std::optional<QueueCheckpoint> position = DecodeQueueCheckpoint(*bytes);
  if (!position) return ck;
  ck.state = CheckpointFile::kValid;
  ck.seq = position->seq;
  ck.offset = position->offset;
  return ck;
}

}  // namespace

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
    if (ParseQueueSegmentFileName(name, &seq)) {
      seqs->push_back(seq);
      continue;
    }
    if (!IsQueueCheckpointFileName(name)) continue;
    const bool configured = std::any_of(
        options_.consumers.begin(), options_.consumers.end(),
        [&name](const std::string& consumer) { return name == QueueCheckpointFileName(consumer); });
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
  if (!bytes.empty() && !ReadAllAt(fd, bytes.data(), bytes.size(), 0)) {
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

}  // namespace gpuscope
