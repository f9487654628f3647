// TrainingSpans: the traces of training telemetry (docs/design/training.md, "Traces"). Fed the same
// datagrams as TrainingState, it keeps per rank a bounded window of recent collectives with their detail
// (communicator, sequence number, operation, algorithm, protocol, bytes, ranks, begin and end) and the
// durations of the rank's recent steps, and when a step's record arrives decides whether to trace it:
//   - traces=slow (the default): a step longer than slow_factor (1.5) x the median of the rank's previous
//     `baseline_steps` (20) steps; no step is slow before `min_baseline_steps` (5) are known.
//   - traces=all: every step. traces=off: none, and nothing is kept.
// A traced step becomes one span "train.step" (trace TrainingStepTraceId(job, step), span
// TrainingStepSpanId(job, step, rank), so every node's agent puts its ranks' step spans into one trace per
// step) with the rank's time outside and inside collectives, and one child span "collective.<op>" per
// collective the rank began within the step (span TrainingCollectiveSpanId(job, rank, comm, seq)). A
// collective entered but with no completion reported is a span ending with the step, status ERROR saying
// so. Spans are built `completion_grace_ns` (2 s, the producers' flush bound) after the step's end, so
// that completions sent after the step record (the NCCL plugin's) are in.
//
// Volume is bounded: at most `max_collective_spans_per_step` collective spans per step (the longest kept,
// the others counted), and at most `max_spans_per_second` spans per agent (a token bucket with one
// second of burst, charged when a step is chosen: a step whose spans do not fit is not traced, and its
// spans are counted as dropped). Memory per rank: `collectives_kept` collectives, `baseline_steps`
// durations, at most `max_waiting_steps` traced steps waiting for their grace; a rank silent for
// `rank_expiry_ns` is forgotten.
//
// Time (nanoseconds, CLOCK_REALTIME, the clock the producers stamp with) is passed in by the caller.
// Thread-safety: none; the training collector serialises Apply(), TakeSpans() and AppendFamilies().
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/collectors/training/training_state.h"
#include "src/core/metric.h"
#include "src/core/span.h"
#include "src/parsers/training_wire.h"

namespace gpuscope {

enum class TrainingTraces { kSlow, kAll, kOff };

// "slow", "all", "off"; nullopt for anything else.
std::optional<TrainingTraces> ParseTrainingTraces(std::string_view word);

struct TrainingSpansOptions {
  TrainingTraces traces = TrainingTraces::kSlow;
  double slow_factor = 1.5;
  size_t baseline_steps = 20;
  size_t min_baseline_steps = 5;
  size_t collectives_kept = 2048;
  size_t max_collective_spans_per_step = 256;
  double max_spans_per_second = 1000;
  size_t max_waiting_steps = 256;
  int64_t completion_grace_ns = 2'000'000'000;
  int64_t rank_expiry_ns = 600'000'000'000;
};

class TrainingSpans {
 public:
  explicit TrainingSpans(TrainingSpansOptions options);

  // Takes one decoded datagram of `who` received at `now_ns` (as TrainingState::Apply).
  void Apply(const TrainingIdentity& who, const TrainingDatagram& datagram, int64_t now_ns);

  // The spans of the traced steps whose grace has passed at `now_ns`, their Hostname attribute
  // `hostname`; forgets ranks silent for rank_expiry.
  std::vector<Span> TakeSpans(int64_t now_ns, std::string_view hostname);

  // gpuscope_training_traced_steps_total, gpuscope_training_spans_total,
  // gpuscope_training_spans_dropped_total{reason="rate_limit|step_limit|backlog"}.
  void AppendFamilies(std::vector<MetricFamily>& out) const;
  static std::vector<MetricDescription> Describe();

  size_t ranks() const { return ranks_.size(); }

  // NCCL's algorithm and protocol as the wire codes them (the NCCL profiler plugin: 1 tree, 2 ring, ...;
  // 1 LL, 2 LL128, 3 Simple); "" for 0 (unknown) and codes past the known ones.
  static std::string_view AlgoName(uint8_t algo);
  static std::string_view ProtoName(uint8_t proto);

 private:
  struct TracedStep {
    TrainingStep step;
    double median_seconds = 0;  // of the previous steps; 0 without a baseline
    size_t budget = 0;          // spans charged to the rate limit
    bool slow = false;          // slower than slow_factor x the median (else traced because traces=all)
  };
  struct Rank {
    std::string gpu, uuid;
    int64_t last_seen_ns = 0;
    std::deque<double> step_seconds;                            // the last baseline_steps steps
    std::deque<TrainingCollective> collectives;                 // in arrival order of their first record
    uint64_t front_serial = 0;                                  // serial number of collectives.front()
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> serials;  // (comm, seq) -> serial, to merge completions
    std::deque<TracedStep> waiting;
    uint64_t decided_to_ns = 0;  // end of the latest step decided
  };
  using Key = std::pair<std::string, int32_t>;  // (job, rank)

  void AddCollective(Rank& rank, const TrainingCollective& collective);
  void Decide(Rank& rank, const TrainingStep& step, int64_t now_ns);
  void Prune(Rank& rank);
  static void PopFront(Rank& rank);
  void Build(const Key& key, const Rank& rank, const TracedStep& traced, std::string_view hostname,
             std::vector<Span>& out);
  bool Charge(size_t spans, int64_t now_ns);

  TrainingSpansOptions options_;
  std::map<Key, Rank> ranks_;
  double tokens_ = 0;
  int64_t refilled_ns_ = 0;
  uint64_t traced_steps_ = 0;
  uint64_t spans_ = 0;
  uint64_t dropped_rate_limit_ = 0;
  uint64_t dropped_step_limit_ = 0;
  uint64_t dropped_backlog_ = 0;
};

}  // namespace gpuscope
