#include "src/collectors/training/training_state.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "src/collectors/training/trace_ids.h"

namespace gpuscope {
namespace {

constexpr std::array<std::string_view, 12> kOps = {"broadcast",  "reduce",     "all_gather", "reduce_scatter",
                                                   "all_reduce", "send_recv",  "send",       "recv",
                                                   "barrier",    "all_to_all", "gather",     "scatter"};

// Families in render order; the per-rank label names come first in every one.
struct Family {
  std::string_view name;
  MetricType type;
  std::string_view unit;
  std::string_view help;
  std::vector<std::string> extra_labels;
};

const std::vector<std::string> kRankLabels = {"hpc_job", "rank", "Hostname", "gpu", "UUID"};

enum FamilyId {
  kSteps,
  kSamples,
  kStepDuration,
  kComputeSeconds,
  kInStepCollectiveSeconds,
  kCollectiveDuration,
  kEntered,
  kLoaderWait,
  kCheckpoints,
  kCheckpointSeconds,
  kCheckpointBytes,
  kLastCheckpoint,
  kGradNorm,
  kComputeMedian,
  kScore,
  kHistoryScore,
  kSeq,
  kProgress,
  kHung,
  kFamilyCount
};

const std::array<Family, kFamilyCount>& Families() {
  static const std::array<Family, kFamilyCount> families = {{
      {"gpuscope_training_steps_total", MetricType::kCounter, "", "Training steps the rank reported.", {}},
      {"gpuscope_training_samples_total",
       MetricType::kCounter,
       "",
       "Samples of the rank's reported steps.",
       {}},
      {"gpuscope_training_step_duration_seconds",
       MetricType::kHistogram,
       "seconds",
       "Wall time of the rank's reported steps (buckets 10 ms to 10 min; _sum over _count is the mean). In "
       "OpenMetrics each bucket carries the exemplar of its latest step: trace_id is that step's trace.",
       {}},
      {"gpuscope_training_compute_seconds_total",
       MetricType::kCounter,
       "seconds",
       "Time of the rank's steps outside collectives: compute and data loading, what differs between ranks "
       "of synchronous training.",
       {}},
      {"gpuscope_training_collective_in_step_seconds_total",
       MetricType::kCounter,
       "seconds",
       "Time of the rank's steps inside collectives (waiting for the other ranks included).",
       {}},
      {"gpuscope_training_collective_duration_seconds",
       MetricType::kHistogram,
       "seconds",
       "Duration of the rank's completed collectives by operation and size class (lt_1MiB, lt_64MiB, "
       "ge_64MiB; buckets 100 us to 60 s; _count counts them, _sum is the time in them).",
       {"op", "size"}},
      {"gpuscope_training_collectives_entered_total",
       MetricType::kCounter,
       "",
       "Collectives the rank reported entering (before their completion, which the producers report "
       "separately): the sequence numbers of the hang wavefront advance with them.",
       {}},
      {"gpuscope_training_dataloader_wait_seconds_total",
       MetricType::kCounter,
       "seconds",
       "Time the rank waited for its data loader.",
       {}},
      {"gpuscope_training_checkpoints_total",
       MetricType::kCounter,
       "",
       "Checkpoint saves the rank reported.",
       {}},
      {"gpuscope_training_checkpoint_seconds_total",
       MetricType::kCounter,
       "seconds",
       "Time of the rank's checkpoint saves.",
       {}},
      {"gpuscope_training_checkpoint_bytes_total",
       MetricType::kCounter,
       "bytes",
       "Bytes of the rank's checkpoint saves (as reported).",
       {}},
      {"gpuscope_training_last_checkpoint_duration_seconds",
       MetricType::kGauge,
       "seconds",
       "Duration of the rank's latest checkpoint save.",
       {}},
      {"gpuscope_training_grad_norm",
       MetricType::kGauge,
       "",
       "The rank's latest reported gradient norm.",
       {}},
      {"gpuscope_training_compute_seconds_median",
       MetricType::kGauge,
       "seconds",
       "Median time outside collectives per step over the rank's recent steps (the straggler score's input; "
       "recording rules compare it across nodes).",
       {}},
      {"gpuscope_training_relative_score",
       MetricType::kGauge,
       "",
       "The job's fastest local rank's median time outside collectives divided by this rank's: 1 for the "
       "fastest, lower is slower.",
       {}},
      {"gpuscope_training_history_score",
       MetricType::kGauge,
       "",
       "The rank's median time outside collectives over its last history_window steps divided by its median "
       "over the last score_window: 1 when it works as fast as it used to, lower is slower (capped at 1; "
       "absent until twice score_window steps are known). A rank slower than it was, whichever rank is "
       "the job's fastest.",
       {}},
      {"gpuscope_training_collective_seq",
       MetricType::kGauge,
       "",
       "Sequence number of the rank's latest completed collective on a communicator.",
       {"comm"}},
      {"gpuscope_training_collective_progress_timestamp_seconds",
       MetricType::kGauge,
       "seconds",
       "When the rank's sequence number on a communicator last advanced (Unix time).",
       {"comm"}},
      {"gpuscope_training_rank_hung",
       MetricType::kGauge,
       "",
       "1 when the rank's sequence number on a communicator is behind another local rank's and has not "
       "advanced for the hang threshold.",
       {"comm"}},
  }};
  return families;
}

}  // namespace

TrainingState::TrainingState(TrainingStateOptions options) : options_(std::move(options)) {
  options_.score_window = std::max<size_t>(options_.score_window, 1);
  options_.history_window = std::max(options_.history_window, 2 * options_.score_window);
  options_.collectives_kept = std::max<size_t>(options_.collectives_kept, 1);
  options_.max_communicators = std::max<size_t>(options_.max_communicators, 1);
}

std::string_view TrainingState::OpName(uint8_t op) { return op < kOps.size() ? kOps[op] : "other"; }

const std::shared_ptr<const HistogramBuckets>& TrainingState::StepBuckets() {
  // A step of a small model on one GPU takes tens of milliseconds, one of a large model with gradient
  // accumulation minutes: roughly 1-2.5-5 per decade, so a quantile is within a factor 2.5 anywhere.
  static const auto buckets =
      HistogramBuckets::Make({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600});
  return buckets;
}

const std::shared_ptr<const HistogramBuckets>& TrainingState::CollectiveBuckets() {
  // From a small all-reduce on NVLink (a hundred microseconds) to one waiting a minute for a straggler;
  // longer waits are what the hang wavefront reports. 1-5 per decade: this family has a set of buckets
  // per operation and size class, so it stays coarser than the step histogram.
  static const auto buckets =
      HistogramBuckets::Make({0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 60});
  return buckets;
}

std::string_view TrainingState::SizeClass(uint64_t bytes) {
  if (bytes < (1ull << 20)) return "lt_1MiB";
  if (bytes < (64ull << 20)) return "lt_64MiB";
  return "ge_64MiB";
}

void TrainingState::Apply(const TrainingIdentity& who, const TrainingDatagram& datagram, int64_t now_ns) {
  Rank& rank = ranks_[Key(who.job, who.rank)];
  rank.gpu = who.gpu;
  rank.uuid = who.uuid;
  rank.last_seen_ns = now_ns;
  // Collectives first: a step's record follows the collectives it holds in the same datagram.
  for (const TrainingCollective& collective : datagram.collectives) ApplyCollective(rank, collective, now_ns);
  for (const TrainingMark& mark : datagram.marks) ApplyMark(rank, mark);
  for (const TrainingStep& step : datagram.steps) ApplyStep(who.job, rank, step);
}

void TrainingState::ApplyCollective(Rank& rank, const TrainingCollective& collective, int64_t now_ns) {
  AdvanceProgress(rank, collective, now_ns);
  if (collective.end_ns == 0) {  // entered, not completed (yet)
    ++rank.entered_collectives;
    return;
  }
  const std::pair<uint8_t, std::string_view> key(std::min<uint8_t>(collective.op, kOps.size()),
                                                 SizeClass(collective.bytes));
  rank.collectives.try_emplace(key, CollectiveBuckets())
      .first->second.Observe(Seconds(collective.begin_ns, collective.end_ns));
  // Kept in the order of their ends (records of two producers interleave, so an arrival may go a little
  // before the last): a step then looks only at the collectives that ended after it began.
  auto& recent = rank.recent_collectives;
  const auto at = std::upper_bound(recent.begin(), recent.end(), collective.end_ns,
                                   [](uint64_t end, const Interval& c) { return end < c.end_ns; });
  recent.insert(at, Interval{collective.begin_ns, collective.end_ns});
  if (recent.size() > options_.collectives_kept) recent.pop_front();
}

void TrainingState::AdvanceProgress(Rank& rank, const TrainingCollective& collective, int64_t now_ns) {
  auto it = rank.communicators.find(collective.comm);
  if (it == rank.communicators.end()) {
    if (rank.communicators.size() >= options_.max_communicators) {
      // The communicator that advanced longest ago makes room (a job's communicators are few; this only
      // bounds a producer that invents them).
      auto oldest = std::min_element(
          rank.communicators.begin(), rank.communicators.end(),
          [](const auto& a, const auto& b) { return a.second.advanced_ns < b.second.advanced_ns; });
      rank.communicators.erase(oldest);
    }
    rank.communicators[collective.comm] = Progress{collective.seq, now_ns, collective.op};
    return;
  }
  if (collective.seq > it->second.seq) it->second = Progress{collective.seq, now_ns, collective.op};
}

void TrainingState::ApplyStep(std::string_view job, Rank& rank, const TrainingStep& step) {
  const double duration = Seconds(step.begin_ns, step.end_ns);
  std::vector<std::pair<uint64_t, uint64_t>> within;
  const auto& recent = rank.recent_collectives;
  const auto first = std::partition_point(recent.begin(), recent.end(),
                                          [&](const Interval& c) { return c.end_ns <= step.begin_ns; });
  for (auto it = first; it != recent.end(); ++it) within.emplace_back(it->begin_ns, it->end_ns);
  const double inside = CoveredSeconds(within, step.begin_ns, step.end_ns);
  ++rank.steps;
  rank.samples += step.samples;
  // The step's trace is the same on every node (trace_ids.h), so the exemplar links to the spans of all
  // the job's ranks for it.
  rank.step_durations.Observe(duration, {Labels{{"trace_id", IdHex(TrainingStepTraceId(job, step.step))}},
                                         duration, static_cast<int64_t>(step.end_ns)});
  rank.collective_seconds_in_steps += inside;
  rank.compute_seconds += duration - inside;
  rank.recent_compute.push_back(duration - inside);
  if (rank.recent_compute.size() > options_.score_window) rank.recent_compute.pop_front();
  rank.history_compute.push_back(duration - inside);
  if (rank.history_compute.size() > options_.history_window) rank.history_compute.pop_front();
}

void TrainingState::ApplyMark(Rank& rank, const TrainingMark& mark) {
  switch (static_cast<TrainingMarkKind>(mark.kind)) {
    case TrainingMarkKind::kDataloaderWait:
      rank.dataloader_wait_seconds += Seconds(mark.begin_ns, mark.end_ns);
      return;
    case TrainingMarkKind::kCheckpoint:
      ++rank.checkpoints;
      rank.last_checkpoint_seconds = Seconds(mark.begin_ns, mark.end_ns);
      rank.checkpoint_seconds += rank.last_checkpoint_seconds;
      if (std::isfinite(mark.value) && mark.value > 0) rank.checkpoint_bytes += mark.value;
      return;
    case TrainingMarkKind::kGradNorm:
      if (std::isfinite(mark.value)) {
        rank.has_grad_norm = true;
        rank.grad_norm = mark.value;
      }
      return;
  }
}

double TrainingState::Seconds(uint64_t begin_ns, uint64_t end_ns) {
  return end_ns > begin_ns ? static_cast<double>(end_ns - begin_ns) / 1e9 : 0.0;
}

double TrainingState::CoveredSeconds(std::vector<std::pair<uint64_t, uint64_t>>& intervals, uint64_t begin_ns,
                                     uint64_t end_ns) {
  std::sort(intervals.begin(), intervals.end());
  double covered = 0;
  uint64_t covered_to = begin_ns;
  for (const auto& [b, e] : intervals) {
    const uint64_t from = std::max(b, covered_to);
    const uint64_t to = std::min(e, end_ns);
    if (to > from) covered += Seconds(from, to);
    covered_to = std::max(covered_to, e);
  }
  return std::min(covered, Seconds(begin_ns, end_ns));
}

std::string TrainingState::CommLabel(uint64_t comm) {
  char buffer[19];
  std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(comm));
  return buffer;
}

double TrainingState::Median(const std::deque<double>& values) {
  std::vector<double> v(values.begin(), values.end());
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

void TrainingState::AppendFamilies(int64_t now_ns, std::vector<MetricFamily>& out) {
  std::erase_if(ranks_, [&](const auto& entry) {
    return now_ns - entry.second.last_seen_ns > options_.rank_expiry_ns;
  });
  const auto& descriptions = Families();
  std::array<MetricFamily, kFamilyCount> families;
  for (size_t i = 0; i < kFamilyCount; ++i) {
    families[i].name = std::string(descriptions[i].name);
    families[i].help = std::string(descriptions[i].help);
    families[i].type = descriptions[i].type;
    families[i].unit = std::string(descriptions[i].unit);
  }

  // Per job: the fastest local median, and per communicator the furthest sequence number.
  std::map<std::string, double> fastest;
  std::map<std::pair<std::string, uint64_t>, uint64_t> furthest = Wavefront();
  std::map<Key, double> medians;
  for (const auto& [key, rank] : ranks_) {
    if (!rank.recent_compute.empty()) {
      const double median = Median(rank.recent_compute);
      medians[key] = median;
      auto [it, inserted] = fastest.emplace(key.first, median);
      if (!inserted) it->second = std::min(it->second, median);
    }
  }

  for (const auto& [key, rank] : ranks_) {
    const Labels base{{"hpc_job", key.first},
                      {"rank", std::to_string(key.second)},
                      {"Hostname", options_.hostname},
                      {"gpu", rank.gpu},
                      {"UUID", rank.uuid}};
    auto add = [&](FamilyId id, double value) { families[id].samples.emplace_back(base, value); };
    add(kSteps, static_cast<double>(rank.steps));
    add(kSamples, static_cast<double>(rank.samples));
    families[kStepDuration].samples.emplace_back(base, rank.step_durations.Value());
    add(kComputeSeconds, rank.compute_seconds);
    add(kInStepCollectiveSeconds, rank.collective_seconds_in_steps);
    for (const auto& [op_size, durations] : rank.collectives) {
      const Labels labels = Labels::Extend(
          base, {{"op", std::string(OpName(op_size.first))}, {"size", std::string(op_size.second)}});
      families[kCollectiveDuration].samples.emplace_back(labels, durations.Value());
    }
    add(kEntered, static_cast<double>(rank.entered_collectives));
    add(kLoaderWait, rank.dataloader_wait_seconds);
    add(kCheckpoints, static_cast<double>(rank.checkpoints));
    add(kCheckpointSeconds, rank.checkpoint_seconds);
    add(kCheckpointBytes, rank.checkpoint_bytes);
    if (rank.checkpoints > 0) add(kLastCheckpoint, rank.last_checkpoint_seconds);
    if (rank.has_grad_norm) add(kGradNorm, rank.grad_norm);
    if (auto it = medians.find(key); it != medians.end()) {
      add(kComputeMedian, it->second);
      const double best = fastest[key.first];
      add(kScore, it->second > 0 ? best / it->second : 1.0);
      if (rank.history_compute.size() >= 2 * options_.score_window) {
        const double usual = Median(rank.history_compute);
        add(kHistoryScore, it->second > 0 ? std::min(1.0, usual / it->second) : 1.0);
      }
    }
    for (const auto& [comm, progress] : rank.communicators) {
      const Labels labels = Labels::Extend(base, {{"comm", CommLabel(comm)}});
      families[kSeq].samples.emplace_back(labels, static_cast<double>(progress.seq));
      families[kProgress].samples.emplace_back(labels, static_cast<double>(progress.advanced_ns) / 1e9);
      families[kHung].samples.emplace_back(labels,
                                           Hung(progress, furthest[{key.first, comm}], now_ns) ? 1.0 : 0.0);
    }
  }
  for (MetricFamily& family : families) {
    if (!family.samples.empty()) out.push_back(std::move(family));
  }
}

std::map<std::pair<std::string, uint64_t>, uint64_t> TrainingState::Wavefront() const {
  std::map<std::pair<std::string, uint64_t>, uint64_t> furthest;
  for (const auto& [key, rank] : ranks_) {
    for (const auto& [comm, progress] : rank.communicators) {
      uint64_t& seq = furthest[{key.first, comm}];
      seq = std::max(seq, progress.seq);
    }
  }
  return furthest;
}

bool TrainingState::Hung(const Progress& progress, uint64_t furthest, int64_t now_ns) const {
  return progress.seq < furthest && now_ns - progress.advanced_ns >= options_.hang_after_ns;
}

std::vector<TrainingHang> TrainingState::TakeNewHangs(int64_t now_ns) {
  std::vector<TrainingHang> out;
  const auto furthest = Wavefront();
  for (auto& [key, rank] : ranks_) {
    for (auto& [comm, progress] : rank.communicators) {
      const uint64_t front = furthest.at({key.first, comm});
      if (progress.hang_taken || !Hung(progress, front, now_ns)) continue;
      progress.hang_taken = true;
      out.push_back(TrainingHang{key.first, key.second, rank.gpu, rank.uuid, comm, progress.seq, progress.op,
                                 front, static_cast<double>(now_ns - progress.advanced_ns) / 1e9});
    }
  }
  return out;
}

std::vector<MetricDescription> TrainingState::Describe() {
  std::vector<MetricDescription> out;
  for (const Family& family : Families()) {
    MetricDescription description;
    description.name = std::string(family.name);
    description.type = family.type;
    description.help = std::string(family.help);
    description.unit = std::string(family.unit);
    description.labels = kRankLabels;
    description.labels.insert(description.labels.end(), family.extra_labels.begin(),
                              family.extra_labels.end());
    description.source = "the training socket (python/gpuscope, the NCCL profiler plugin)";
    out.push_back(std::move(description));
  }
  return out;
}

}  // namespace gpuscope
