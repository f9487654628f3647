// RemoteWriteSink: the agent's metrics pushed by Prometheus remote_write (1.0, 2.0, or auto) to one or
// more endpoints (each with its own URL, protocol, headers, credentials and TLS), a PushSink
// (src/sinks/push_sink.h) created from the push sink registry.
//
// Every interval a producer thread takes the SnapshotStore's current snapshot (a shared pointer: no
// family is copied), turns it into one batch stamped with the current time (labels sorted, __name__
// and the external labels added, a stale marker for every series of the previous batch that is gone:
// a job ended, a GPU was lost; RemoteWriteBatcher, which keeps what does not change per series; the
// previous batch's series are kept in <queue>/remote_write/series, series_memory.h, rewritten when they
// change, so that after a restart a series that went while the agent was down is marked stale at once) and
// appends it, as a remote_write 2.0 record (remote_write_record.h), to its own DurableQueue
// (<queue>/remote_write; queue and thread are the SnapshotProducer shared with OTLP metrics,
// src/sinks/push/snapshot_producer.h). Each endpoint is a consumer of that queue read by a PushSender of its
// own (named remote_write_<i>): an outage or a restart loses nothing within the queue's disk bound (the
// oldest batches are dropped first, counted by the queue); 5xx, 429 and connection errors are retried with
// backoff and Retry-After, other 4xx dropped and counted; batches go out oldest first, so every
// series' samples arrive in time order. A 2.0 body is the queued records' symbols table and series
// joined, a 1.0 body each record's series with the strings in place of the refs (plain 1.0 records an
// older agent queued are sent as they are, or converted for 2.0); both snappy-compressed. With protocol auto
// a URL starts on 2.0 and falls back to 1.0 for good when it answers 415, or a 2xx without
// X-Prometheus-Remote-Write-Samples-Written (a 1.0 receiver reads a 2.0 body as an empty request and says
// 204).
//
// gpuscope_remote_write_samples_pending counts the samples of each endpoint's unacknowledged batches
// (SampleBacklog, fed by every queued batch and at start by those an earlier run left queued).
//
// Thread-safety: Start() and Stop() from one owning thread; Name(), Wake(), Metrics() and QueueSnapshot()
// from any thread (QueueSnapshot serialises with the producer thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/snapshot.h"
#include "src/core/status.h"
#include "src/sinks/push/push_sender.h"
#include "src/sinks/push/snapshot_producer.h"
#include "src/sinks/push_sink.h"
#include "src/sinks/queue/durable_queue.h"
#include "src/sinks/remote_write/remote_write_batcher.h"
#include "src/sinks/remote_write/remote_write_encode.h"
#include "src/sinks/remote_write/sample_backlog.h"
#include "src/sinks/remote_write/series_memory.h"

namespace gpuscope {

enum class RemoteWriteProtocol { kV1, kV2, kAuto };

// "1.0", "2.0", "auto"; nullopt-like false for anything else.
bool ParseRemoteWriteProtocol(std::string_view text, RemoteWriteProtocol* protocol);

// One receiver: where, with which credentials and TLS (its own: two backends may take different ones),
// and in which protocol.
struct RemoteWriteEndpoint : PushEndpoint {
  RemoteWriteProtocol protocol = RemoteWriteProtocol::kV1;
};

struct RemoteWriteOptions {
  std::vector<RemoteWriteEndpoint> endpoints;  // at least one; each a consumer of the queue
  std::chrono::milliseconds interval{15000};
  std::vector<std::pair<std::string, std::string>> external_labels;  // added where a series lacks them
  std::string queue_directory;                                       // created if missing
  uint64_t queue_max_bytes = 256ull << 20;
  const SnapshotStore* snapshots = nullptr;  // outlives the sink
  std::function<int64_t()> now_unix_ms;      // sample timestamps; the system clock if empty
  std::chrono::milliseconds min_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
};

class RemoteWriteSink final : public PushSink {
 public:
  explicit RemoteWriteSink(RemoteWriteOptions options);
  ~RemoteWriteSink() override;  // Stop()
  RemoteWriteSink(const RemoteWriteSink&) = delete;
  RemoteWriteSink& operator=(const RemoteWriteSink&) = delete;

  std::string_view Name() const override { return "remote_write"; }
  // Opens the queue and starts the senders and the producer. InvalidArgument for no endpoint, a bad URL,
  // an unreadable TLS, password or token file (naming the URL); Unavailable when the queue directory
  // cannot be used. Nothing runs then.
  Status Start() override;
  // Stops the producer, then the senders; what is queued stays queued for the next start.
  void Stop() override;
  void Wake() override;  // wakes the senders
  std::vector<MetricFamily> Metrics() const override;
  static std::vector<MetricDescription> Describe();

  // Queues one batch of `snapshot` stamped `timestamp_ms` now (the producer thread calls this every
  // interval). Unavailable before Start() or on a queue write error (the batch is lost and counted).
  Status QueueSnapshot(const Snapshot& snapshot, int64_t timestamp_ms);

 private:
  struct Destination;
  EncodedBody Encode(Destination& destination, const std::vector<std::string>& records) const;
  bool Accept(Destination& destination, const HttpClientResponse& response) const;
  void OnResult(Destination& destination, const std::vector<std::string>& records, BatchFate fate);
  // Writes the batcher's last queued series to series_memory_ when they changed since last written.
  void RememberQueuedSeries() REQUIRES(mu_);

  RemoteWriteOptions options_;
  SnapshotProducer producer_;  // calls QueueSnapshot every interval

  // Set by a successful Start(), under mu_: Metrics() may run (on the collector thread) while the sink
  // starts.
  mutable Mutex mu_;
  std::unique_ptr<DurableQueue> queue_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Destination>> destinations_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  // Snapshot -> record, with the series of the last queued record for stale markers.
  std::unique_ptr<RemoteWriteBatcher> batcher_ GUARDED_BY(mu_);
  std::string record_ GUARDED_BY(mu_);  // reused between intervals
  // <queue directory>/series: the batcher's last queued series across restarts, written when
  // batcher_->queued_series_changes() has moved past `remembered_changes_`.
  std::unique_ptr<SeriesMemory> series_memory_ GUARDED_BY(mu_);
  uint64_t remembered_changes_ GUARDED_BY(mu_) = 0;
  bool series_memory_failing_ GUARDED_BY(mu_) = false;  // logged once per run of failures
  SampleBacklog backlog_ GUARDED_BY(mu_);               // samples per queued record, for samples_pending
  uint64_t batches_queued_ GUARDED_BY(mu_) = 0;
  uint64_t samples_queued_ GUARDED_BY(mu_) = 0;
  uint64_t stale_markers_ GUARDED_BY(mu_) = 0;
  uint64_t queue_errors_ GUARDED_BY(mu_) = 0;
  int64_t highest_queued_ms_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscope
