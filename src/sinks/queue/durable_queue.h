// DurableQueue: the on-disk queue every push sink (Loki, OTLP) shares. Records are appended to
// segment files (segment-<seq>.log) in one directory, each record checksummed (record_format.h). The
// consumer reads batches with Peek() and confirms them with Ack(); the read position is persisted in a
// small checkpoint file written atomically (tmp + fsync + rename), so after a crash or restart delivery
// resumes at the first unacknowledged record: at-least-once, duplicates only from the last
// unacknowledged batch. Total size is bounded: when full, the oldest whole segment is dropped and its
// unacknowledged records are counted (reason="full"). A torn or corrupt record loses that record only:
// in the last segment the reader stops at the first bad record and the tail is cut off; in an older
// segment a bad record is skipped (reason="corrupt").
//
// Thread-safety: one producer thread (Append, Sync) and one consumer thread (Peek, Ack) may call at the
// same time; Metrics() is safe from any thread. All calls serialise on one internal mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/metric.h"
#include "src/core/status.h"

namespace gpuscope {

enum class QueueSyncPolicy {
  kNone,         // no fsync of records: fastest, a host crash may lose recent records
  kEveryAppend,  // fdatasync after every Append: an Append that returned Ok survives a crash
};

struct DurableQueueOptions {
  std::string directory;                    // created if missing
  uint64_t max_total_bytes = 256ull << 20;  // bound on all segment files together
  uint64_t segment_bytes = 16ull << 20;     // a segment is sealed once it would grow past this
  QueueSyncPolicy sync = QueueSyncPolicy::kEveryAppend;
  // Unix time in milliseconds; stamps records and measures the oldest record's age. System clock if empty.
  std::function<int64_t()> now_unix_ms;
};

struct QueueBatch {
  uint64_t id = 0;                   // pass to Ack(); 0 means an empty batch
  std::vector<std::string> records;  // payloads, oldest first
};

class DurableQueue {
 public:
  // Opens (or creates) the queue in options.directory, recovering segments and the checkpoint. On
  // failure (directory not writable, invalid options) returns a non-ok status and leaves *queue empty.
  static Status Open(DurableQueueOptions options, std::unique_ptr<DurableQueue>* queue);
  ~DurableQueue();
  DurableQueue(const DurableQueue&) = delete;
  DurableQueue& operator=(const DurableQueue&) = delete;

  // Appends one record, dropping the oldest segments first if the queue would exceed its bound. Ok once
  // written (and synced under kEveryAppend). InvalidArgument for a payload that can never fit;
  // Unavailable on an I/O error (nothing is appended then).
  Status Append(std::string_view payload);

  // Forces written records to disk. Unavailable on an I/O error.
  Status Sync();

  // Returns up to max_records records / about max_bytes payload bytes (at least one record when any is
  // pending) starting at the first unacknowledged record. Peeking again without Ack returns the same
  // records again under a new id. An empty batch (id 0) when nothing is pending. Unavailable on a read
  // error.
  Status Peek(size_t max_records, size_t max_bytes, QueueBatch* batch);

  // Marks everything up to the end of the batch as delivered and persists the position. NotFound for an
  // id that is not the latest Peek; Unavailable if the checkpoint could not be written (the position is
  // then still advanced in memory).
  Status Ack(uint64_t batch_id);

  // gpuscope_queue_records, _bytes, _oldest_age_seconds, _appended_total, _acked_total,
  // _dropped_total{reason="full|corrupt"}, each with a queue label naming this queue.
  std::vector<MetricFamily> Metrics(std::string_view queue_name) const;

  // Current counts, for callers and tests.
  uint64_t pending_records() const;
  uint64_t dropped_full() const;
  uint64_t dropped_corrupt() const;

  static std::vector<MetricDescription> Describe();

 private:
  struct RecordIndex {
    uint64_t offset;
    uint32_t length;
    int64_t append_time_ms;
  };
  struct Segment {
    uint64_t seq = 0;
    int fd = -1;
    uint64_t size = 0;
    std::vector<RecordIndex> records;
  };
  struct Cursor {
    uint64_t seq = 0;  // segment
    size_t index = 0;  // record within the segment
  };

  explicit DurableQueue(DurableQueueOptions options);
  Status Recover();
  Status OpenNewSegment(uint64_t seq);
  Status WriteCheckpoint();
  void Normalize();          // moves ack_ past fully read segments and deletes consumed ones
  void DropOldestSegment();  // drops segments_.front()
  void RemoveSegmentFile(Segment& segment);
  std::string SegmentPath(uint64_t seq) const;
  int64_t NowMs() const;
  uint64_t PendingLocked() const;

  DurableQueueOptions options_;
  mutable std::mutex mu_;
  std::deque<Segment> segments_;  // by seq; back() is the one written; guarded by mu_
  uint64_t total_bytes_ = 0;      // guarded by mu_
  Cursor ack_;                    // first unacknowledged record; guarded by mu_
  uint64_t last_batch_id_ = 0;    // guarded by mu_
  Cursor last_batch_end_;         // guarded by mu_
  uint64_t appended_total_ = 0;   // guarded by mu_
  uint64_t acked_total_ = 0;      // guarded by mu_
  uint64_t dropped_full_ = 0;     // guarded by mu_
  uint64_t dropped_corrupt_ = 0;  // guarded by mu_
};

}  // namespace gpuscope
