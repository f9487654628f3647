// TrainingState: what the training source knows about each rank running on this node, built from the
// datagrams of the training socket (src/parsers/training_wire.h) and rendered as the gpuscope_training_*
// families (docs/design/training.md).
//
// A rank is (job, rank) as the agent established it from the sending process (TrainingIdentity), never
// from the datagram's claims. Per rank: step, sample and time counters; the step-duration histogram
// (fixed buckets from 10 ms to 10 min, StepBuckets(), each with the exemplar of the latest step in it:
// trace_id = the step's trace, TrainingStepTraceId(job, step), value its seconds, time its end); the
// collective-duration histograms by operation and size class (CollectiveBuckets(), 100 us to 60 s, no
// exemplars: a collective's trace is known to the span builder, not here); the time inside collectives
// within each step (the collectives that began and ended inside it, as known when the step's record
// arrives) and outside them (compute and data loading); collectives by operation and size class;
// data-loader wait, checkpoints and the gradient norm; per communicator the last sequence number the rank
// entered (a record without completion: producers report entry first, so that a hang shows) or completed,
// and when it advanced. From these, per job on this node:
//   - the relative score of each rank: the fastest local rank's median time outside collectives over the
//     last `score_window` steps, divided by this rank's (in (0, 1], lower is slower). In synchronous
//     training the step time is the same on every rank; the time outside collectives is not.
//   - the history score of each rank: its own median over the last `history_window` steps divided by its
//     median over the last `score_window` (capped at 1): a rank slower than it used to be, even when it
//     is the job's fastest (every rank on one slowed node, a one-rank job).
//   - hung ranks: per communicator, a rank whose sequence number is behind another local rank's and has
//     not advanced for `hang_after`: the others entered a collective this one never did (the wavefront).
//     A hang episode (the rank, the communicator, the sequence number it is stuck at) is handed out once
//     by TakeNewHangs() (the training_hang event); it ends when the sequence number advances.
// Memory is bounded per rank (a window of recent collectives and compute times, at most
// `max_communicators` communicators); a rank silent for `rank_expiry` is forgotten, and so are its series.
//
// Time is passed in by the caller (nanoseconds, CLOCK_REALTIME, the clock the producers stamp with).
// Thread-safety: none; the training collector serialises Apply() and AppendFamilies().
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/histogram.h"
#include "src/core/metric.h"
#include "src/parsers/training_wire.h"

namespace gpuscope {

// Who sent a datagram, as the agent found out from the kernel (the sender's pid) and /proc.
struct TrainingIdentity {
  std::string job;  // Slurm job id; empty when the process belongs to no job the agent knows
  int32_t rank = -1;
  std::string gpu;   // NVML index when the process runs on a GPU the agent sees; else empty
  std::string uuid;  // that GPU's UUID; else empty
};

// A rank found hung: the wavefront passed it on a communicator (TrainingState::TakeNewHangs).
struct TrainingHang {
  std::string job;
  int32_t rank = -1;
  std::string gpu, uuid;  // as the identity gave them; may be empty
  uint64_t comm = 0;
  uint64_t seq = 0;            // the rank's latest collective on the communicator (entered or completed)
  uint8_t op = 0;              // that collective's operation (the wire's code)
  uint64_t furthest_seq = 0;   // the furthest any local rank of the job reached on it
  double stalled_seconds = 0;  // since the rank's sequence number last advanced
};

struct TrainingStateOptions {
  std::string hostname;  // the Hostname label, as on the GPU series
  size_t score_window = 20;
  size_t history_window = 500;  // the rank's own usual pace (at least 2 x score_window)
  size_t collectives_kept = 4096;
  size_t max_communicators = 64;
  int64_t hang_after_ns = 60'000'000'000;
  int64_t rank_expiry_ns = 600'000'000'000;
};

class TrainingState {
 public:
  explicit TrainingState(TrainingStateOptions options);

  // Takes one decoded datagram of `who` received at `now_ns`.
  void Apply(const TrainingIdentity& who, const TrainingDatagram& datagram, int64_t now_ns);

  // Forgets ranks silent for rank_expiry, then appends the per-rank families.
  void AppendFamilies(int64_t now_ns, std::vector<MetricFamily>& out);

  // The hung ranks (as gpuscope_training_rank_hung says at `now_ns`) not handed out before for the
  // sequence number they are stuck at: each hang episode once.
  std::vector<TrainingHang> TakeNewHangs(int64_t now_ns);

  size_t ranks() const { return ranks_.size(); }
  // The Hostname label from now on (the training collector takes the GPU inventory's when it had none).
  void set_hostname(std::string hostname) { options_.hostname = std::move(hostname); }

  static std::vector<MetricDescription> Describe();

  // Operation names in the wire's order (ncclFunc_t): "broadcast", ..., "other" past the known ones.
  static std::string_view OpName(uint8_t op);
  // "lt_1MiB", "lt_64MiB", "ge_64MiB".
  static std::string_view SizeClass(uint64_t bytes);
  // end - begin in seconds; 0 when end is not after begin (producers' clocks are not trusted).
  static double Seconds(uint64_t begin_ns, uint64_t end_ns);
  // Seconds of [begin_ns, end_ns) covered by the union of `intervals` ([begin, end) pairs, in any order,
  // reordered here): overlapping ones (DDP's concurrent buckets) count once. The step's share inside
  // collectives, for the training state and its spans alike.
  static double CoveredSeconds(std::vector<std::pair<uint64_t, uint64_t>>& intervals, uint64_t begin_ns,
                               uint64_t end_ns);
  // A communicator as its `comm` label and span attribute: "0x" and 16 hex digits.
  static std::string CommLabel(uint64_t comm);
  // The median of `values` (the mean of the two middle ones for an even count); `values` is not empty.
  static double Median(const std::deque<double>& values);
  // The buckets of gpuscope_training_step_duration_seconds: 10 ms to 10 min.
  static const std::shared_ptr<const HistogramBuckets>& StepBuckets();
  // The buckets of gpuscope_training_collective_duration_seconds: 100 us to 60 s.
  static const std::shared_ptr<const HistogramBuckets>& CollectiveBuckets();

 private:
  struct Interval {
    uint64_t begin_ns = 0;
    uint64_t end_ns = 0;
  };
  struct Progress {
    uint64_t seq = 0;
    int64_t advanced_ns = 0;  // agent time when seq last grew
    uint8_t op = 0;           // of the latest collective
    bool hang_taken = false;  // this seq's hang was handed out by TakeNewHangs
  };
  struct Rank {
    std::string gpu, uuid;
    int64_t last_seen_ns = 0;
    uint64_t steps = 0, samples = 0;
    Histogram step_durations{StepBuckets()};
    double compute_seconds = 0, collective_seconds_in_steps = 0;
    std::deque<double> recent_compute;        // seconds outside collectives, last score_window steps
    std::deque<double> history_compute;       // the same, last history_window steps
    std::deque<Interval> recent_collectives;  // the last collectives_kept completed ones, by end time
    std::map<std::pair<uint8_t, std::string_view>, Histogram> collectives;  // by (op, size class)
    uint64_t entered_collectives = 0;
    double dataloader_wait_seconds = 0;
    uint64_t checkpoints = 0;
    double checkpoint_seconds = 0, checkpoint_bytes = 0, last_checkpoint_seconds = 0;
    bool has_grad_norm = false;
    double grad_norm = 0;
    std::map<uint64_t, Progress> communicators;
  };
  using Key = std::pair<std::string, int32_t>;  // (job, rank)

  // Per (job, communicator): the furthest sequence number a local rank of the job reached.
  std::map<std::pair<std::string, uint64_t>, uint64_t> Wavefront() const;
  bool Hung(const Progress& progress, uint64_t furthest, int64_t now_ns) const;

  void ApplyCollective(Rank& rank, const TrainingCollective& collective, int64_t now_ns);
  void AdvanceProgress(Rank& rank, const TrainingCollective& collective, int64_t now_ns);
  void ApplyStep(std::string_view job, Rank& rank, const TrainingStep& step);
  void ApplyMark(Rank& rank, const TrainingMark& mark);

  TrainingStateOptions options_;
  std::map<Key, Rank> ranks_;
};

}  // namespace gpuscope
