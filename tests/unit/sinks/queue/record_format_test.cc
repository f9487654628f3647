#include "src/sinks/queue/record_format.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscope {
namespace {

std::string Records(std::initializer_list<std::string_view> payloads) {
  std::string out;
  int64_t t = 1000;
  for (auto p : payloads) EncodeQueueRecord(p, t++, &out);
  return out;
}

TEST(QueueRecordFormat, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), Crc32c("123456789"));
}

TEST(QueueRecordFormat, EncodedRecordsScanBackInOrderWithTimes) {
  std::string bytes = Records({"alpha", "", std::string(1000, 'x')});
  QueueScanResult r = ScanQueueRecords(bytes, QueueScanMode::kStopAtFirstBad);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].payload, "alpha");
  EXPECT_EQ(r.records[0].append_time_ms, 1000);
  EXPECT_EQ(r.records[1].payload, "");
  EXPECT_EQ(r.records[2].payload, std::string(1000, 'x'));
  EXPECT_EQ(r.valid_end, bytes.size());
  EXPECT_EQ(r.corrupt_records, 0u);
  EXPECT_EQ(r.stop_reason, QueueRecordStatus::kEnd);
}

TEST(QueueRecordFormat, TruncatedTailLosesOnlyTheLastRecord) {
  std::string bytes = Records({"one", "two", "three"});
  const size_t two_end = 2 * kQueueRecordHeaderSize + 6;
  for (size_t cut = two_end + 1; cut < bytes.size(); ++cut) {
    QueueScanResult r =
        ScanQueueRecords(std::string_view(bytes).substr(0, cut), QueueScanMode::kStopAtFirstBad);
    ASSERT_EQ(r.records.size(), 2u) << cut;
    EXPECT_EQ(r.valid_end, two_end);
    EXPECT_EQ(r.corrupt_records, 1u);
    EXPECT_EQ(r.stop_reason, QueueRecordStatus::kTruncated);
  }
}

TEST(QueueRecordFormat, AnyFlippedBitIsDetected) {
  std::string good = Records({"payload"});
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      QueueRecordView v;
      EXPECT_NE(ReadQueueRecord(bad, 0, &v), QueueRecordStatus::kOk) << i << ":" << bit;
    }
  }
}

TEST(QueueRecordFormat, StopModeEndsAtACorruptMiddleRecord) {
  std::string bytes = Records({"one", "two", "three"});
  bytes[kQueueRecordHeaderSize + 3 + kQueueRecordHeaderSize] ^= 0x01;  // first payload byte of "two"
  QueueScanResult r = ScanQueueRecords(bytes, QueueScanMode::kStopAtFirstBad);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.stop_reason, QueueRecordStatus::kCorrupt);
  EXPECT_EQ(r.valid_end, kQueueRecordHeaderSize + 3);
}

TEST(QueueRecordFormat, SkipModeResynchronisesAfterACorruptMiddleRecord) {
  std::string bytes = Records({"one", "two", "three"});
  bytes[kQueueRecordHeaderSize + 3 + kQueueRecordHeaderSize] ^= 0x01;
  QueueScanResult r = ScanQueueRecords(bytes, QueueScanMode::kSkipBad);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].payload, "one");
  EXPECT_EQ(r.records[1].payload, "three");
  EXPECT_EQ(r.corrupt_records, 1u);
}

TEST(QueueRecordFormat, ImpossibleLengthIsCorruptNotAHugeRead) {
  std::string bytes = Records({"x"});
  bytes[7] = static_cast<char>(0x7f);  // length's top byte: far above kQueueMaxRecordPayload
  QueueRecordView v;
  EXPECT_EQ(ReadQueueRecord(bytes, 0, &v), QueueRecordStatus::kCorrupt);
}

TEST(QueueRecordFormat, GarbageYieldsNoRecords) {
  std::string garbage(4096, '\xAB');
  QueueScanResult r = ScanQueueRecords(garbage, QueueScanMode::kSkipBad);
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.corrupt_records, 1u);
}

// The layout is what queues already on disk hold: magic, seq and offset little-endian, CRC32C of the
// 24 bytes before it.
TEST(QueueRecordFormat, CheckpointHasTheDocumentedLayoutAndDecodesBack) {
  const std::string bytes = EncodeQueueCheckpoint({0x0102030405060708ull, 0x1112131415161718ull});
  ASSERT_EQ(bytes.size(), kQueueCheckpointSize);
  EXPECT_EQ(bytes.substr(0, 24), std::string("GPSQCKP1"
                                             "\x08\x07\x06\x05\x04\x03\x02\x01"
                                             "\x18\x17\x16\x15\x14\x13\x12\x11",
                                             24));
  const uint32_t crc = Crc32c(std::string_view(bytes).substr(0, 24));
  EXPECT_EQ(bytes.substr(24),
            std::string({static_cast<char>(crc & 0xff), static_cast<char>((crc >> 8) & 0xff),
                         static_cast<char>((crc >> 16) & 0xff), static_cast<char>((crc >> 24) & 0xff)}));
  std::optional<QueueCheckpoint> decoded = DecodeQueueCheckpoint(bytes);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->seq, 0x0102030405060708ull);
  EXPECT_EQ(decoded->offset, 0x1112131415161718ull);
}

TEST(QueueRecordFormat, CheckpointWithAFlippedBitOrTheWrongSizeIsRejected) {
  const std::string bytes = EncodeQueueCheckpoint({7, 4096});
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x01;
    EXPECT_FALSE(DecodeQueueCheckpoint(flipped).has_value()) << "byte " << i;
  }
  EXPECT_FALSE(DecodeQueueCheckpoint(bytes.substr(0, kQueueCheckpointSize - 1)).has_value());
  EXPECT_FALSE(DecodeQueueCheckpoint(bytes + "x").has_value());
  EXPECT_FALSE(DecodeQueueCheckpoint("").has_value());
}

}  // namespace
}  // namespace gpuscope
