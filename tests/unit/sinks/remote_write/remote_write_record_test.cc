// The queue records and the request bodies made from runs of them: 2.0 records of one epoch, of several
// epochs, plain 1.0 records an older agent queued, and unreadable ones.
#include "src/sinks/remote_write/remote_write_record.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <tuple>
#include <vector>

#include "src/sinks/remote_write/remote_write_batcher.h"
#include "src/sinks/remote_write/remote_write_encode.h"
#include "tests/tools/push_receiver/proto_reader.h"
#include "tests/unit/sinks/remote_write/v2_request_reader.h"

namespace gpuscope {
namespace {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

Snapshot Temperatures(int gpus, double value) {
  MetricFamily family{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  for (int g = 0; g < gpus; ++g) family.samples.push_back({Labels{{"gpu", std::to_string(g)}}, value + g});
  return Snapshot::Of({family});
}

std::string RecordOf(RemoteWriteBatcher& batcher, const Snapshot& snapshot, int64_t timestamp_ms) {
  std::string record;
  batcher.Build(snapshot, timestamp_ms, &record);
  batcher.Committed(true);
  return record;
}

// What an agent before the 2.0 records queued for Temperatures(gpus, value): a plain 1.0 WriteRequest.
std::string PreUpgradeRecord(int gpus, double value, int64_t timestamp_ms) {
  RemoteWriteBatch batch;
  for (int g = 0; g < gpus; ++g) {
    batch.series.push_back(
        {{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", std::to_string(g)}},
         value + g,
         timestamp_ms,
         0});
  }
  batch.metadata.push_back({"DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).", ""});
  return EncodeWriteRequestV1(batch);
}

// (gpu label, value, timestamp) of every series of a 2.0 request.
std::vector<std::tuple<std::string, double, int64_t>> Samples(const std::vector<testing::V2Series>& series) {
  std::vector<std::tuple<std::string, double, int64_t>> out;
  for (const testing::V2Series& s : series) {
    EXPECT_EQ(s.labels.at(0), (std::pair<std::string, std::string>{"__name__", "DCGM_FI_DEV_GPU_TEMP"}));
    out.emplace_back(s.labels.at(2).second, std::bit_cast<double>(s.value_bits), s.timestamp_ms);
  }
  return out;
}

TEST(RemoteWriteRecordTest, TheV1RequestOfARecordIsByteForByteWhatTheBatchEncoderWrites) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  const std::string record = RecordOf(batcher, Temperatures(3, 40), 1796150000123);
  size_t unreadable = 0;
  EXPECT_EQ(RemoteWriteV1Writer().Request({record}, &unreadable), PreUpgradeRecord(3, 40, 1796150000123));
  EXPECT_EQ(unreadable, 0u);
}

TEST(RemoteWriteRecordTest, TheV1WriterReusesLabelsWithinAnEpochAndStartsOverOnAnother) {
  RemoteWriteBatcher first_run(LabelPairs{{"cluster", "c1"}});
  RemoteWriteV1Writer writer;
  size_t unreadable = 0;
  EXPECT_EQ(writer.Request({RecordOf(first_run, Temperatures(1, 40), 1000)}, &unreadable),
            PreUpgradeRecord(1, 40, 1000));
  EXPECT_EQ(writer.cached_series(), 1u);
  EXPECT_EQ(writer.Request({RecordOf(first_run, Temperatures(1, 50), 2000)}, &unreadable),
            PreUpgradeRecord(1, 50, 2000));  // from the kept labels
  EXPECT_EQ(writer.cached_series(), 1u);
  // After a restart the same refs name other strings: the power family numbers its name where the
  // temperature's stood (same help, same label names and values).
  RemoteWriteBatcher second_run(LabelPairs{{"cluster", "c1"}});
  MetricFamily power{"DCGM_FI_DEV_POWER_USAGE", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  power.samples.push_back({Labels{{"gpu", "0"}}, 300});
  const std::string record = RecordOf(second_run, Snapshot::Of({power}), 3000);
  RemoteWriteBatch v1;
  ASSERT_TRUE(DecodeWriteRequestV1(writer.Request({record}, &unreadable), &v1));
  ASSERT_EQ(v1.series.size(), 1u);
  EXPECT_EQ(v1.series[0].labels,
            (LabelPairs{{"__name__", "DCGM_FI_DEV_POWER_USAGE"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(v1.series[0].value, 300);
  EXPECT_EQ(unreadable, 0u);
}

TEST(RemoteWriteRecordTest, RecordsOfOneEpochJoinUnderTheLongestSymbolsTable) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  const std::string first = RecordOf(batcher, Temperatures(1, 40), 1000);
  const std::string second = RecordOf(batcher, Temperatures(3, 50), 2000);  // adds symbols "1" and "2"
  RemoteWriteRecordView a;
  RemoteWriteRecordView b;
  ASSERT_TRUE(ParseRemoteWriteRecord(first, &a));
  ASSERT_TRUE(ParseRemoteWriteRecord(second, &b));
  ASSERT_TRUE(a.is_v2 && b.is_v2);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_LT(a.symbols.size(), b.symbols.size());
  size_t unreadable = 0;
  std::string scratch;
  const std::string request(RemoteWriteRecordsToV2({first, second}, &scratch, &unreadable));
  EXPECT_EQ(request, std::string(b.symbols) + std::string(a.timeseries) + std::string(b.timeseries));
  const auto series = testing::ReadV2Request(request);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(Samples(*series), (std::vector<std::tuple<std::string, double, int64_t>>{
                                  {"0", 40, 1000}, {"0", 50, 2000}, {"1", 51, 2000}, {"2", 52, 2000}}));
  EXPECT_EQ((*series)[0].help, "GPU temperature (in C).");
}

TEST(RemoteWriteRecordTest, TheV2RequestOfOneRecordIsTheRecordItselfWithoutACopy) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  const std::vector<std::string> records = {RecordOf(batcher, Temperatures(2, 40), 1000)};
  RemoteWriteRecordView view;
  ASSERT_TRUE(ParseRemoteWriteRecord(records[0], &view));
  std::string scratch;
  size_t unreadable = 0;
  const std::string_view request = RemoteWriteRecordsToV2(records, &scratch, &unreadable);
  EXPECT_EQ(request.data(), view.symbols.data());
  EXPECT_EQ(request.data() + request.size(), records[0].data() + records[0].size());
  EXPECT_TRUE(scratch.empty());
  const auto series = testing::ReadV2Request(request);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(Samples(*series),
            (std::vector<std::tuple<std::string, double, int64_t>>{{"0", 40, 1000}, {"1", 41, 1000}}));
}

TEST(RemoteWriteRecordTest, RecordsOfDifferentEpochsAreMergedIntoOneTable) {
  RemoteWriteBatcher before_restart(LabelPairs{{"cluster", "c1"}});
  RemoteWriteBatcher after_restart(LabelPairs{{"cluster", "c1"}});
  const std::string first = RecordOf(before_restart, Temperatures(2, 40), 1000);
  const std::string second = RecordOf(after_restart, Temperatures(3, 50), 2000);
  RemoteWriteRecordView a;
  RemoteWriteRecordView b;
  ASSERT_TRUE(ParseRemoteWriteRecord(first, &a));
  ASSERT_TRUE(ParseRemoteWriteRecord(second, &b));
  EXPECT_NE(a.epoch, b.epoch);
  size_t unreadable = 0;
  std::string scratch;
  const auto series = testing::ReadV2Request(RemoteWriteRecordsToV2({first, second}, &scratch, &unreadable));
  EXPECT_EQ(unreadable, 0u);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(Samples(*series),
            (std::vector<std::tuple<std::string, double, int64_t>>{
                {"0", 40, 1000}, {"1", 41, 1000}, {"0", 50, 2000}, {"1", 51, 2000}, {"2", 52, 2000}}));
  EXPECT_EQ((*series)[4].help, "GPU temperature (in C).");
}

TEST(RemoteWriteRecordTest, PlainV1RecordsFromAnOlderAgentAreSentAsTheyAreOrConvertedTo2) {
  RemoteWriteBatcher batcher(LabelPairs{{"cluster", "c1"}});
  const std::string old_record = PreUpgradeRecord(2, 30, 1000);
  const std::string new_record = RecordOf(batcher, Temperatures(2, 40), 2000);
  size_t unreadable = 0;
  std::string scratch;
  EXPECT_EQ(RemoteWriteV1Writer().Request({old_record}, &unreadable), old_record);
  RemoteWriteBatch v1;
  ASSERT_TRUE(
      DecodeWriteRequestV1(RemoteWriteV1Writer().Request({old_record, new_record}, &unreadable), &v1));
  ASSERT_EQ(v1.series.size(), 4u);
  EXPECT_EQ(v1.series[1].value, 31);
  EXPECT_EQ(v1.series[2].value, 40);
  EXPECT_EQ(v1.series[2].labels, v1.series[0].labels);
  const auto v2 =
      testing::ReadV2Request(RemoteWriteRecordsToV2({old_record, new_record}, &scratch, &unreadable));
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(Samples(*v2), (std::vector<std::tuple<std::string, double, int64_t>>{
                              {"0", 30, 1000}, {"1", 31, 1000}, {"0", 40, 2000}, {"1", 41, 2000}}));
  EXPECT_EQ((*v2)[0].help, "GPU temperature (in C).");
  EXPECT_EQ(unreadable, 0u);
}

TEST(RemoteWriteRecordTest, AnUnreadableRecordIsLeftOutAndCounted) {
  RemoteWriteBatcher batcher(LabelPairs{});
  const std::string good = RecordOf(batcher, Temperatures(1, 40), 1000);
  const std::string unknown_version("\0\x07garbage", 9);
  std::string cut_series = good;
  cut_series.pop_back();
  for (const std::string& bad : {unknown_version, std::string("\0\x01", 2)}) {
    RemoteWriteRecordView view;
    EXPECT_FALSE(ParseRemoteWriteRecord(bad, &view));
  }
  size_t unreadable = 0;
  std::string scratch;
  RemoteWriteBatch v1;
  ASSERT_TRUE(DecodeWriteRequestV1(
      RemoteWriteV1Writer().Request({unknown_version, good, cut_series}, &unreadable), &v1));
  EXPECT_EQ(unreadable, 2u);
  EXPECT_EQ(v1.series.size(), 1u);
  unreadable = 0;
  const auto v2 =
      testing::ReadV2Request(RemoteWriteRecordsToV2({good, unknown_version}, &scratch, &unreadable));
  EXPECT_EQ(unreadable, 1u);
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->size(), 1u);
}

TEST(RemoteWriteRecordTest, SummaryCountsSamplesAndTheNewestTimestampInBothFormats) {
  RemoteWriteBatcher batcher(LabelPairs{});
  uint64_t samples = 0;
  int64_t timestamp_ms = 0;
  SummarizeRemoteWriteRecord(RecordOf(batcher, Temperatures(3, 40), 5000), &samples, &timestamp_ms);
  SummarizeRemoteWriteRecord(PreUpgradeRecord(2, 30, 4000), &samples, &timestamp_ms);
  EXPECT_EQ(samples, 5u);
  EXPECT_EQ(timestamp_ms, 5000);
}

}  // namespace
}  // namespace gpuscope
