// SnapshotProducer: the start-up and interval loop the metrics push sinks (remote_write, OTLP metrics)
// share. OpenMetricsQueue opens a sink's own DurableQueue the way both want it; Start() runs a thread that,
// every interval, takes the SnapshotStore's current snapshot (skipping the empty one before the first
// collection) and hands it, stamped with the current time, to the sink's `produce` function, which
// encodes and queues it. A stall (suspend, overload) does not make up for missed intervals with a burst.
//
// Thread-safety: Start() and Stop() from one owning thread; NowMs() from any thread. `produce` runs on the
// producer's thread and may take the sink's locks (Stop() must not be called holding them).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/core/mutex.h"
#include "src/core/snapshot.h"
#include "src/core/status.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {

// Opens `directory` (created if missing) as a metrics sink's queue for `consumers`, bounded by
// `max_bytes` (segments of an eighth of it, between 64 KiB and 16 MiB), synced by the sink once per
// appended batch. Unavailable "<name> queue <directory>: ..." when the directory cannot be used.
Status OpenMetricsQueue(std::string_view name, const std::string& directory, uint64_t max_bytes,
                        std::vector<std::string> consumers, std::unique_ptr<DurableQueue>* queue);

class SnapshotProducer {
 public:
  struct Options {
    std::string name;  // the sink's, for logs
    std::chrono::milliseconds interval{15000};
    const SnapshotStore* snapshots = nullptr;  // outlives the producer
    std::function<int64_t()> now_unix_ms;      // the system clock if empty
    // Queues one snapshot; an error is logged (the sink counts it) and the loop goes on.
    std::function<Status(const Snapshot& snapshot, int64_t timestamp_ms)> produce;
  };

  explicit SnapshotProducer(Options options);
  ~SnapshotProducer();  // Stop()
  SnapshotProducer(const SnapshotProducer&) = delete;
  SnapshotProducer& operator=(const SnapshotProducer&) = delete;

  // Starts the thread; its first snapshot is taken one interval from now. Does nothing when running.
  void Start();
  // Wakes and joins the thread; a produce() in progress finishes first. Safe to call more than once.
  void Stop();
  // options.now_unix_ms(), or the system clock in milliseconds.
  int64_t NowMs() const;

 private:
  void Run();

  const Options options_;
  std::thread thread_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace gpuscope
