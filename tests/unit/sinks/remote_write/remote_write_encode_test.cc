#include "src/sinks/remote_write/remote_write_encode.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <bit>
#include <cmath>
#include <string>

#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope {
namespace {

using testing::FieldsNumbered;
using testing::ParseProtoFields;

RemoteWriteBatch TinyBatch() {
  RemoteWriteBatch batch;
  batch.series.push_back({{{"__name__", "up"}, {"job", "a"}}, 1.0, 1000, 0});
  return batch;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

// prometheus.WriteRequest{timeseries: [{labels: [__name__=up, job=a], samples: [{1.0, 1000}]}]}, byte
// for byte as the protobuf encoding rules give it.
TEST(RemoteWriteEncodeTest, V1TinyRequestHasTheExactBytes) {
  const std::string expected = Bytes(
      {0x0a, 0x28,  // timeseries, 40
       0x0a, 0x0e, 0x0a, 0x08, '_', '_', 'n', 'a',  'm',  'e',  '_',  '_',  0x12, 0x02, 'u', 'p',  // label
       0x0a, 0x08, 0x0a, 0x03, 'j', 'o', 'b', 0x12, 0x01, 'a',                                     // label
       0x12, 0x0c, 0x09, 0,    0,   0,   0,   0,    0,    0xf0, 0x3f, 0x10, 0xe8, 0x07});          // sample
  EXPECT_EQ(EncodeWriteRequestV1(TinyBatch()), expected);
}

// io.prometheus.write.v2.Request{symbols: ["", __name__, up, job, a], timeseries: [{labels_refs:
// [1,2,3,4], samples: [{1.0, 1000}]}]}.
TEST(RemoteWriteEncodeTest, V2TinyRequestHasTheExactBytes) {
  const std::string expected =
      Bytes({0x22, 0x00, 0x22, 0x08, '_', '_', 'n', 'a',  'm',  'e',  '_',  '_',  0x22, 0x02,
             'u',  'p',  0x22, 0x03, 'j', 'o', 'b', 0x22, 0x01, 'a',  // symbols
             0x2a, 0x14, 0x0a, 0x04, 1,   2,   3,   4,                // series, labels_refs
             0x12, 0x0c, 0x09, 0,    0,   0,   0,   0,    0,    0xf0, 0x3f, 0x10, 0xe8, 0x07});  // sample
  EXPECT_EQ(EncodeRequestV2(TinyBatch()), expected);
}

TEST(RemoteWriteEncodeTest, V1CarriesMetadataWithTypeHelpAndUnit) {
  RemoteWriteBatch batch = TinyBatch();
  batch.metadata.push_back({"up", MetricType::kCounter, "help text", "seconds"});
  const std::string encoded = EncodeWriteRequestV1(batch);
  const auto fields = ParseProtoFields(encoded);
  ASSERT_TRUE(fields.has_value());
  const auto metadata = FieldsNumbered(*fields, 3);
  ASSERT_EQ(metadata.size(), 1u);
  const auto m = ParseProtoFields(metadata[0].bytes);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(FieldsNumbered(*m, 1).at(0).scalar, 1u);  // COUNTER
  EXPECT_EQ(FieldsNumbered(*m, 2).at(0).bytes, "up");
  EXPECT_EQ(FieldsNumbered(*m, 4).at(0).bytes, "help text");
  EXPECT_EQ(FieldsNumbered(*m, 5).at(0).bytes, "seconds");
}

TEST(RemoteWriteEncodeTest, V2MetadataRefersToSymbolsAndEmptyStringIsSymbolZero) {
  RemoteWriteBatch batch = TinyBatch();
  batch.metadata.push_back({"up", MetricType::kGauge, "help text", ""});
  const std::string encoded = EncodeRequestV2(batch);  // the fields are views into it
  const auto fields = ParseProtoFields(encoded);
  ASSERT_TRUE(fields.has_value());
  const auto symbols = FieldsNumbered(*fields, 4);
  ASSERT_GE(symbols.size(), 6u);
  EXPECT_EQ(symbols[0].bytes, "");
  const auto series = ParseProtoFields(FieldsNumbered(*fields, 5).at(0).bytes);
  ASSERT_TRUE(series.has_value());
  const auto metadata = ParseProtoFields(FieldsNumbered(*series, 5).at(0).bytes);
  ASSERT_TRUE(metadata.has_value());
  EXPECT_EQ(FieldsNumbered(*metadata, 1).at(0).scalar, 2u);  // GAUGE
  EXPECT_EQ(symbols.at(FieldsNumbered(*metadata, 3).at(0).scalar).bytes, "help text");
  EXPECT_TRUE(FieldsNumbered(*metadata, 4).empty());  // no unit: ref 0, the default, left out
}

TEST(RemoteWriteEncodeTest, V2SharesOneSymbolPerDistinctString) {
  RemoteWriteBatch batch;
  for (int gpu = 0; gpu < 3; ++gpu) {
    batch.series.push_back({{{"__name__", "temp"}, {"gpu", std::to_string(gpu)}}, 40.0 + gpu, 5, 0});
  }
  const std::string encoded = EncodeRequestV2(batch);
  const auto fields = ParseProtoFields(encoded);
  ASSERT_TRUE(fields.has_value());
  // "", __name__, temp, gpu, 0, 1, 2.
  EXPECT_EQ(FieldsNumbered(*fields, 4).size(), 7u);
  EXPECT_EQ(FieldsNumbered(*fields, 5).size(), 3u);
}

TEST(RemoteWriteEncodeTest, V2SendsTheStartTimestampWhenKnown) {
  RemoteWriteBatch batch = TinyBatch();
  batch.series[0].start_timestamp_ms = 700;
  const std::string encoded = EncodeRequestV2(batch);
  const auto fields = ParseProtoFields(encoded);
  const auto series = ParseProtoFields(FieldsNumbered(*fields, 5).at(0).bytes);
  const auto sample = ParseProtoFields(FieldsNumbered(*series, 2).at(0).bytes);
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(FieldsNumbered(*sample, 3).at(0).scalar, 700u);
}

TEST(RemoteWriteEncodeTest, ConcatenatedV1RequestsDecodeAsOneWithEverySampleInOrder) {
  RemoteWriteBatch first = TinyBatch();
  RemoteWriteBatch second = TinyBatch();
  second.series[0].value = StaleMarker();
  second.series[0].timestamp_ms = 2000;
  second.metadata.push_back({"up", MetricType::kGauge, "h", ""});
  RemoteWriteBatch decoded;
  ASSERT_TRUE(DecodeWriteRequestV1(EncodeWriteRequestV1(first) + EncodeWriteRequestV1(second), &decoded));
  ASSERT_EQ(decoded.series.size(), 2u);
  EXPECT_EQ(decoded.series[0].labels, first.series[0].labels);
  EXPECT_EQ(decoded.series[0].value, 1.0);
  EXPECT_EQ(decoded.series[1].timestamp_ms, 2000);
  EXPECT_TRUE(IsStaleMarker(decoded.series[1].value));  // the exact NaN bits survive
  ASSERT_EQ(decoded.metadata.size(), 1u);
  EXPECT_EQ(decoded.metadata[0].type, MetricType::kGauge);
}

TEST(RemoteWriteEncodeTest, OnlyTheStaleBitPatternIsAStaleMarker) {
  EXPECT_TRUE(IsStaleMarker(StaleMarker()));
  EXPECT_FALSE(IsStaleMarker(std::nan("")));
  EXPECT_FALSE(IsStaleMarker(0.0));
  EXPECT_EQ(std::bit_cast<uint64_t>(StaleMarker()), 0x7ff0000000000002ull);
}

TEST(RemoteWriteEncodeTest, MalformedV1IsRefusedAndAppendsNothing) {
  RemoteWriteBatch batch;
  std::string bytes = EncodeWriteRequestV1(TinyBatch());
  bytes.pop_back();  // the last sample's timestamp is cut
  EXPECT_FALSE(DecodeWriteRequestV1(bytes, &batch));
  EXPECT_FALSE(DecodeWriteRequestV1(Bytes({0x0a, 0x7f}), &batch));  // length past the end
  EXPECT_TRUE(batch.series.empty());
}

TEST(RemoteWriteEncodeTest, SnappyBodyDecompressesToTheRequest) {
  const std::string raw = EncodeWriteRequestV1(TinyBatch());
  std::string back;
  const std::string compressed = SnappyCompress(raw);
  ASSERT_TRUE(snappy::Uncompress(compressed.data(), compressed.size(), &back));
  EXPECT_EQ(back, raw);
}

}  // namespace
}  // namespace gpuscope
