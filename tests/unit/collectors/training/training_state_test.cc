// TrainingState (src/collectors/training/training_state.h): the straggler score names the rank whose own
// work is slow although every rank's step takes the same time, a rank behind on a communicator is hung
// only after the threshold, and memory stays bounded whatever a producer sends.
#include "src/collectors/training/training_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "src/collectors/training/trace_ids.h"

namespace gpuscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kT0 = 1'700'000'000ull * kSecond;

TrainingIdentity Rank(int32_t rank, std::string job = "100") {
  return TrainingIdentity{std::move(job), rank, std::to_string(rank), "GPU-" + std::to_string(rank)};
}

// One synchronous step of `rank`: its own work for `compute_s`, then an all_reduce that lasts until the
// common step end.
TrainingDatagram Step(uint64_t number, uint64_t begin, double step_s, double compute_s, uint64_t seq) {
  TrainingDatagram datagram;
  const uint64_t end = begin + static_cast<uint64_t>(step_s * kSecond);
  TrainingCollective c;
  c.comm = 0xC0FFEE;
  c.seq = seq;
  c.op = 4;
  c.bytes = 100 << 20;
  c.begin_ns = begin + static_cast<uint64_t>(compute_s * kSecond);
  c.end_ns = end;
  datagram.collectives.push_back(c);
  datagram.steps.push_back({number, begin, end, 32});
  return datagram;
}

// {family: {label string: value}}; a histogram as its _count and _sum.
std::map<std::string, std::map<std::string, double>> Render(TrainingState& state, int64_t now) {
  std::vector<MetricFamily> families;
  state.AppendFamilies(now, families);
  std::map<std::string, std::map<std::string, double>> out;
  for (const MetricFamily& family : families) {
    for (const Sample& sample : family.samples) {
      std::string key;
      for (const auto& [name, value] : sample.labels) {
        if (name == "rank" || name == "comm" || name == "op" || name == "size")
          key += name + "=" + value + ",";
      }
      if (sample.histogram) {
        out[family.name + "_count"][key] = static_cast<double>(sample.histogram->count());
        out[family.name + "_sum"][key] = sample.histogram->sum;
        continue;
      }
      out[family.name][key] = sample.value;
    }
  }
  return out;
}

TEST(TrainingState, TheRankSlowOnItsOwnWorkScoresLowThoughEveryStepTakesTheSameTime) {
  TrainingStateOptions options;
  options.hostname = "node1";
  TrainingState state(options);
  // As measured with DDP/gloo: step 0.099 s everywhere; the slow rank spends 0.030 s in the collective,
  // the others 0.074 s, so their own work takes 0.069 s vs 0.025 s.
  for (uint64_t step = 0; step < 30; ++step) {
    const uint64_t begin = kT0 + step * kSecond;
    for (int32_t rank = 0; rank < 4; ++rank) {
      const double compute = rank == 2 ? 0.069 : 0.025;
      state.Apply(Rank(rank), Step(step, begin, 0.099, compute, step), static_cast<int64_t>(begin) + kSecond);
    }
  }
  auto families = Render(state, static_cast<int64_t>(kT0) + 31 * kSecond);
  const auto& score = families["gpuscope_training_relative_score"];
  EXPECT_DOUBLE_EQ(score.at("rank=0,"), 1.0);
  EXPECT_DOUBLE_EQ(score.at("rank=1,"), 1.0);
  EXPECT_NEAR(score.at("rank=2,"), 0.025 / 0.069, 1e-6);
  EXPECT_NEAR(families["gpuscope_training_compute_seconds_median"].at("rank=2,"), 0.069, 1e-6);
  EXPECT_EQ(families["gpuscope_training_steps_total"].at("rank=3,"), 30);
  EXPECT_EQ(families["gpuscope_training_samples_total"].at("rank=3,"), 30 * 32);
  EXPECT_NEAR(families["gpuscope_training_step_duration_seconds_sum"].at("rank=2,"), 30 * 0.099, 1e-6);
  EXPECT_NEAR(families["gpuscope_training_collective_in_step_seconds_total"].at("rank=2,"), 30 * 0.030, 1e-6);
  EXPECT_EQ(families["gpuscope_training_collective_duration_seconds_count"].at(
                "rank=0,op=all_reduce,size=ge_64MiB,"),
            30);
}

TEST(TrainingState, ARankSlowerThanItUsedToBeScoresLowOnItsHistoryEvenWhenItIsTheFastest) {
  TrainingStateOptions options;
  options.history_window = 100;
  TrainingState state(options);
  // A one-rank job (or every rank of a slowed node): its relative score stays 1.
  auto run = [&](uint64_t from, uint64_t to, double compute) {
    for (uint64_t step = from; step < to; ++step) {
      const uint64_t begin = kT0 + step * kSecond;
      state.Apply(Rank(0), Step(step, begin, compute + 0.01, compute, step), static_cast<int64_t>(begin));
    }
  };
  run(0, 39, 0.02);
  auto families = Render(state, static_cast<int64_t>(kT0) + 39 * kSecond);
  EXPECT_FALSE(families.count("gpuscope_training_history_score")) << "no history before 2 x score_window";
  run(39, 80, 0.02);
  families = Render(state, static_cast<int64_t>(kT0) + 80 * kSecond);
  EXPECT_DOUBLE_EQ(families["gpuscope_training_history_score"].at("rank=0,"), 1.0);
  run(80, 100, 0.05);  // the last 20 steps (the score window) are 2.5x slower
  families = Render(state, static_cast<int64_t>(kT0) + 100 * kSecond);
  EXPECT_DOUBLE_EQ(families["gpuscope_training_relative_score"].at("rank=0,"), 1.0);
  EXPECT_NEAR(families["gpuscope_training_history_score"].at("rank=0,"), 0.02 / 0.05, 1e-9);
  run(100, 300, 0.01);  // faster than ever: capped at 1, and the slow spell has left the history
  families = Render(state, static_cast<int64_t>(kT0) + 300 * kSecond);
  EXPECT_DOUBLE_EQ(families["gpuscope_training_history_score"].at("rank=0,"), 1.0);
}

TEST(TrainingState, StepDurationsFillFixedBucketsEachWithTheTraceOfItsLatestStep) {
  TrainingState state({});
  // Steps 0-2 take 0.03 s, step 3 takes 0.2 s, step 4 takes 0.04 s (the latest in the 0.05 bucket).
  const double seconds[] = {0.03, 0.03, 0.03, 0.2, 0.04};
  for (uint64_t step = 0; step < 5; ++step) {
    const uint64_t begin = kT0 + step * kSecond;
    state.Apply(Rank(1, "777"), Step(step, begin, seconds[step], seconds[step] / 2, step),
                static_cast<int64_t>(begin));
  }
  std::vector<MetricFamily> families;
  state.AppendFamilies(static_cast<int64_t>(kT0), families);
  const MetricFamily* steps = nullptr;
  for (const MetricFamily& family : families) {
    if (family.name == "gpuscope_training_step_duration_seconds") steps = &family;
  }
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->type, MetricType::kHistogram);
  ASSERT_EQ(steps->samples.size(), 1u);
  const HistogramValue& value = *steps->samples[0].histogram;
  EXPECT_EQ(value.buckets, TrainingState::StepBuckets());
  ASSERT_EQ(value.buckets->bounds().front(), 0.01);
  ASSERT_EQ(value.buckets->bounds().back(), 600);
  // Buckets 0.01, 0.025, 0.05, 0.1, 0.25, ...: cumulative.
  EXPECT_EQ(value.counts[0], 0u);
  EXPECT_EQ(value.counts[1], 0u);
  EXPECT_EQ(value.counts[2], 4u);
  EXPECT_EQ(value.counts[3], 4u);
  EXPECT_EQ(value.counts[4], 5u);
  EXPECT_EQ(value.count(), 5u);
  ASSERT_EQ(value.exemplars.size(), value.counts.size());
  const Exemplar& latest_fast = value.exemplars[2];
  EXPECT_EQ(latest_fast.labels, (Labels{{"trace_id", IdHex(TrainingStepTraceId("777", 4))}}));
  EXPECT_DOUBLE_EQ(latest_fast.value, 0.04);
  EXPECT_EQ(latest_fast.timestamp_ns, static_cast<int64_t>(kT0 + 4 * kSecond + 40'000'000));
  EXPECT_EQ(value.exemplars[4].labels, (Labels{{"trace_id", IdHex(TrainingStepTraceId("777", 3))}}));
  EXPECT_TRUE(value.exemplars[0].labels.empty());
}

TEST(TrainingState, ScoresAreComparedWithinAJobOnly) {
  TrainingState state({});
  for (uint64_t step = 0; step < 5; ++step) {
    const uint64_t begin = kT0 + step * kSecond;
    state.Apply(Rank(0, "100"), Step(step, begin, 0.5, 0.1, step), static_cast<int64_t>(kT0));
    state.Apply(Rank(0, "200"), Step(step, begin, 0.5, 0.4, step), static_cast<int64_t>(kT0));
  }
  auto families = Render(state, static_cast<int64_t>(kT0));
  for (const auto& [labels, value] : families["gpuscope_training_relative_score"])
    EXPECT_EQ(value, 1.0) << labels;
}

TEST(TrainingState, ARankBehindOnACommunicatorIsHungOnlyAfterTheThreshold) {
  TrainingStateOptions options;
  options.hang_after_ns = 60 * kSecond;
  TrainingState state(options);
  const int64_t t0 = static_cast<int64_t>(kT0);
  // Both ranks complete seq 0..7 together; then rank 1 stops and rank 0 completes 8..10.
  for (uint64_t seq = 0; seq <= 7; ++seq) {
    for (int32_t rank = 0; rank < 2; ++rank) state.Apply(Rank(rank), Step(seq, kT0, 1, 0.5, seq), t0);
  }
  for (uint64_t seq = 8; seq <= 10; ++seq)
    state.Apply(Rank(0), Step(seq, kT0, 1, 0.5, seq), t0 + 5 * kSecond);
  auto early = Render(state, t0 + 59 * kSecond);
  EXPECT_EQ(early["gpuscope_training_rank_hung"].at("rank=1,comm=0x0000000000c0ffee,"), 0);
  auto late = Render(state, t0 + 61 * kSecond);
  EXPECT_EQ(late["gpuscope_training_rank_hung"].at("rank=1,comm=0x0000000000c0ffee,"), 1);
  EXPECT_EQ(late["gpuscope_training_rank_hung"].at("rank=0,comm=0x0000000000c0ffee,"), 0)
      << "the rank ahead is not hung however long ago it advanced";
  EXPECT_EQ(late["gpuscope_training_collective_seq"].at("rank=1,comm=0x0000000000c0ffee,"), 7);
  EXPECT_EQ(late["gpuscope_training_collective_seq"].at("rank=0,comm=0x0000000000c0ffee,"), 10);
}

TEST(TrainingState, ARankThatNeverEntersTheNextCollectiveIsHungWhileTheOthersWaitInside) {
  TrainingStateOptions options;
  options.hang_after_ns = 60 * kSecond;
  TrainingState state(options);
  const int64_t t0 = static_cast<int64_t>(kT0);
  // All complete seq 4; ranks 0 and 1 enter seq 5 (blocked: rank 2 never calls it), nothing completes.
  for (int32_t rank = 0; rank < 3; ++rank) state.Apply(Rank(rank), Step(4, kT0, 1, 0.5, 4), t0);
  for (int32_t rank = 0; rank < 2; ++rank) {
    TrainingDatagram entered;
    TrainingCollective c;
    c.comm = 0xC0FFEE;
    c.seq = 5;
    c.begin_ns = kT0 + 2 * kSecond;
    entered.collectives.push_back(c);  // end 0: entered
    state.Apply(Rank(rank), entered, t0 + 2 * kSecond);
  }
  auto late = Render(state, t0 + 70 * kSecond);
  const auto& hung = late["gpuscope_training_rank_hung"];
  EXPECT_EQ(hung.at("rank=2,comm=0x0000000000c0ffee,"), 1);
  EXPECT_EQ(hung.at("rank=0,comm=0x0000000000c0ffee,"), 0);
  EXPECT_EQ(hung.at("rank=1,comm=0x0000000000c0ffee,"), 0);
  EXPECT_EQ(late["gpuscope_training_collectives_entered_total"].at("rank=0,"), 1);
}

TEST(TrainingState, EachHangEpisodeIsHandedOutOnceAndANewOneAfterTheRankMovedOn) {
  TrainingStateOptions options;
  options.hang_after_ns = 60 * kSecond;
  TrainingState state(options);
  const int64_t t0 = static_cast<int64_t>(kT0);
  // Both ranks complete seq 0..7; rank 1 stops, rank 0 goes on to 10.
  for (uint64_t seq = 0; seq <= 7; ++seq) {
    for (int32_t rank = 0; rank < 2; ++rank) state.Apply(Rank(rank), Step(seq, kT0, 1, 0.5, seq), t0);
  }
  for (uint64_t seq = 8; seq <= 10; ++seq)
    state.Apply(Rank(0), Step(seq, kT0, 1, 0.5, seq), t0 + 5 * kSecond);
  EXPECT_TRUE(state.TakeNewHangs(t0 + 59 * kSecond).empty()) << "not yet past the threshold";
  const std::vector<TrainingHang> hangs = state.TakeNewHangs(t0 + 61 * kSecond);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].job, "100");
  EXPECT_EQ(hangs[0].rank, 1);
  EXPECT_EQ(hangs[0].gpu, "1");
  EXPECT_EQ(hangs[0].uuid, "GPU-1");
  EXPECT_EQ(hangs[0].comm, 0xC0FFEEu);
  EXPECT_EQ(hangs[0].seq, 7u);
  EXPECT_EQ(hangs[0].op, 4);
  EXPECT_EQ(hangs[0].furthest_seq, 10u);
  EXPECT_DOUBLE_EQ(hangs[0].stalled_seconds, 61);
  // Every later cycle of the same episode: nothing new, though the gauge still says hung.
  for (int64_t later : {62, 120, 600}) EXPECT_TRUE(state.TakeNewHangs(t0 + later * kSecond).empty()) << later;
  EXPECT_EQ(
      Render(state, t0 + 130 * kSecond)["gpuscope_training_rank_hung"].at("rank=1,comm=0x0000000000c0ffee,"),
      1);
  // Rank 1 catches up to 8 (the episode ends), then stalls there while rank 0 is at 10: a new episode.
  state.Apply(Rank(1), Step(8, kT0, 1, 0.5, 8), t0 + 200 * kSecond);
  EXPECT_TRUE(state.TakeNewHangs(t0 + 230 * kSecond).empty());
  const std::vector<TrainingHang> again = state.TakeNewHangs(t0 + 261 * kSecond);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].seq, 8u);
  EXPECT_DOUBLE_EQ(again[0].stalled_seconds, 61);
}

TEST(TrainingState, ConcurrentCollectivesInAStepCountOnce) {
  TrainingState state({});
  TrainingDatagram datagram;
  // Two buckets all-reduced at once, [0.4, 0.9] and [0.5, 1.0] of a 1 s step: 0.6 s inside, 0.4 outside.
  for (auto [begin, end] : {std::pair{0.4, 0.9}, std::pair{0.5, 1.0}}) {
    TrainingCollective c;
    c.begin_ns = kT0 + static_cast<uint64_t>(begin * kSecond);
    c.end_ns = kT0 + static_cast<uint64_t>(end * kSecond);
    datagram.collectives.push_back(c);
  }
  datagram.steps.push_back({0, kT0, kT0 + kSecond, 1});
  state.Apply(Rank(0), datagram, static_cast<int64_t>(kT0));
  auto families = Render(state, static_cast<int64_t>(kT0));
  EXPECT_NEAR(families["gpuscope_training_collective_in_step_seconds_total"].at("rank=0,"), 0.6, 1e-9);
  EXPECT_NEAR(families["gpuscope_training_compute_seconds_total"].at("rank=0,"), 0.4, 1e-9);
}

TEST(TrainingState, CollectivesArrivingOutOfOrderFromTwoProducersCountInTheirStep) {
  TrainingStateOptions options;
  options.collectives_kept = 64;
  TrainingState state(options);
  auto collective = [](double begin, double end) {
    TrainingCollective c;
    c.begin_ns = kT0 + static_cast<uint64_t>(begin * kSecond);
    c.end_ns = kT0 + static_cast<uint64_t>(end * kSecond);
    return c;
  };
  // More collectives of earlier steps than the window keeps, so the step's own are at its end.
  TrainingDatagram earlier;
  for (int i = 0; i < 100; ++i) earlier.collectives.push_back(collective(-10.0 + 0.05 * i, -9.99 + 0.05 * i));
  state.Apply(Rank(0), earlier, static_cast<int64_t>(kT0));
  // The NCCL plugin's batch comes after the Python package's: ends out of order, and a late one of the
  // previous step. Inside the 1 s step: [0.2, 0.4] and the union of [0.6, 0.9] and [0.5, 0.7]: 0.6 s.
  TrainingDatagram python;
  python.collectives.push_back(collective(0.6, 0.9));
  state.Apply(Rank(0), python, static_cast<int64_t>(kT0));
  TrainingDatagram plugin;
  plugin.collectives.push_back(collective(0.2, 0.4));
  plugin.collectives.push_back(collective(-0.5, -0.1));
  plugin.collectives.push_back(collective(0.5, 0.7));
  plugin.steps.push_back({0, kT0, kT0 + kSecond, 1});
  state.Apply(Rank(0), plugin, static_cast<int64_t>(kT0));
  auto families = Render(state, static_cast<int64_t>(kT0));
  EXPECT_NEAR(families["gpuscope_training_collective_in_step_seconds_total"].at("rank=0,"), 0.6, 1e-9);
  EXPECT_NEAR(families["gpuscope_training_compute_seconds_total"].at("rank=0,"), 0.4, 1e-9);
}

TEST(TrainingState, MarksAddUpAndANonFiniteGradNormIsIgnored) {
  TrainingState state({});
  TrainingDatagram datagram;
  datagram.marks.push_back(
      {static_cast<uint8_t>(TrainingMarkKind::kCheckpoint), kT0, kT0 + 3 * kSecond, 5e9});
  datagram.marks.push_back(
      {static_cast<uint8_t>(TrainingMarkKind::kDataloaderWait), kT0, kT0 + kSecond / 2, 0});
  datagram.marks.push_back({static_cast<uint8_t>(TrainingMarkKind::kGradNorm), kT0, kT0, 1.25});
  datagram.marks.push_back({static_cast<uint8_t>(TrainingMarkKind::kGradNorm), kT0, kT0,
                            std::numeric_limits<double>::quiet_NaN()});
  datagram.marks.push_back({99, kT0, kT0 + kSecond, 1});  // an unknown kind
  state.Apply(Rank(0), datagram, static_cast<int64_t>(kT0));
  auto families = Render(state, static_cast<int64_t>(kT0));
  EXPECT_EQ(families["gpuscope_training_checkpoints_total"].at("rank=0,"), 1);
  EXPECT_EQ(families["gpuscope_training_checkpoint_bytes_total"].at("rank=0,"), 5e9);
  EXPECT_EQ(families["gpuscope_training_last_checkpoint_duration_seconds"].at("rank=0,"), 3);
  EXPECT_EQ(families["gpuscope_training_dataloader_wait_seconds_total"].at("rank=0,"), 0.5);
  EXPECT_EQ(families["gpuscope_training_grad_norm"].at("rank=0,"), 1.25);
}

TEST(TrainingState, HostileTimesAndCountsStayFiniteAndBounded) {
  TrainingStateOptions options;
  options.max_communicators = 8;
  options.collectives_kept = 16;
  TrainingState state(options);
  TrainingDatagram datagram;
  for (uint64_t comm = 0; comm < 1000; ++comm) {
    TrainingCollective c;
    c.comm = comm;
    c.seq = ~0ull - comm;
    c.op = 200;
    c.begin_ns = ~0ull;
    c.end_ns = 1;  // ends before it begins
    datagram.collectives.push_back(c);
  }
  datagram.collectives.push_back(TrainingCollective{});  // end 0: never completed
  datagram.steps.push_back({1, ~0ull, 0, ~0u});
  state.Apply(Rank(0), datagram, static_cast<int64_t>(kT0));
  auto families = Render(state, static_cast<int64_t>(kT0));
  EXPECT_EQ(families["gpuscope_training_collective_seq"].size(), 8u);
  EXPECT_EQ(
      families["gpuscope_training_collective_duration_seconds_count"].at("rank=0,op=other,size=lt_1MiB,"),
      1000);
  EXPECT_EQ(families["gpuscope_training_collective_duration_seconds_sum"].at("rank=0,op=other,size=lt_1MiB,"),
            0);
  EXPECT_EQ(families["gpuscope_training_collectives_entered_total"].at("rank=0,"), 1);
  EXPECT_EQ(families["gpuscope_training_step_duration_seconds_sum"].at("rank=0,"), 0);
  for (const auto& [family, samples] : families) {
    for (const auto& [labels, value] : samples) EXPECT_TRUE(std::isfinite(value)) << family << labels;
  }
}

TEST(TrainingState, ASilentRankIsForgottenWithItsSeries) {
  TrainingStateOptions options;
  options.rank_expiry_ns = 600 * kSecond;
  TrainingState state(options);
  state.Apply(Rank(0), Step(0, kT0, 1, 0.5, 0), static_cast<int64_t>(kT0));
  state.Apply(Rank(1), Step(0, kT0, 1, 0.5, 0), static_cast<int64_t>(kT0) + 300 * kSecond);
  auto families = Render(state, static_cast<int64_t>(kT0) + 601 * kSecond);
  EXPECT_EQ(state.ranks(), 1u);
  EXPECT_EQ(families["gpuscope_training_steps_total"].count("rank=0,"), 0u);
  EXPECT_EQ(families["gpuscope_training_steps_total"].count("rank=1,"), 1u);
}

TEST(TrainingState, EveryRenderedFamilyIsDescribedWithItsLabels) {
  TrainingState state({});
  TrainingDatagram datagram = Step(0, kT0, 1, 0.5, 0);
  datagram.marks.push_back({static_cast<uint8_t>(TrainingMarkKind::kCheckpoint), kT0, kT0 + 1, 1});
  datagram.marks.push_back({static_cast<uint8_t>(TrainingMarkKind::kGradNorm), kT0, kT0, 1});
  state.Apply(Rank(0), datagram, static_cast<int64_t>(kT0));
  for (uint64_t step = 1; step < 40; ++step) {  // enough for the history score (2 x score_window)
    state.Apply(Rank(0), Step(step, kT0 + step * kSecond, 1, 0.5, step), static_cast<int64_t>(kT0));
  }
  std::vector<MetricFamily> families;
  state.AppendFamilies(static_cast<int64_t>(kT0), families);
  std::map<std::string, MetricDescription> described;
  for (const MetricDescription& d : TrainingState::Describe()) described[d.name] = d;
  EXPECT_EQ(families.size(), described.size()) << "every family has a sample in this state";
  for (const MetricFamily& family : families) {
    ASSERT_TRUE(described.count(family.name)) << family.name;
    EXPECT_EQ(described[family.name].type, family.type) << family.name;
    for (const Sample& sample : family.samples) {
      std::vector<std::string> names;
      for (const auto& pair : sample.labels) names.push_back(pair.first);
      EXPECT_EQ(names, described[family.name].labels) << family.name;
    }
  }
}

}  // namespace
}  // namespace gpuscope
