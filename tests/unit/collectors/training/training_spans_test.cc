// TrainingSpans (src/collectors/training/training_spans.h): only steps slower than 1.5x the rank's median
// are traced by default, every step with traces=all and none with off; a traced step is one step span and
// one child per collective it holds, with the ids every node derives alike (trace_ids.h); completions
// that come after the step's record are waited for, a collective never completed says so in its status;
// and the volume stays within the spans per second and per step, counted when exceeded.
#include "src/collectors/training/training_spans.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "src/collectors/training/trace_ids.h"

namespace gpuscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kT0 = 1'700'000'000ull * kSecond;
constexpr uint64_t kComm = 0xC0FFEE;

TrainingIdentity Rank3() { return TrainingIdentity{"4242", 3, "3", "GPU-3"}; }

TrainingCollective AllReduce(uint64_t seq, uint64_t begin, uint64_t end) {
  TrainingCollective c;
  c.comm = kComm;
  c.seq = seq;
  c.op = 4;  // all_reduce
  c.algo = 2;
  c.proto = 3;
  c.bytes = 25 << 20;
  c.nranks = 8;
  c.begin_ns = begin;
  c.end_ns = end;
  return c;
}

// Step `number` from `begin` lasting `step_s`, its all_reduce (seq = number) for its last 0.2 s.
TrainingDatagram Step(uint64_t number, uint64_t begin, double step_s) {
  TrainingDatagram d;
  const uint64_t end = begin + static_cast<uint64_t>(step_s * kSecond);
  d.collectives.push_back(AllReduce(number, end - kSecond / 5, end));
  d.steps.push_back({number, begin, end, 64});
  return d;
}

// Feeds steps 0..durations.size()-1 back to back from kT0; returns when the last one ended.
uint64_t Feed(TrainingSpans& spans, const std::vector<double>& durations) {
  uint64_t at = kT0;
  for (size_t i = 0; i < durations.size(); ++i) {
    const TrainingDatagram d = Step(i, at, durations[i]);
    at = d.steps[0].end_ns;
    spans.Apply(Rank3(), d, static_cast<int64_t>(at));
  }
  return at;
}

std::map<std::string, std::variant<std::string, int64_t, double>> Attributes(const Span& span) {
  std::map<std::string, std::variant<std::string, int64_t, double>> out;
  for (const SpanAttribute& a : span.attributes) out[a.key] = a.value;
  return out;
}

std::map<std::string, double> Counters(const TrainingSpans& spans) {
  std::vector<MetricFamily> families;
  spans.AppendFamilies(families);
  std::map<std::string, double> out;
  for (const MetricFamily& f : families) {
    for (const Sample& s : f.samples) {
      std::string key = f.name;
      for (const auto& [name, value] : s.labels) key += "{" + value + "}";
      out[key] = s.value;
    }
  }
  return out;
}

TEST(TrainingSpans, OnlyTheStepSlowerThanOneAndAHalfMediansIsTracedByDefault) {
  TrainingSpans spans(TrainingSpansOptions{});
  // Steps 0-4 build the baseline (never slow); step 7 (2.0 s) is slower than 1.5 x 1.0 s; step 9 (1.4 s)
  // is not.
  const uint64_t end = Feed(spans, {1.0, 1.1, 0.9, 1.0, 1.0, 1.0, 1.2, 2.0, 1.0, 1.4});
  const std::vector<Span> out = spans.TakeSpans(static_cast<int64_t>(end) + 3 * kSecond, "node-7");
  ASSERT_EQ(out.size(), 2u);
  const Span& step = out[0];
  const Span& child = out[1];
  const uint64_t step_begin = kT0 + 7'200'000'000ull;  // 1.0+1.1+0.9+1.0+1.0+1.0+1.2 s
  EXPECT_EQ(step.name, "train.step");
  EXPECT_EQ(step.trace_id, TrainingStepTraceId("4242", 7));
  EXPECT_EQ(step.span_id, TrainingStepSpanId("4242", 7, 3));
  EXPECT_EQ(step.parent_span_id, (std::array<uint8_t, 8>{}));
  EXPECT_EQ(step.start_unix_ns, step_begin);
  EXPECT_EQ(step.end_unix_ns, step_begin + 2 * kSecond);
  EXPECT_EQ(step.status, SpanStatusCode::kUnset);
  auto a = Attributes(step);
  EXPECT_EQ(std::get<std::string>(a["hpc_job"]), "4242");
  EXPECT_EQ(std::get<int64_t>(a["rank"]), 3);
  EXPECT_EQ(std::get<int64_t>(a["step"]), 7);
  EXPECT_EQ(std::get<int64_t>(a["samples"]), 64);
  EXPECT_EQ(std::get<std::string>(a["Hostname"]), "node-7");
  EXPECT_EQ(std::get<std::string>(a["gpu"]), "3");
  EXPECT_EQ(std::get<std::string>(a["UUID"]), "GPU-3");
  EXPECT_NEAR(std::get<double>(a["gpuscope.compute_seconds"]), 1.8, 1e-9);
  EXPECT_NEAR(std::get<double>(a["gpuscope.collective_seconds"]), 0.2, 1e-9);
  EXPECT_NEAR(std::get<double>(a["gpuscope.median_step_seconds"]), 1.0, 1e-9);  // of steps 0-6
  EXPECT_EQ(std::get<std::string>(a["gpuscope.traced"]), "slow");
  EXPECT_EQ(std::get<int64_t>(a["gpuscope.collectives"]), 1);

  EXPECT_EQ(child.name, "collective.all_reduce");
  EXPECT_EQ(child.trace_id, step.trace_id);
  EXPECT_EQ(child.parent_span_id, step.span_id);
  EXPECT_EQ(child.span_id, TrainingCollectiveSpanId("4242", 3, kComm, 7));
  EXPECT_EQ(child.start_unix_ns, step_begin + 1'800'000'000ull);
  EXPECT_EQ(child.end_unix_ns, step_begin + 2 * kSecond);
  EXPECT_EQ(child.status, SpanStatusCode::kUnset);
  a = Attributes(child);
  EXPECT_EQ(std::get<std::string>(a["comm"]), "0x0000000000c0ffee");
  EXPECT_EQ(std::get<int64_t>(a["seq"]), 7);
  EXPECT_EQ(std::get<std::string>(a["op"]), "all_reduce");
  EXPECT_EQ(std::get<int64_t>(a["bytes"]), 25 << 20);
  EXPECT_EQ(std::get<int64_t>(a["nranks"]), 8);
  EXPECT_EQ(std::get<std::string>(a["algo"]), "ring");
  EXPECT_EQ(std::get<std::string>(a["proto"]), "Simple");
  EXPECT_EQ(a.count("dtype"), 0u);  // 0: the producer did not say
  EXPECT_EQ(std::get<int64_t>(a["rank"]), 3);

  auto counters = Counters(spans);
  EXPECT_EQ(counters["gpuscope_training_traced_steps_total"], 1);
  EXPECT_EQ(counters["gpuscope_training_spans_total"], 2);
  EXPECT_TRUE(spans.TakeSpans(static_cast<int64_t>(end) + 4 * kSecond, "node-7").empty());  // once
}

TEST(TrainingSpans, NoStepIsSlowBeforeFiveStepsMakeABaseline) {
  TrainingSpans spans(TrainingSpansOptions{});
  const uint64_t end = Feed(spans, {0.1, 1.0, 3.0, 9.0, 20.0});
  EXPECT_TRUE(spans.TakeSpans(static_cast<int64_t>(end) + 3 * kSecond, "n").empty());
}

TEST(TrainingSpans, AllTracesEveryStepAndOffTracesNone) {
  TrainingSpansOptions all;
  all.traces = TrainingTraces::kAll;
  TrainingSpans every(all);
  uint64_t end = Feed(every, {1.0, 1.0, 1.0});
  std::vector<Span> out = every.TakeSpans(static_cast<int64_t>(end) + 3 * kSecond, "n");
  ASSERT_EQ(out.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[2 * i].trace_id, TrainingStepTraceId("4242", i));
    EXPECT_EQ(std::get<std::string>(Attributes(out[2 * i])["gpuscope.traced"]), "all");
    EXPECT_EQ(Attributes(out[2 * i]).count("gpuscope.median_step_seconds"), 0u);  // no baseline yet
  }

  TrainingSpansOptions off;
  off.traces = TrainingTraces::kOff;
  TrainingSpans none(off);
  end = Feed(none, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0});
  EXPECT_TRUE(none.TakeSpans(static_cast<int64_t>(end) + 3 * kSecond, "n").empty());
  EXPECT_EQ(none.ranks(), 0u);  // nothing kept
}

TEST(TrainingSpans, SpansWaitTheGraceForCompletionsSentAfterTheStepRecord) {
  TrainingSpansOptions options;
  options.traces = TrainingTraces::kAll;
  TrainingSpans spans(options);
  const uint64_t begin = kT0, end = kT0 + kSecond;
  TrainingDatagram entered;
  entered.collectives.push_back(AllReduce(1, begin + kSecond / 2, 0));  // entry only
  entered.collectives.push_back(AllReduce(2, begin + kSecond / 2, 0));  // never completed
  spans.Apply(Rank3(), entered, static_cast<int64_t>(begin + kSecond / 2));
  TrainingDatagram step;
  step.steps.push_back({0, begin, end, 8});
  spans.Apply(Rank3(), step, static_cast<int64_t>(end));
  // The completion of seq 1 comes 1 s after the step's record (the NCCL plugin's own datagram).
  EXPECT_TRUE(spans.TakeSpans(static_cast<int64_t>(end) + kSecond, "n").empty());  // within the grace
  TrainingDatagram completed;
  completed.collectives.push_back(AllReduce(1, begin + kSecond / 2, end));
  spans.Apply(Rank3(), completed, static_cast<int64_t>(end) + kSecond);
  const std::vector<Span> out = spans.TakeSpans(static_cast<int64_t>(end) + 2 * kSecond, "n");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].span_id, TrainingCollectiveSpanId("4242", 3, kComm, 1));
  EXPECT_EQ(out[1].status, SpanStatusCode::kUnset);
  EXPECT_EQ(out[1].end_unix_ns, end);
  EXPECT_EQ(out[2].span_id, TrainingCollectiveSpanId("4242", 3, kComm, 2));
  EXPECT_EQ(out[2].status, SpanStatusCode::kError);
  EXPECT_EQ(out[2].status_message,
            "entered, no completion reported by 2000 ms after the step ended (the span "
            "ends with the step)");
  EXPECT_EQ(out[2].end_unix_ns, end);
  // Only the completed collective's time is inside collectives.
  EXPECT_NEAR(std::get<double>(Attributes(out[0])["gpuscope.collective_seconds"]), 0.5, 1e-9);
}

TEST(TrainingSpans, StepsPastTheSpansPerSecondAreDroppedAndCountedUntilTheBucketRefills) {
  TrainingSpansOptions options;
  options.traces = TrainingTraces::kAll;
  options.max_spans_per_second = 5;  // a step here is 2 spans: two steps fit in the burst, not three
  TrainingSpans spans(options);
  const int64_t now = static_cast<int64_t>(kT0) + 10 * kSecond;
  for (uint64_t i = 0; i < 3; ++i) spans.Apply(Rank3(), Step(i, kT0 + i * kSecond, 1.0), now);
  EXPECT_EQ(spans.TakeSpans(now + 3 * kSecond, "n").size(), 4u);
  auto counters = Counters(spans);
  EXPECT_EQ(counters["gpuscope_training_spans_dropped_total{rate_limit}"], 2);
  EXPECT_EQ(counters["gpuscope_training_traced_steps_total"], 2);
  // One second later the bucket holds five again.
  spans.Apply(Rank3(), Step(3, kT0 + 3 * kSecond, 1.0), now + kSecond);
  EXPECT_EQ(spans.TakeSpans(now + 4 * kSecond, "n").size(), 2u);
  EXPECT_EQ(Counters(spans)["gpuscope_training_spans_dropped_total{rate_limit}"], 2);
}

TEST(TrainingSpans, AStepKeepsItsLongestCollectivesUpToTheSpansPerStep) {
  TrainingSpansOptions options;
  options.traces = TrainingTraces::kAll;
  options.max_collective_spans_per_step = 2;
  TrainingSpans spans(options);
  TrainingDatagram d;
  // Five collectives of 10, 50, 20, 40 and 30 ms.
  const uint64_t ms = 1'000'000;
  const uint64_t lengths[] = {10, 50, 20, 40, 30};
  for (uint64_t i = 0; i < 5; ++i)
    d.collectives.push_back(AllReduce(i, kT0 + i * 100 * ms, kT0 + (i * 100 + lengths[i]) * ms));
  d.steps.push_back({0, kT0, kT0 + kSecond, 1});
  spans.Apply(Rank3(), d, static_cast<int64_t>(kT0 + kSecond));
  const std::vector<Span> out = spans.TakeSpans(static_cast<int64_t>(kT0) + 4 * kSecond, "n");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(Attributes(out[1])["seq"]), 1);  // 50 ms, in time order
  EXPECT_EQ(std::get<int64_t>(Attributes(out[2])["seq"]), 3);  // 40 ms
  EXPECT_EQ(std::get<int64_t>(Attributes(out[0])["gpuscope.collectives"]), 5);
  EXPECT_EQ(std::get<int64_t>(Attributes(out[0])["gpuscope.collectives_omitted"]), 3);
  EXPECT_NEAR(std::get<double>(Attributes(out[0])["gpuscope.collective_seconds"]), 0.150, 1e-9);  // all five
  EXPECT_EQ(Counters(spans)["gpuscope_training_spans_dropped_total{step_limit}"], 3);
}

TEST(TrainingSpans, MemoryPerRankIsBoundedAndASilentRankIsForgotten) {
  TrainingSpansOptions options;
  options.traces = TrainingTraces::kAll;
  options.collectives_kept = 4;
  TrainingSpans spans(options);
  TrainingDatagram d;
  for (uint64_t i = 0; i < 100; ++i)
    d.collectives.push_back(AllReduce(i, kT0 + i * 1000, kT0 + i * 1000 + 500));
  d.steps.push_back({0, kT0, kT0 + kSecond, 1});
  spans.Apply(Rank3(), d, static_cast<int64_t>(kT0 + kSecond));
  const std::vector<Span> out = spans.TakeSpans(static_cast<int64_t>(kT0) + 4 * kSecond, "n");
  ASSERT_EQ(out.size(), 5u);  // the step and the 4 collectives kept: the latest
  EXPECT_EQ(std::get<int64_t>(Attributes(out[1])["seq"]), 96);
  EXPECT_EQ(spans.ranks(), 1u);
  spans.TakeSpans(static_cast<int64_t>(kT0) + 700 * kSecond, "n");
  EXPECT_EQ(spans.ranks(), 0u);
}

TEST(TrainingSpans, AStepStampedAtTheEndOfTimeWaitsOnItsOwnRankOnlyAndOverflowsNothing) {
  TrainingSpansOptions options;
  options.traces = TrainingTraces::kAll;
  TrainingSpans spans(options);
  TrainingDatagram hostile;
  hostile.collectives.push_back(AllReduce(0, kT0, UINT64_MAX));
  hostile.steps.push_back({0, kT0, UINT64_MAX, 1});
  spans.Apply(TrainingIdentity{"4242", 0, "0", "GPU-0"}, hostile, static_cast<int64_t>(kT0));
  spans.Apply(Rank3(), Step(0, kT0, 1.0), static_cast<int64_t>(kT0 + kSecond));
  const std::vector<Span> out = spans.TakeSpans(static_cast<int64_t>(kT0) + 4 * kSecond, "n");
  ASSERT_EQ(out.size(), 2u);  // rank 3's step and its all-reduce; rank 0's step waits for its end
  EXPECT_EQ(out[0].span_id, TrainingStepSpanId("4242", 0, 3));
}

TEST(TrainingSpans, TracesWordsParseAndNcclCodesHaveNames) {
  EXPECT_EQ(ParseTrainingTraces("slow"), TrainingTraces::kSlow);
  EXPECT_EQ(ParseTrainingTraces("all"), TrainingTraces::kAll);
  EXPECT_EQ(ParseTrainingTraces("off"), TrainingTraces::kOff);
  EXPECT_EQ(ParseTrainingTraces("some"), std::nullopt);
  EXPECT_EQ(TrainingSpans::AlgoName(1), "tree");
  EXPECT_EQ(TrainingSpans::AlgoName(7), "pat");
  EXPECT_EQ(TrainingSpans::AlgoName(0), "");
  EXPECT_EQ(TrainingSpans::AlgoName(8), "");
  EXPECT_EQ(TrainingSpans::ProtoName(1), "LL");
  EXPECT_EQ(TrainingSpans::ProtoName(2), "LL128");
  EXPECT_EQ(TrainingSpans::ProtoName(4), "");
}

}  // namespace
}  // namespace gpuscope
