// RemoteWriteBatcher: snapshots in, queue records out, read back through the 1.0 request they make
// (decoded by DecodeWriteRequestV1) and the 2.0 request (read by the test-side reader).
#include "src/sinks/remote_write/remote_write_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "src/sinks/remote_write/remote_write_encode.h"
#include "src/sinks/remote_write/remote_write_record.h"
#include "tests/unit/sinks/remote_write/v2_request_reader.h"

namespace gpuscope {
namespace {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

Labels Gpu(int gpu) {
  return Labels{{"gpu", std::to_string(gpu)}, {"UUID", "GPU-" + std::to_string(100 + gpu)}};
}

// Two families over `gpus`, with the label sets of `gpu_labels` (shared between the families, as the
// collectors share them).
Snapshot TwoFamilies(const std::vector<Labels>& gpu_labels, double value = 40) {
  MetricFamily temp{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  MetricFamily energy{"gpuscope_energy_joules_total", "Energy.", MetricType::kCounter, "joules", {}};
  for (const Labels& labels : gpu_labels) {
    temp.samples.push_back({labels, value});
    energy.samples.push_back({labels, value * 100});
  }
  return Snapshot::Of({temp, energy});
}

std::vector<Labels> Gpus(int count) {
  std::vector<Labels> out;
  for (int g = 0; g < count; ++g) out.push_back(Gpu(g));
  return out;
}

RemoteWriteBatch AsV1(const std::string& record) {
  size_t unreadable = 0;
  RemoteWriteBatch batch;
  EXPECT_TRUE(DecodeWriteRequestV1(RemoteWriteV1Writer().Request({record}, &unreadable), &batch));
  EXPECT_EQ(unreadable, 0u);
  return batch;
}

std::vector<testing::V2Series> AsV2(const std::string& record) {
  size_t unreadable = 0;
  std::string scratch;
  const auto series = testing::ReadV2Request(RemoteWriteRecordsToV2({record}, &scratch, &unreadable));
  EXPECT_EQ(unreadable, 0u);
  EXPECT_TRUE(series.has_value());
  return series.value_or(std::vector<testing::V2Series>{});
}

std::vector<std::string> StaleGpus(const RemoteWriteBatch& batch) {
  std::vector<std::string> out;
  for (const RemoteWriteSeries& s : batch.series) {
    if (!IsStaleMarker(s.value)) continue;
    for (const auto& [name, value] : s.labels) {
      if (name == "gpu") out.push_back(s.labels[0].second + "/" + value);
    }
  }
  return out;
}

TEST(RemoteWriteBatcherTest, RecordCarriesSortedLabelsWithNameAndExternalLabelsValuesAndMetadata) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  std::string record;
  const auto built = batcher.Build(TwoFamilies(Gpus(2)), 1796150000123, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.samples, 4u);
  EXPECT_EQ(built.stale_markers, 0u);

  const RemoteWriteBatch v1 = AsV1(record);
  ASSERT_EQ(v1.series.size(), 4u);
  EXPECT_EQ(v1.series[0].labels,
            (LabelPairs{
                {"UUID", "GPU-100"}, {"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(v1.series[0].value, 40);
  EXPECT_EQ(v1.series[0].timestamp_ms, 1796150000123);
  EXPECT_EQ(v1.series[3].labels[1].second, "gpuscope_energy_joules_total");
  EXPECT_EQ(v1.series[3].value, 4000);
  ASSERT_EQ(v1.metadata.size(), 2u);
  EXPECT_EQ(v1.metadata[0].family, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(v1.metadata[0].type, MetricType::kGauge);
  EXPECT_EQ(v1.metadata[0].help, "GPU temperature (in C).");
  EXPECT_EQ(v1.metadata[1].type, MetricType::kCounter);
  EXPECT_EQ(v1.metadata[1].unit, "joules");

  const auto v2 = AsV2(record);
  ASSERT_EQ(v2.size(), 4u);
  EXPECT_EQ(v2[1].labels,
            (LabelPairs{
                {"UUID", "GPU-101"}, {"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "1"}}));
  EXPECT_EQ(std::bit_cast<double>(v2[1].value_bits), 40);
  EXPECT_EQ(v2[1].timestamp_ms, 1796150000123);
  EXPECT_EQ(v2[1].type, 2u);  // GAUGE
  EXPECT_EQ(v2[1].help, "GPU temperature (in C).");
  EXPECT_EQ(v2[3].type, 1u);  // COUNTER
  EXPECT_EQ(v2[3].unit, "joules");
}

TEST(RemoteWriteBatcherTest, TheSteadyStateAddsNoSymbolsAndKeepsOneEntryPerSeries) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  const std::vector<Labels> gpus = Gpus(4);
  std::string first;
  batcher.Build(TwoFamilies(gpus, 40), 1796150000000, &first);
  batcher.Committed(true);
  const size_t symbols = batcher.symbols();
  std::string later;
  for (int interval = 1; interval <= 3; ++interval) {
    batcher.Build(TwoFamilies(gpus, 40 + interval), 1796150000000 + interval * 15000, &later);
    batcher.Committed(true);
  }
  EXPECT_EQ(batcher.symbols(), symbols);
  EXPECT_EQ(batcher.cached_series(), 8u);
  EXPECT_EQ(later.size(), first.size());  // same table, same series, only values and timestamps moved
  const RemoteWriteBatch v1 = AsV1(later);
  ASSERT_EQ(v1.series.size(), 8u);
  EXPECT_EQ(v1.series[2].value, 43);
  EXPECT_EQ(v1.series[2].timestamp_ms, 1796150045000);
}

TEST(RemoteWriteBatcherTest, ALabelSetRebuiltEveryIntervalIsStillTheSameSeries) {
  RemoteWriteBatcher batcher(LabelPairs{});
  std::string record;
  for (int interval = 0; interval < 3; ++interval) {
    const auto built = batcher.Build(TwoFamilies(Gpus(2)), 1000 + interval, &record);  // fresh sets
    batcher.Committed(true);
    EXPECT_EQ(built.stale_markers, 0u);
    EXPECT_EQ(built.samples, 4u);
  }
  EXPECT_EQ(batcher.cached_series(), 4u);
}

TEST(RemoteWriteBatcherTest, ASeriesThatDisappearsGetsOneStaleMarkerThenIsForgotten) {
  RemoteWriteBatcher batcher(LabelPairs{});
  const std::vector<Labels> gpus = Gpus(3);
  std::string record;
  batcher.Build(TwoFamilies(gpus), 1000, &record);
  batcher.Committed(true);
  auto built = batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 2000, &record);  // GPU 2 lost
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 2u);
  EXPECT_EQ(built.samples, 6u);
  const RemoteWriteBatch v1 = AsV1(record);
  EXPECT_EQ(StaleGpus(v1), (std::vector<std::string>{"GPU-102/2", "GPU-102/2"}));
  for (const RemoteWriteSeries& s : v1.series) EXPECT_EQ(s.timestamp_ms, 2000);
  const auto v2 = AsV2(record);
  ASSERT_EQ(v2.size(), 6u);
  EXPECT_EQ(v2[4].value_bits, kStaleNaNBits);
  EXPECT_EQ(v2[5].value_bits, kStaleNaNBits);

  built = batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 3000, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 0u);  // marked once, then forgotten
  EXPECT_EQ(batcher.cached_series(), 4u);
  // It comes back: an ordinary series again.
  built = batcher.Build(TwoFamilies(gpus), 4000, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.samples, 6u);
  EXPECT_TRUE(StaleGpus(AsV1(record)).empty());
}

// A step histogram per rank (buckets 0.1, 1, +Inf) with the rank's label sets, plus a gauge after it.
Snapshot Histograms(const std::vector<Labels>& ranks, uint64_t steps = 4) {
  static const auto buckets = HistogramBuckets::Make({0.1, 1});
  MetricFamily steps_family{"train_step_seconds", "Step time.", MetricType::kHistogram, "seconds", {}};
  MetricFamily after{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  for (const Labels& labels : ranks) {
    auto value = std::make_shared<HistogramValue>();
    value->buckets = buckets;
    value->counts = {1, steps - 1, steps};
    value->sum = 0.5 * static_cast<double>(steps);
    value->exemplars.resize(3);
    value->exemplars[0] = {Labels{{"trace_id", "0af7651916cd43dd8448eb211c80319c"}}, 0.05, 1};
    steps_family.samples.emplace_back(labels, std::move(value));
    after.samples.push_back({labels, 40});
  }
  return Snapshot::Of({steps_family, after});
}

TEST(RemoteWriteBatcherTest, AHistogramIsSentAsBucketCountAndSumSeriesWithHistogramMetadata) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  std::string record;
  const auto built = batcher.Build(Histograms({Gpu(0)}), 1796150000123, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.samples, 6u);  // 3 buckets, count, sum, the gauge

  const auto v2 = AsV2(record);
  ASSERT_EQ(v2.size(), 6u);
  const std::vector<std::pair<std::string, double>> expected = {{"train_step_seconds_bucket", 1},
                                                                {"train_step_seconds_bucket", 3},
                                                                {"train_step_seconds_bucket", 4},
                                                                {"train_step_seconds_count", 4},
                                                                {"train_step_seconds_sum", 2}};
  const std::vector<std::string> le = {"0.1", "1.0", "+Inf"};
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string name;
    std::string le_value = "<absent>";
    for (const auto& [label, value] : v2[i].labels) {
      if (label == "__name__") name = value;
      if (label == "le") le_value = value;
    }
    EXPECT_EQ(name, expected[i].first) << i;
    EXPECT_EQ(std::bit_cast<double>(v2[i].value_bits), expected[i].second) << i;
    EXPECT_EQ(le_value, i < 3 ? le[i] : "<absent>") << i;
    EXPECT_EQ(v2[i].type, 3u) << i;  // HISTOGRAM
    EXPECT_EQ(v2[i].help, "Step time.");
    EXPECT_EQ(v2[i].unit, "seconds");
  }
  EXPECT_EQ(v2[0].labels, (LabelPairs{{"UUID", "GPU-100"},
                                      {"__name__", "train_step_seconds_bucket"},
                                      {"cluster", "c1"},
                                      {"gpu", "0"},
                                      {"le", "0.1"}}));
  EXPECT_EQ(v2[5].type, 2u);  // the gauge after it is itself

  const RemoteWriteBatch v1 = AsV1(record);
  ASSERT_EQ(v1.series.size(), 6u);
  EXPECT_EQ(v1.series[2].value, 4);
  // 1.0 metadata names the histogram's family once, without the suffixes.
  ASSERT_EQ(v1.metadata.size(), 2u);
  EXPECT_EQ(v1.metadata[0].family, "train_step_seconds");
  EXPECT_EQ(v1.metadata[0].type, MetricType::kHistogram);
  EXPECT_EQ(v1.metadata[1].family, "DCGM_FI_DEV_GPU_TEMP");
}

TEST(RemoteWriteBatcherTest, HistogramSeriesAreFoundAgainEachIntervalAndStaleWhenTheirRankIsGone) {
  RemoteWriteBatcher batcher(LabelPairs{});
  const std::vector<Labels> ranks = Gpus(2);
  std::string first;
  batcher.Build(Histograms(ranks, 4), 1000, &first);
  batcher.Committed(true);
  const size_t symbols = batcher.symbols();
  std::string record;
  for (int interval = 1; interval <= 3; ++interval) {
    const auto built = batcher.Build(Histograms(ranks, 4 + interval), 1000 + interval, &record);
    batcher.Committed(true);
    EXPECT_EQ(built.samples, 12u);
    EXPECT_EQ(built.stale_markers, 0u);
  }
  EXPECT_EQ(batcher.symbols(), symbols);  // no new strings in the steady state
  EXPECT_EQ(batcher.cached_series(), 12u);
  EXPECT_EQ(record.size(), first.size());
  EXPECT_EQ(AsV1(record).series[2].value, 7);  // +Inf of rank 0 after 7 steps

  const auto built = batcher.Build(Histograms({ranks[0]}), 5000, &record);  // rank 1 ended
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 6u);  // its 3 buckets, count, sum and gauge
  EXPECT_EQ(StaleGpus(AsV1(record)).size(), 6u);
  batcher.Build(Histograms({ranks[0]}), 6000, &record);
  batcher.Committed(true);
  EXPECT_EQ(batcher.cached_series(), 6u);
}

TEST(RemoteWriteBatcherTest, AHistogramSampleWithItsOwnLeLabelOrNoCountsIsLeftOut) {
  RemoteWriteBatcher batcher(LabelPairs{});
  Snapshot good = Histograms({Labels{{"le", "5"}}, Gpu(1)});
  std::vector<MetricFamily> families;
  for (const MetricFamily* family : good.families()) families.push_back(*family);
  families[0].samples.emplace_back(Labels{{"gpu", "9"}}, 1.0);  // a number in a histogram family
  std::string record;
  const auto built = batcher.Build(Snapshot::Of(std::move(families)), 1000, &record);
  batcher.Committed(true);
  // The le="5" sample's buckets clash with le (left out) but its count and sum do not; gpu 9 has nothing.
  EXPECT_EQ(built.samples, 3u + 2u + 2u + 2u);
}

TEST(RemoteWriteBatcherTest, ARecordThatWasNotQueuedLeavesThePreviousOneAsTheMeasureForStaleMarkers) {
  RemoteWriteBatcher batcher(LabelPairs{});
  const std::vector<Labels> gpus = Gpus(3);
  std::string record;
  batcher.Build(TwoFamilies(gpus), 1000, &record);
  batcher.Committed(true);
  batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 2000, &record);
  batcher.Committed(false);  // lost to a queue error: its stale markers never left
  const auto built = batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 3000, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 2u);
  EXPECT_EQ(StaleGpus(AsV1(record)).size(), 2u);
}

TEST(RemoteWriteBatcherTest, InvalidNamesDuplicateLabelNamesAndRepeatedSeriesAreLeftOut) {
  MetricFamily bad_name{"1bad", "", MetricType::kGauge, "", {{Labels{{"gpu", "0"}}, 1}}};
  MetricFamily empty{"empty_family", "", MetricType::kGauge, "", {}};
  MetricFamily good{"good", "", MetricType::kGauge, "", {}};
  good.samples.push_back({Labels{{"gpu", "0"}}, 1});
  good.samples.push_back({Labels{{"__reserved", "x"}}, 2});               // invalid label name
  good.samples.push_back({Labels{{"gpu", "1"}, {"gpu", "2"}}, 3});        // duplicate label name
  good.samples.push_back({Labels{{"gpu", "0"}}, 4});                      // the same series again
  good.samples.push_back({Labels{{"cluster", "own"}, {"gpu", "3"}}, 5});  // has the external label's name
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  std::string record;
  const auto built = batcher.Build(Snapshot::Of({bad_name, empty, good}), 1000, &record);
  EXPECT_EQ(built.samples, 2u);
  const RemoteWriteBatch v1 = AsV1(record);
  ASSERT_EQ(v1.series.size(), 2u);
  EXPECT_EQ(v1.series[0].labels, (LabelPairs{{"__name__", "good"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(v1.series[0].value, 1);  // the first wins
  EXPECT_EQ(v1.series[1].labels, (LabelPairs{{"__name__", "good"}, {"cluster", "own"}, {"gpu", "3"}}));
}

TEST(RemoteWriteBatcherTest, ALabelWithAnEmptyValueIsLeftOffTheSeriesAndAnExternalLabelFillsIt) {
  MetricFamily family{"DCGM_FI_DEV_GPU_TEMP", "", MetricType::kGauge, "", {}};
  family.samples.push_back({Labels{{"GPU_I_ID", ""}, {"gpu", "0"}, {"hpc_job", ""}}, 40});
  family.samples.push_back({Labels{{"cluster", ""}, {"gpu", "1"}}, 41});
  family.samples.push_back({Labels{{"gpu", "0"}}, 42});  // the first series again, without its empty labels
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}, {"site", ""}});
  std::string record;
  const auto built = batcher.Build(Snapshot::Of({family}), 1000, &record);
  EXPECT_EQ(built.samples, 2u);
  const RemoteWriteBatch v1 = AsV1(record);
  ASSERT_EQ(v1.series.size(), 2u);
  EXPECT_EQ(v1.series[0].labels,
            (LabelPairs{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(v1.series[0].value, 40);
  EXPECT_EQ(v1.series[1].labels,
            (LabelPairs{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "1"}}));
}

TEST(RemoteWriteBatcherTest, ARestoredSetWithEmptyValuesIsTheSeriesWithoutThem) {
  RemoteWriteBatcher batcher(LabelPairs{});
  EXPECT_EQ(batcher.Restore({{{"__name__", "up"}, {"gpu", "0"}, {"hpc_job", ""}}}), 1u);
  EXPECT_EQ(batcher.QueuedSeries(), (std::vector<LabelPairs>{{{"__name__", "up"}, {"gpu", "0"}}}));
  MetricFamily up{"up", "", MetricType::kGauge, "", {}};
  up.samples.push_back({Labels{{"gpu", "0"}}, 1});
  std::string record;
  const auto built = batcher.Build(Snapshot::Of({up}), 2000, &record);
  EXPECT_EQ(built.stale_markers, 0u);  // still there: no stale marker for it
  EXPECT_EQ(built.samples, 1u);
}

TEST(RemoteWriteBatcherTest, ChurnStartsANewSymbolsTableHoldingOnlyLiveStrings) {
  RemoteWriteBatcher batcher(LabelPairs{});
  std::string record;
  RemoteWriteRecordView view;
  uint64_t first_epoch = 0;
  size_t peak = 0;
  // Every interval a new job: its series replaces the previous job's (which gets its stale marker); the
  // GPU's series lives through it all, across the new table.
  const Labels gpu{{"gpu", "0"}, {"UUID", "GPU-100"}};
  for (int job = 0; job < 1200; ++job) {
    MetricFamily info{"gpuscope_job_info", "", MetricType::kGauge, "", {}};
    info.samples.push_back({Labels{{"gpu", "0"}, {"hpc_job", std::to_string(job)}}, 1});
    MetricFamily up{"gpuscope_gpu_up", "Whether the GPU answers.", MetricType::kGauge, "", {{gpu, 1}}};
    batcher.Build(Snapshot::Of({info, up}), 1000 + job, &record);
    batcher.Committed(true);
    peak = std::max(peak, batcher.symbols());
    ASSERT_TRUE(ParseRemoteWriteRecord(record, &view));
    if (job == 0) first_epoch = view.epoch;
  }
  EXPECT_NE(view.epoch, first_epoch);
  EXPECT_GT(peak, 1000u);
  EXPECT_LT(batcher.symbols(), 200u);
  const RemoteWriteBatch v1 = AsV1(record);  // the new table still reads right
  ASSERT_EQ(v1.series.size(), 3u);
  EXPECT_EQ(v1.series[0].labels,
            (LabelPairs{{"__name__", "gpuscope_job_info"}, {"gpu", "0"}, {"hpc_job", "1199"}}));
  EXPECT_EQ(v1.series[1].labels,
            (LabelPairs{{"UUID", "GPU-100"}, {"__name__", "gpuscope_gpu_up"}, {"gpu", "0"}}));
  EXPECT_EQ(v1.series[2].labels[2].second, "1198");
  EXPECT_TRUE(IsStaleMarker(v1.series[2].value));
  ASSERT_EQ(v1.metadata.size(), 2u);
  EXPECT_EQ(v1.metadata[1].help, "Whether the GPU answers.");
  EXPECT_EQ(batcher.cached_series(), 2u);
}

// The series of TwoFamilies(Gpus(count)) as a record of this batcher holds them (with cluster=c1).
std::vector<LabelPairs> QueuedGpuSeries(int count) {
  std::vector<LabelPairs> out;
  for (const char* name : {"DCGM_FI_DEV_GPU_TEMP", "gpuscope_energy_joules_total"}) {
    for (int g = 0; g < count; ++g) {
      out.push_back({{"UUID", "GPU-" + std::to_string(100 + g)},
                     {"__name__", name},
                     {"cluster", "c1"},
                     {"gpu", std::to_string(g)}});
    }
  }
  return out;
}

std::vector<LabelPairs> Sorted(std::vector<LabelPairs> series) {
  std::sort(series.begin(), series.end());
  return series;
}

TEST(RemoteWriteBatcherTest, RestoredSeriesMissingFromTheNextSnapshotGetOneStaleMarkerAndTheOthersNone) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  EXPECT_EQ(batcher.Restore(QueuedGpuSeries(3)), 6u);  // what an earlier run queued last
  const std::vector<Labels> gpus = Gpus(3);
  std::string record;
  auto built = batcher.Build(TwoFamilies({gpus[0]}), 2000, &record);  // GPUs 1 and 2 went meanwhile
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 4u);
  EXPECT_EQ(built.samples, 6u);
  const RemoteWriteBatch v1 = AsV1(record);
  std::vector<std::string> stale = StaleGpus(v1);
  std::sort(stale.begin(), stale.end());
  EXPECT_EQ(stale, (std::vector<std::string>{"GPU-101/1", "GPU-101/1", "GPU-102/2", "GPU-102/2"}));
  ASSERT_EQ(v1.series.size(), 6u);
  EXPECT_EQ(v1.series[0].labels, QueuedGpuSeries(1)[0]);  // GPU 0 carries on: a value, no marker
  EXPECT_EQ(v1.series[0].value, 40);
  EXPECT_EQ(v1.series[1].value, 4000);
  for (const RemoteWriteSeries& s : v1.series) EXPECT_EQ(s.timestamp_ms, 2000);

  built = batcher.Build(TwoFamilies({gpus[0]}), 3000, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 0u);  // marked once, then forgotten
  EXPECT_EQ(built.samples, 2u);
  EXPECT_EQ(batcher.cached_series(), 2u);
}

TEST(RemoteWriteBatcherTest, WhatQueuedSeriesReadsRestoresTheSameStateInANewBatcher) {
  RemoteWriteBatcher before(LabelPairs{{"cluster", "c1"}});
  std::string record;
  before.Build(TwoFamilies(Gpus(3)), 1000, &record);
  before.Committed(true);
  EXPECT_EQ(Sorted(before.QueuedSeries()), Sorted(QueuedGpuSeries(3)));

  RemoteWriteBatcher after(LabelPairs{{"cluster", "c1"}});  // the restarted agent's
  EXPECT_EQ(after.Restore(before.QueuedSeries()), 6u);
  EXPECT_EQ(Sorted(after.QueuedSeries()), Sorted(QueuedGpuSeries(3)));
  const auto built = after.Build(TwoFamilies(Gpus(3), 41), 2000, &record);  // nothing went
  after.Committed(true);
  EXPECT_EQ(built.stale_markers, 0u);
  EXPECT_EQ(built.samples, 6u);
  EXPECT_EQ(AsV1(record).series.size(), 6u);
  EXPECT_EQ(after.cached_series(), 6u);
  EXPECT_EQ(after.queued_series_changes(), 0u);  // the same set: nothing to write again
}

TEST(RemoteWriteBatcherTest, TheChangeCountMovesWhenAQueuedRecordsSeriesDifferFromThePreviousOnes) {
  RemoteWriteBatcher batcher(LabelPairs{});
  const std::vector<Labels> gpus = Gpus(3);
  std::string record;
  EXPECT_EQ(batcher.queued_series_changes(), 0u);
  batcher.Build(TwoFamilies(gpus), 1000, &record);
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 1u);          // from none to 6
  batcher.Build(TwoFamilies(Gpus(3), 41), 2000, &record);  // the same series in new label sets
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 1u);
  batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 3000, &record);  // one gone
  batcher.Committed(false);                                       // but not queued
  EXPECT_EQ(batcher.queued_series_changes(), 1u);
  EXPECT_EQ(batcher.QueuedSeries().size(), 6u);  // the last queued record's are still the measure
  batcher.Build(TwoFamilies({gpus[0], gpus[1]}), 4000, &record);
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 2u);
  EXPECT_EQ(batcher.QueuedSeries().size(), 4u);
  batcher.Build(TwoFamilies({gpus[0], gpus[2]}), 5000, &record);  // one gone, one back: as many as before
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 3u);
  batcher.Build(Snapshot::Of({}), 6000, &record);  // everything gone
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 4u);
  EXPECT_TRUE(batcher.QueuedSeries().empty());
  batcher.Build(Snapshot::Of({}), 7000, &record);
  batcher.Committed(true);
  EXPECT_EQ(batcher.queued_series_changes(), 4u);
}

TEST(RemoteWriteBatcherTest, RestoreLeavesOutLabelSetsNoRecordCouldHoldAndDropsWhatWasCached) {
  RemoteWriteBatcher batcher(LabelPairs{});
  std::string record;
  batcher.Build(TwoFamilies(Gpus(2)), 1000, &record);
  batcher.Committed(true);
  const std::vector<LabelPairs> series = {
      {{"__name__", "up"}, {"gpu", "0"}},                // kept
      {{"gpu", "0"}, {"__name__", "up"}},                // not sorted
      {{"gpu", "0"}},                                    // no __name__
      {{"__name__", "1up"}, {"gpu", "0"}},               // invalid metric name
      {{"__name__", "up"}, {"__x", "0"}},                // invalid label name
      {{"__name__", "up"}, {"gpu", "0"}, {"gpu", "1"}},  // a repeated name
      {{"__name__", "up"}, {"gpu", "0"}},                // the first again
  };
  EXPECT_EQ(batcher.Restore(series), 1u);
  EXPECT_EQ(batcher.cached_series(), 1u);  // the earlier record's series are gone with the cache
  EXPECT_EQ(batcher.QueuedSeries(), (std::vector<LabelPairs>{{{"__name__", "up"}, {"gpu", "0"}}}));
  const auto built = batcher.Build(TwoFamilies(Gpus(2)), 2000, &record);
  batcher.Committed(true);
  EXPECT_EQ(built.stale_markers, 1u);  // up{gpu="0"}; the cache's series are no longer "last queued"
  EXPECT_EQ(built.samples, 5u);
}

TEST(RemoteWriteBatcherTest, QueuedSeriesReadsRightAcrossANewSymbolsTable) {
  RemoteWriteBatcher batcher(LabelPairs{});
  std::string record;
  RemoteWriteRecordView view;
  uint64_t first_epoch = 0;
  const Labels gpu{{"gpu", "0"}, {"UUID", "GPU-100"}};
  for (int job = 0; job < 1200; ++job) {
    MetricFamily info{"gpuscope_job_info", "", MetricType::kGauge, "", {}};
    info.samples.push_back({Labels{{"gpu", "0"}, {"hpc_job", std::to_string(job)}}, 1});
    MetricFamily up{"gpuscope_gpu_up", "", MetricType::kGauge, "", {{gpu, 1}}};
    batcher.Build(Snapshot::Of({info, up}), 1000 + job, &record);
    batcher.Committed(true);
    ASSERT_TRUE(ParseRemoteWriteRecord(record, &view));
    if (job == 0) first_epoch = view.epoch;
  }
  ASSERT_NE(view.epoch, first_epoch);
  EXPECT_EQ(
      Sorted(batcher.QueuedSeries()),
      (std::vector<LabelPairs>{{{"UUID", "GPU-100"}, {"__name__", "gpuscope_gpu_up"}, {"gpu", "0"}},
                               {{"__name__", "gpuscope_job_info"}, {"gpu", "0"}, {"hpc_job", "1199"}}}));
}

}  // namespace
}  // namespace gpuscope
