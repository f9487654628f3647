#include "src/collectors/training/training_spans.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "src/collectors/training/trace_ids.h"

namespace gpuscope {
namespace {

constexpr std::array<std::string_view, 7> kAlgos = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, 3> kProtos = {"LL", "LL128", "Simple"};

// Seconds of [begin, end) inside the completed collectives.
double InsideSeconds(const std::vector<const TrainingCollective*>& collectives, uint64_t begin,
                     uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>> completed;
  for (const TrainingCollective* c : collectives) {
    if (c->end_ns != 0) completed.emplace_back(c->begin_ns, c->end_ns);
  }
  return TrainingState::CoveredSeconds(completed, begin, end);
}

// How long a collective lasted within the rank's view: to its completion, or to the step's end when none
// was reported.
uint64_t DurationNs(const TrainingCollective& c, uint64_t step_end_ns) {
  const uint64_t end = c.end_ns != 0 ? c.end_ns : std::max(step_end_ns, c.begin_ns);
  return end > c.begin_ns ? end - c.begin_ns : 0;
}

}  // namespace

std::optional<TrainingTraces> ParseTrainingTraces(std::string_view word) {
  if (word == "slow") return TrainingTraces::kSlow;
  if (word == "all") return TrainingTraces::kAll;
  if (word == "off") return TrainingTraces::kOff;
  return std::nullopt;
}

std::string_view TrainingSpans::AlgoName(uint8_t algo) {
  return algo >= 1 && algo <= kAlgos.size() ? kAlgos[algo - 1] : "";
}

std::string_view TrainingSpans::ProtoName(uint8_t proto) {
  return proto >= 1 && proto <= kProtos.size() ? kProtos[proto - 1] : "";
}

TrainingSpans::TrainingSpans(TrainingSpansOptions options) : options_(options) {
  options_.baseline_steps = std::max<size_t>(options_.baseline_steps, 1);
  options_.min_baseline_steps = std::clamp<size_t>(options_.min_baseline_steps, 1, options_.baseline_steps);
  options_.collectives_kept = std::max<size_t>(options_.collectives_kept, 1);
  options_.max_spans_per_second = std::max(options_.max_spans_per_second, 1.0);
  options_.max_waiting_steps = std::max<size_t>(options_.max_waiting_steps, 1);
  tokens_ = options_.max_spans_per_second;
}

void TrainingSpans::Apply(const TrainingIdentity& who, const TrainingDatagram& datagram, int64_t now_ns) {
  if (options_.traces == TrainingTraces::kOff) return;
  Rank& rank = ranks_[Key(who.job, who.rank)];
  rank.gpu = who.gpu;
  rank.uuid = who.uuid;
  rank.last_seen_ns = now_ns;
  // Collectives first: a step's record follows the collectives it holds in the same datagram.
  for (const TrainingCollective& collective : datagram.collectives) AddCollective(rank, collective);
  for (const TrainingStep& step : datagram.steps) Decide(rank, step, now_ns);
  Prune(rank);
}

void TrainingSpans::AddCollective(Rank& rank, const TrainingCollective& collective) {
  const std::pair<uint64_t, uint64_t> key{collective.comm, collective.seq};
  if (auto it = rank.serials.find(key); it != rank.serials.end()) {
    TrainingCollective& kept = rank.collectives[it->second - rank.front_serial];
    // The completion replaces the entry; a repeated entry leaves a completion alone.
    if (collective.end_ns != 0 || kept.end_ns == 0) kept = collective;
    return;
  }
  rank.serials[key] = rank.front_serial + rank.collectives.size();
  rank.collectives.push_back(collective);
  while (rank.collectives.size() > options_.collectives_kept) PopFront(rank);
}

void TrainingSpans::PopFront(Rank& rank) {
  const TrainingCollective& front = rank.collectives.front();
  auto it = rank.serials.find({front.comm, front.seq});
  if (it != rank.serials.end() && it->second == rank.front_serial) rank.serials.erase(it);
  rank.collectives.pop_front();
  ++rank.front_serial;
}

// Collectives before what a waiting step or the next step can hold are of no use to the traces any more.
void TrainingSpans::Prune(Rank& rank) {
  const uint64_t cutoff = rank.waiting.empty() ? rank.decided_to_ns : rank.waiting.front().step.begin_ns;
  while (!rank.collectives.empty() && rank.collectives.front().begin_ns < cutoff) PopFront(rank);
}

bool TrainingSpans::Charge(size_t spans, int64_t now_ns) {
  const double rate = options_.max_spans_per_second;
  if (now_ns > refilled_ns_) {
    tokens_ = std::min(rate, tokens_ + rate * static_cast<double>(now_ns - refilled_ns_) / 1e9);
    refilled_ns_ = now_ns;
  }
  if (static_cast<double>(spans) > tokens_) return false;
  tokens_ -= static_cast<double>(spans);
  return true;
}

void TrainingSpans::Decide(Rank& rank, const TrainingStep& step, int64_t now_ns) {
  const double seconds = TrainingState::Seconds(step.begin_ns, step.end_ns);
  const bool baseline = rank.step_seconds.size() >= options_.min_baseline_steps;
  const double median = baseline ? TrainingState::Median(rank.step_seconds) : 0.0;
  rank.step_seconds.push_back(seconds);
  if (rank.step_seconds.size() > options_.baseline_steps) rank.step_seconds.pop_front();
  rank.decided_to_ns = std::max<uint64_t>(rank.decided_to_ns, step.end_ns);
  const bool slow = baseline && seconds > options_.slow_factor * median;
  if (options_.traces != TrainingTraces::kAll && !slow) return;

  size_t collectives = 0;
  for (const TrainingCollective& c : rank.collectives) {
    if (c.begin_ns >= step.begin_ns && c.begin_ns < step.end_ns) ++collectives;
  }
  const size_t budget = 1 + std::min(collectives, options_.max_collective_spans_per_step);
  if (rank.waiting.size() >= options_.max_waiting_steps) {
    dropped_backlog_ += 1 + collectives;
    return;
  }
  if (!Charge(budget, now_ns)) {
    dropped_rate_limit_ += 1 + collectives;
    return;
  }
  rank.waiting.push_back({step, median, budget, slow});
}

std::vector<Span> TrainingSpans::TakeSpans(int64_t now_ns, std::string_view hostname) {
  std::vector<Span> out;
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    Rank& rank = it->second;
    // Past the grace: now - grace >= end (written so that no producer's time can overflow it).
    const int64_t graced = now_ns - options_.completion_grace_ns;
    while (!rank.waiting.empty() && graced >= 0 &&
           rank.waiting.front().step.end_ns <= static_cast<uint64_t>(graced)) {
      Build(it->first, rank, rank.waiting.front(), hostname, out);
      rank.waiting.pop_front();
    }
    Prune(rank);
    if (now_ns - rank.last_seen_ns > options_.rank_expiry_ns) {
      it = ranks_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void TrainingSpans::Build(const Key& key, const Rank& rank, const TracedStep& traced,
                          std::string_view hostname, std::vector<Span>& out) {
  const TrainingStep& step = traced.step;
  const std::string& job = key.first;
  const int32_t rank_number = key.second;
  std::vector<const TrainingCollective*> within;
  for (const TrainingCollective& c : rank.collectives) {
    if (c.begin_ns >= step.begin_ns && c.begin_ns < step.end_ns) within.push_back(&c);
  }
  const double inside = InsideSeconds(within, step.begin_ns, step.end_ns);
  // Within the spans charged for the step: the longest collectives, those that explain a slow step.
  // Past the spans per step they count as step_limit; collectives reported after the decision, past its
  // charge, as rate_limit.
  const size_t limit = traced.budget - 1;
  size_t omitted = 0;
  if (within.size() > limit) {
    omitted = within.size() - limit;
    const size_t past_step_limit =
        within.size() - std::min(within.size(), options_.max_collective_spans_per_step);
    dropped_step_limit_ += past_step_limit;
    dropped_rate_limit_ += omitted - past_step_limit;
    std::stable_sort(within.begin(), within.end(),
                     [&](const TrainingCollective* a, const TrainingCollective* b) {
                       return DurationNs(*a, step.end_ns) > DurationNs(*b, step.end_ns);
                     });
    within.resize(limit);
  }
  std::stable_sort(
      within.begin(), within.end(),
      [](const TrainingCollective* a, const TrainingCollective* b) { return a->begin_ns < b->begin_ns; });

  const TraceId trace = TrainingStepTraceId(job, step.step);
  const SpanId step_span = TrainingStepSpanId(job, step.step, rank_number);
  Span s;
  s.trace_id = trace;
  s.span_id = step_span;
  s.name = "train.step";
  s.start_unix_ns = step.begin_ns;
  s.end_unix_ns = std::max(step.end_ns, step.begin_ns);
  s.attributes = {{"hpc_job", job},
                  {"rank", int64_t{rank_number}},
                  {"step", static_cast<int64_t>(step.step)},
                  {"samples", int64_t{step.samples}},
                  {"Hostname", std::string(hostname)}};
  if (!rank.gpu.empty()) s.attributes.push_back({"gpu", rank.gpu});
  if (!rank.uuid.empty()) s.attributes.push_back({"UUID", rank.uuid});
  const double seconds = TrainingState::Seconds(step.begin_ns, step.end_ns);
  s.attributes.push_back({"gpuscope.compute_seconds", seconds - inside});
  s.attributes.push_back({"gpuscope.collective_seconds", inside});
  if (traced.median_seconds > 0)
    s.attributes.push_back({"gpuscope.median_step_seconds", traced.median_seconds});
  s.attributes.push_back({"gpuscope.traced", std::string(traced.slow ? "slow" : "all")});
  s.attributes.push_back({"gpuscope.collectives", static_cast<int64_t>(within.size() + omitted)});
  if (omitted > 0) s.attributes.push_back({"gpuscope.collectives_omitted", static_cast<int64_t>(omitted)});
  out.push_back(std::move(s));

  for (const TrainingCollective* c : within) {
    Span child;
    child.trace_id = trace;
    child.parent_span_id = step_span;
    child.span_id = TrainingCollectiveSpanId(job, rank_number, c->comm, c->seq);
    const std::string_view op = TrainingState::OpName(c->op);
    child.name = "collective." + std::string(op);
    child.start_unix_ns = c->begin_ns;
    child.end_unix_ns = c->begin_ns + DurationNs(*c, step.end_ns);
    child.attributes = {{"hpc_job", job},
                        {"rank", int64_t{rank_number}},
                        {"comm", TrainingState::CommLabel(c->comm)},
                        {"seq", static_cast<int64_t>(c->seq)},
                        {"op", std::string(op)},
                        {"bytes", static_cast<int64_t>(c->bytes)},
                        {"nranks", int64_t{c->nranks}}};
    if (const std::string_view algo = AlgoName(c->algo); !algo.empty())
      child.attributes.push_back({"algo", std::string(algo)});
    if (const std::string_view proto = ProtoName(c->proto); !proto.empty())
      child.attributes.push_back({"proto", std::string(proto)});
    if (c->dtype != 0) child.attributes.push_back({"dtype", int64_t{c->dtype}});
    if (c->end_ns == 0) {
      child.status = SpanStatusCode::kError;
      child.status_message = "entered, no completion reported by " +
                             std::to_string(options_.completion_grace_ns / 1'000'000) +
                             " ms after the step ended (the span ends with the step)";
    }
    out.push_back(std::move(child));
  }
  ++traced_steps_;
  spans_ += 1 + within.size();
}

std::vector<MetricDescription> TrainingSpans::Describe() {
  return {
      {"gpuscope_training_traced_steps_total",
       MetricType::kCounter,
       "Steps whose spans were handed to the traces sink (--training.traces: slow steps, all, off).",
       "",
       {},
       "the training source"},
      {"gpuscope_training_spans_total",
       MetricType::kCounter,
       "Spans (steps and their collectives) handed to the traces sink.",
       "",
       {},
       "the training source"},
      {"gpuscope_training_spans_dropped_total",
       MetricType::kCounter,
       "Spans of steps chosen for tracing that were not built, by reason: rate_limit (over the spans per "
       "second of the agent), step_limit (collectives past the spans per step), backlog (too many steps "
       "waiting for their completions).",
       "",
       {"reason"},
       "the training source"},
  };
}

void TrainingSpans::AppendFamilies(std::vector<MetricFamily>& out) const {
  const std::vector<MetricDescription> d = Describe();
  MetricFamily steps = FamilyOf(d[0]);
  steps.samples.emplace_back(Labels{}, static_cast<double>(traced_steps_));
  out.push_back(std::move(steps));
  MetricFamily spans = FamilyOf(d[1]);
  spans.samples.emplace_back(Labels{}, static_cast<double>(spans_));
  out.push_back(std::move(spans));
  MetricFamily dropped = FamilyOf(d[2]);
  dropped.samples.emplace_back(Labels{{"reason", "rate_limit"}}, static_cast<double>(dropped_rate_limit_));
  dropped.samples.emplace_back(Labels{{"reason", "step_limit"}}, static_cast<double>(dropped_step_limit_));
  dropped.samples.emplace_back(Labels{{"reason", "backlog"}}, static_cast<double>(dropped_backlog_));
  out.push_back(std::move(dropped));
}

}  // namespace gpuscope
