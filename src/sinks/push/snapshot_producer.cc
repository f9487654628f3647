#include "src/sinks/push/snapshot_producer.h"

#include <algorithm>
#include <utility>

#include "src/core/log.h"

namespace gpuscope {

Status OpenMetricsQueue(std::string_view name, const std::string& directory, uint64_t max_bytes,
                        std::vector<std::string> consumers, std::unique_ptr<DurableQueue>* queue) {
  DurableQueueOptions q;
  q.directory = directory;
  q.max_total_bytes = max_bytes;
  q.segment_bytes = std::min<uint64_t>(16ull << 20, std::max<uint64_t>(max_bytes / 8, 64 << 10));
  q.sync = QueueSyncPolicy::kNone;  // the sink syncs once per batch
  q.consumers = std::move(consumers);
  const Status status = DurableQueue::Open(q, queue);
  if (!status.ok())
    return Status::Unavailable(std::string(name) + " queue " + directory + ": " + status.message());
  return Status::Ok();
}

SnapshotProducer::SnapshotProducer(Options options) : options_(std::move(options)) {}

SnapshotProducer::~SnapshotProducer() { Stop(); }

int64_t SnapshotProducer::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SnapshotProducer::Start() {
  if (thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void SnapshotProducer::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

void SnapshotProducer::Run() {
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
    const Status status = options_.produce(*snapshot, NowMs());
    if (!status.ok())
      Log(LogLevel::kWarn, options_.name + " cannot queue a batch", {{"error", status.message()}});
  }
}

}  // namespace gpuscope
