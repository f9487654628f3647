// Scheduler: runs each collector on its own interval in its own thread, off the request path, and
// publishes each cycle's families to the SnapshotStore. It, not the collectors, emits the self-metrics
// gpuscope_collector_duration_seconds / _success / _last_success_timestamp_seconds / _runs_total{collector}
// and answers health: unhealthy when a collector reports its source gone (Collector::Healthy() false) or
// has not completed a cycle for max(3 intervals, stall_floor); ready once every collector ran once.
//
// Thread-safety: Add() and SetAfterCycle() before Start() only. Start(), Stop(), Health(), WaitUntilReady()
// and RunOnce() may be called from any thread. A slow collector delays only its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/core/collector.h"
#include "src/core/health.h"
#include "src/core/mutex.h"
#include "src/core/snapshot.h"

namespace gpuscope {

class Scheduler {
 public:
  // stall_floor: the least time without a completed cycle that counts as stalled (default 10 s).
  explicit Scheduler(SnapshotStore* store,
                     std::chrono::milliseconds stall_floor = std::chrono::milliseconds(10000));
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void Add(std::unique_ptr<Collector> collector, std::chrono::milliseconds interval);

  // Runs `hook` after each published cycle, on that collector's thread (so possibly on several threads
  // at once). The agent hands freed memory back to the kernel here (src/platform/memory.h).
  void SetAfterCycle(std::function<void()> hook);

  // Starts one thread per collector; each runs its first cycle at once.
  void Start();
  // Signals every thread and joins them. A cycle in progress finishes first (collectors bound their own
  // calls, e.g. the GPU collector's per-call deadline).
  void Stop();

  // Runs every collector once on the calling thread and publishes the results (for --once and tests).
  void RunOnce();

  HealthReport Health() const;
  // Returns true once ready, false on timeout.
  bool WaitUntilReady(std::chrono::milliseconds timeout) const;

  std::vector<const Collector*> collectors() const;

  // The self-metric families the scheduler publishes (for docs/metrics.md).
  static std::vector<MetricDescription> SelfMetricDescriptions();

 private:
  struct Slot {
    std::unique_ptr<Collector> collector;
    std::chrono::milliseconds interval;
  };
  // What the scheduler knows of a slot's cycles; stats_[i] belongs to slots_[i].
  struct SlotStats {
    bool ran = false;
    bool last_success = false;
    double last_duration_seconds = 0;
    double last_success_unix_seconds = 0;
    uint64_t runs = 0;
    uint64_t failures = 0;
    std::chrono::steady_clock::time_point last_completed{};
    std::string last_error;
  };

  void Loop(size_t index);
  void RunCycle(size_t index);
  void PublishSelfMetrics() EXCLUDES(mu_);

  SnapshotStore* store_;
  std::function<void()> after_cycle_;
  std::chrono::milliseconds stall_floor_;
  std::chrono::steady_clock::time_point started_at_{};
  std::vector<std::unique_ptr<Slot>> slots_;  // fixed after Start()
  std::vector<std::thread> threads_;

  mutable Mutex mu_;
  mutable CondVar cv_;  // signalled on stop and after each cycle
  std::vector<SlotStats> stats_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace gpuscope
