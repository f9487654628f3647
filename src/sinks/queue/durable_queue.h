// DurableQueue: the on-disk queue every push sink (Loki, OTLP) shares. Records are appended once to
// segment files (segment-<seq>.log) in one directory, each record checksummed (record_format.h), and
// read by several named consumers (one per sink), each at its own pace: a consumer reads batches with
// Peek(name) and confirms them with Ack(name); its read position is persisted in its own small checkpoint
// file (checkpoint-<name>, written atomically through src/platform/file.h), so after a crash or restart
// each consumer resumes at its first unacknowledged record: at-least-once, duplicates only from its last
// unacknowledged batch. A segment is deleted once every consumer has passed it, so the slowest consumer
// pins the disk. Total size is bounded: when full, the oldest whole segment is dropped and each consumer
// counts the records of it that it had not yet acknowledged (reason="full"). A consumer added to an
// existing directory starts at the oldest retained record; the checkpoint of a consumer no longer
// configured is removed on Open, so it cannot pin segments forever. A torn or corrupt record loses that
// record only: in the last segment the reader stops at the first bad record and the tail is cut off; in
// an older segment a bad record is skipped (reason="corrupt", counted by the consumers that had not yet
// passed it).
//
// Thread-safety: one producer thread (Append, Sync) plus one thread per consumer (Peek, Ack for that
// consumer) may call at the same time; Metrics() and the counters are safe from any thread. All calls
// serialise on one internal mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
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
  // Names of the consumers reading this queue (one per sink, e.g. "loki", "otlp"): [a-z0-9_]+, at
  // least one, no duplicates; Open fails with InvalidArgument otherwise.
  std::vector<std::string> consumers;
};

struct QueueBatch {
  uint64_t id = 0;                   // pass to Ack(); 0 means an empty batch
  std::vector<std::string> records;  // payloads, oldest first
};

class DurableQueue {
 public:
  // Opens (or creates) the queue in options.directory, recovering segments and each consumer's
  // checkpoint; removes the checkpoints of consumers not in options.consumers. On failure (directory not
  // writable, invalid options or consumer names) returns a non-ok status and leaves *queue empty.
  static Status Open(DurableQueueOptions options, std::unique_ptr<DurableQueue>* queue);
  ~DurableQueue();
  DurableQueue(const DurableQueue&) = delete;
  DurableQueue& operator=(const DurableQueue&) = delete;

  // Appends one record for every consumer, dropping the oldest segments first if the queue would
  // exceed its bound. Ok once written (and synced under kEveryAppend). InvalidArgument for a payload
  // that can never fit; Unavailable on an I/O error (nothing is appended then).
  Status Append(std::string_view payload);

  // Forces written records to disk. Unavailable on an I/O error.
  Status Sync();

  // Returns to `consumer` up to max_records records / about max_bytes payload bytes (at least one
  // record when any is pending) starting at its first unacknowledged record. Peeking again without Ack
  // returns the same records again under a new id. An empty batch (id 0) when nothing is pending.
  // NotFound for an unknown consumer; Unavailable on a read error.
  Status Peek(std::string_view consumer, size_t max_records, size_t max_bytes, QueueBatch* batch);

  // Marks everything up to the end of the batch as delivered to `consumer` and persists its position.
  // NotFound for an unknown consumer or an id that is not that consumer's latest Peek; Unavailable if
  // the checkpoint could not be written (the position is then still advanced in memory).
  Status Ack(std::string_view consumer, uint64_t batch_id);

  // Calls `visit` with each record `consumer` has not acknowledged, oldest first, one at a time (a sink
  // summarising its backlog at start; the queue's lock is held meanwhile, so `visit` must not call the
  // queue). What Peek returns next is unchanged. NotFound for an unknown consumer; Unavailable on a read
  // error (after the records visited so far).
  Status ForEachPending(std::string_view consumer, const std::function<void(std::string_view)>& visit) const;

  // Per queue (label queue): gpuscope_queue_bytes, gpuscope_queue_appended_total. Per consumer (labels
  // queue, consumer): gpuscope_queue_records, _oldest_age_seconds, _acked_total,
  // _dropped_total{reason="full|corrupt"}.
  std::vector<MetricFamily> Metrics(std::string_view queue_name) const;

  // Whether `consumer` is one of options.consumers.
  bool HasConsumer(std::string_view consumer) const;
  // Current counts for one consumer, for callers and tests; 0 for an unknown consumer.
  uint64_t pending_records(std::string_view consumer) const;
  uint64_t dropped_full(std::string_view consumer) const;
  uint64_t dropped_corrupt(std::string_view consumer) const;

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
  struct Consumer {
    std::string name;
    Cursor ack;                  // first unacknowledged record
    uint64_t last_batch_id = 0;  // its latest Peek; 0 when none
    Cursor last_batch_end;       // where that batch ends
    uint64_t acked_total = 0;
    uint64_t dropped_full = 0;
    uint64_t dropped_corrupt = 0;
  };

  explicit DurableQueue(DurableQueueOptions options);
  Status Recover() REQUIRES(mu_);
  // The segment numbers in the directory, sorted; removes checkpoints of consumers not configured.
  Status ListSegmentsRemovingStaleCheckpoints(std::vector<uint64_t>* seqs) const;
  // Opens and indexes one segment into segments_ (the last one's torn tail cut); `bad_offsets` gets
  // where its corrupt stretches start.
  Status LoadSegment(uint64_t seq, bool last, std::vector<uint64_t>* bad_offsets) REQUIRES(mu_);
  // A consumer's cursor from its checkpoint (segment, byte offset), when it has a valid one, with the
  // corrupt records it had not passed counted as dropped.
  Consumer RestoreConsumer(const std::string& name, std::optional<std::pair<uint64_t, uint64_t>> checkpoint,
                           const std::vector<std::vector<uint64_t>>& bad_offsets) const REQUIRES(mu_);
  Status OpenNewSegment(uint64_t seq) REQUIRES(mu_);
  Status WriteCheckpoint(const Consumer& consumer) REQUIRES(mu_);
  void Normalize() REQUIRES(mu_);  // moves cursors past fully read sealed segments, deletes passed ones
  void DropOldestSegment() REQUIRES(mu_);  // drops segments_.front()
  void RemoveSegmentFile(Segment& segment) REQUIRES(mu_);
  std::string SegmentPath(uint64_t seq) const;
  std::string CheckpointPath(std::string_view consumer) const;
  int64_t NowMs() const;
  Consumer* FindLocked(std::string_view consumer) REQUIRES(mu_);
  const Consumer* FindLocked(std::string_view consumer) const REQUIRES(mu_);
  uint64_t PendingLocked(const Consumer& consumer) const REQUIRES(mu_);

  DurableQueueOptions options_;
  mutable Mutex mu_;
  std::deque<Segment> segments_ GUARDED_BY(mu_);     // by seq; back() is the one written
  std::vector<Consumer> consumers_ GUARDED_BY(mu_);  // in options_.consumers order
  uint64_t total_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t next_batch_id_ GUARDED_BY(mu_) = 0;  // ids are unique across consumers
  uint64_t appended_total_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscope
