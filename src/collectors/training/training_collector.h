// TrainingCollector: the training source (docs/design/training.md). Binds a unix datagram socket
// (--training.socket, default /run/gpuscope/training.sock, mode 0666) with SO_PASSCRED, and a thread of
// its own receives every datagram with the sender's pid as the kernel gives it. The pid is resolved to
// the process's job (its Slurm cgroup, else SLURM_JOB_ID / GPUSCOPE_JOB_ID from its environ), rank (RANK,
// SLURM_PROCID, ... from its environ) and GPU (the GPU inventory's processes, else its launcher's GPU list
// at its local rank: SLURM_STEP_GPUS, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES); a datagram whose hello
// claims another job or rank is rejected and counted, as are malformed, oversized and credential-less
// ones. Accepted datagrams feed a TrainingState and, when the agent has a traces sink (`spans`), a
// TrainingSpans; Collect() renders the state and the source's own counters, hands the spans of the
// traced steps to the traces sink (on the collector's thread: the receive thread never waits for it),
// and hands each new hang episode (a rank the wavefront passed) to `on_hang`, once per episode (the agent
// makes it the training_hang event of the event path's "training" source).
//
// The socket is bound at the first Collect(); when it cannot be (directory not writable, path taken by
// something that is not a socket) Collect() reports the error, the collector is unhealthy, and the next
// Collect() tries again. The environ of a process is read only for the whitelisted names
// (ParseTrainingEnviron); identities are cached per pid for `identity_ttl`.
//
// Thread-safety: Collect() from the scheduler thread; the receive thread shares the state under a mutex.
// Name(), Describe(), Healthy() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/collectors/training/training_spans.h"
#include "src/collectors/training/training_state.h"
#include "src/core/collector.h"
#include "src/core/mutex.h"

namespace gpuscope {

class NodeState;

struct TrainingCollectorOptions {
  std::string socket_path = "/run/gpuscope/training.sock";
  std::string procfs = "/proc";
  const NodeState* node = nullptr;  // GPU of a pid; may be null (no GPU labels)
  std::string hostname;             // the Hostname label; the GPU inventory's when empty
  // Called once per hang episode, under the collector's lock (keep it short): the agent posts the
  // training_hang event. May be empty.
  std::function<void(const TrainingHang&, const std::string& hostname, int64_t now_ns)> on_hang;
  TrainingStateOptions state;
  // Where the spans of traced steps go (the OTLP traces sink); null: no traces, no detail kept.
  SpanExporter* spans = nullptr;
  TrainingSpansOptions traces;
  std::chrono::seconds identity_ttl{10};
  // Who a pid is; the /proc-based resolver when empty (tests give their own).
  std::function<std::optional<TrainingIdentity>(uint32_t pid)> resolve;
  // The clock of the state (CLOCK_REALTIME ns); the system clock when empty.
  std::function<int64_t()> now_ns;
};

class TrainingCollector : public Collector {
 public:
  explicit TrainingCollector(TrainingCollectorOptions options);
  ~TrainingCollector() override;
  TrainingCollector(const TrainingCollector&) = delete;
  TrainingCollector& operator=(const TrainingCollector&) = delete;

  std::string_view Name() const override { return "training"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;
  bool Healthy() const override { return bound_.load(std::memory_order_relaxed); }

  // Binds the socket and starts the receive thread (Collect() does it on first use).
  Status Start();

 private:
  void Receive();
  void Handle(std::string_view bytes, uint32_t pid, bool truncated);
  std::optional<TrainingIdentity> Identify(uint32_t pid);
  std::optional<TrainingIdentity> IdentifyFromProc(uint32_t pid) const;
  int64_t NowNs() const;
  // Hands the spans of the traced steps whose grace has passed to options_.spans.
  void ExportSpans(std::string_view hostname);

  TrainingCollectorOptions options_;
  int socket_fd_ = -1;
  int stop_fd_ = -1;
  std::thread receiver_;
  std::atomic<bool> bound_{false};

  mutable Mutex mu_;
  TrainingState state_ GUARDED_BY(mu_);
  TrainingSpans spans_ GUARDED_BY(mu_);
  uint64_t datagrams_ GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t, std::less<>> rejected_ GUARDED_BY(mu_);
  uint64_t producer_drops_ GUARDED_BY(mu_) = 0;
  std::map<uint32_t, uint32_t> drops_by_pid_ GUARDED_BY(mu_);  // last cumulative count of each sender

  // Receive thread only.
  struct CachedIdentity {
    std::optional<TrainingIdentity> identity;
    std::chrono::steady_clock::time_point expires;
  };
  std::map<uint32_t, CachedIdentity> identities_;
  TrainingDatagram datagram_;
};

}  // namespace gpuscope
