// The training socket's datagram decoder (src/parsers/training_wire.h): a datagram the Python package
// wrote (testdata/training_v1.bin, made with python/gpuscope/_wire.py) decodes field by field; hostile
// and truncated datagrams are refused without reading past them.
#include "src/parsers/training_wire.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace gpuscope {
namespace {

std::string ReadTestdata() {
  std::ifstream in(std::string(GPUSCOPE_PARSERS_TESTDATA) + "/training_v1.bin", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(TrainingWire, DecodesWhatThePythonPackageWroteFieldByField) {
  const std::string data = ReadTestdata();
  ASSERT_FALSE(data.empty());
  TrainingDatagram datagram;
  ASSERT_EQ(DecodeTrainingDatagram(data, &datagram), TrainingWireError::kNone);
  EXPECT_EQ(datagram.producer_drops, 12u);
  ASSERT_TRUE(datagram.hello.has_value());
  EXPECT_EQ(datagram.hello->rank, 3);
  EXPECT_EQ(datagram.hello->local_rank, 1);
  EXPECT_EQ(datagram.hello->world_size, 8);
  EXPECT_EQ(datagram.hello->job, "4242");
  ASSERT_EQ(datagram.steps.size(), 1u);
  EXPECT_EQ(datagram.steps[0].step, 17u);
  EXPECT_EQ(datagram.steps[0].end_ns - datagram.steps[0].begin_ns, 99'000'000u);
  EXPECT_EQ(datagram.steps[0].samples, 32u);
  ASSERT_EQ(datagram.collectives.size(), 1u);
  const TrainingCollective& c = datagram.collectives[0];
  EXPECT_EQ(c.comm, 0xABCDEF0123456789u);
  EXPECT_EQ(c.seq, 7u);
  EXPECT_EQ(c.op, 4);  // all_reduce
  EXPECT_EQ(c.dtype, 7);
  EXPECT_EQ(c.algo, 1);
  EXPECT_EQ(c.proto, 2);
  EXPECT_EQ(c.bytes, 1u << 20);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.end_ns - c.begin_ns, 64'000'000u);
  ASSERT_EQ(datagram.marks.size(), 2u);
  EXPECT_EQ(datagram.marks[0].kind, static_cast<uint8_t>(TrainingMarkKind::kGradNorm));
  EXPECT_EQ(datagram.marks[0].value, 0.875);
  EXPECT_EQ(datagram.marks[1].kind, static_cast<uint8_t>(TrainingMarkKind::kCheckpoint));
  EXPECT_EQ(datagram.marks[1].value, 123456789.0);
  EXPECT_EQ(datagram.unknown_records, 1u);
}

TEST(TrainingWire, EveryTruncationOfAGoodDatagramIsRefusedOrDecodesLess) {
  const std::string data = ReadTestdata();
  TrainingDatagram datagram;
  for (size_t n = 0; n < data.size(); ++n) {
    const TrainingWireError error = DecodeTrainingDatagram(std::string_view(data).substr(0, n), &datagram);
    EXPECT_NE(error, TrainingWireError::kNone) << n;
    EXPECT_EQ(error, n < 12 ? TrainingWireError::kShort : TrainingWireError::kTruncated) << n;
  }
}

TEST(TrainingWire, ForeignMagicAndNewerVersionsAreRefusedByName) {
  std::string data = ReadTestdata();
  TrainingDatagram datagram;
  std::string other = data;
  other[0] = 'X';
  EXPECT_EQ(DecodeTrainingDatagram(other, &datagram), TrainingWireError::kMagic);
  other = data;
  other[4] = 2;
  EXPECT_EQ(DecodeTrainingDatagram(other, &datagram), TrainingWireError::kVersion);
  EXPECT_EQ(TrainingWireErrorName(TrainingWireError::kVersion), "version");
}

TEST(TrainingWire, ALongerBodyKeepsItsKnownFieldsAndTheNextRecordStillDecodes) {
  // A step record from a newer producer with 4 more bytes, then a version-1 mark.
  std::string data("GPST\x01\x00\x02\x00\x00\x00\x00\x00", 12);
  std::string step_body(32, '\0');
  step_body[0] = 9;  // step 9
  data += std::string("\x02\x20\x00", 3) + step_body;
  std::string mark_body(25, '\0');
  mark_body[0] = 2;  // data-loader wait
  data += std::string("\x04\x19\x00", 3) + mark_body;
  TrainingDatagram datagram;
  ASSERT_EQ(DecodeTrainingDatagram(data, &datagram), TrainingWireError::kNone);
  ASSERT_EQ(datagram.steps.size(), 1u);
  EXPECT_EQ(datagram.steps[0].step, 9u);
  ASSERT_EQ(datagram.marks.size(), 1u);
  EXPECT_EQ(datagram.marks[0].kind, 2);
}

TEST(TrainingWire, AShorterBodyThanItsFieldsIsTruncatedAndAJobLengthPastTheBodyToo) {
  TrainingDatagram datagram;
  std::string short_step("GPST\x01\x00\x01\x00\x00\x00\x00\x00\x02\x04\x00\x01\x02\x03\x04", 19);
  EXPECT_EQ(DecodeTrainingDatagram(short_step, &datagram), TrainingWireError::kTruncated);
  std::string hello("GPST\x01\x00\x01\x00\x00\x00\x00\x00\x01\x0d\x00", 15);
  hello += std::string(12, '\0') + "\xff";  // job length 255, no job bytes
  EXPECT_EQ(DecodeTrainingDatagram(hello, &datagram), TrainingWireError::kTruncated);
  EXPECT_FALSE(datagram.hello.has_value());
}

TEST(TrainingWire, ACountPastTheRecordsIsTruncatedAndReuseClearsThePreviousDatagram) {
  TrainingDatagram datagram;
  ASSERT_EQ(DecodeTrainingDatagram(ReadTestdata(), &datagram), TrainingWireError::kNone);
  std::string empty_claims_five("GPST\x01\x00\x05\x00\x07\x00\x00\x00", 12);
  EXPECT_EQ(DecodeTrainingDatagram(empty_claims_five, &datagram), TrainingWireError::kTruncated);
  EXPECT_TRUE(datagram.steps.empty());
  EXPECT_FALSE(datagram.hello.has_value());
  EXPECT_EQ(datagram.producer_drops, 7u);
}

TEST(TrainingWire, WhatTheEncoderWritesDecodesToTheSameFields) {
  std::string data;
  AppendTrainingHeader(&data, 3);
  AppendTrainingHello(&data, TrainingHello{7, 3, 16, "4242"});
  TrainingCollective c;
  c.comm = 0x1234;
  c.seq = 99;
  c.op = 2;
  c.bytes = 1 << 30;
  c.nranks = 16;
  c.begin_ns = 10;
  c.end_ns = 0;
  AppendTrainingCollective(&data, c);
  FinishTrainingDatagram(&data, 2);
  TrainingDatagram datagram;
  ASSERT_EQ(DecodeTrainingDatagram(data, &datagram), TrainingWireError::kNone);
  EXPECT_EQ(datagram.producer_drops, 3u);
  ASSERT_TRUE(datagram.hello.has_value());
  EXPECT_EQ(datagram.hello->rank, 7);
  EXPECT_EQ(datagram.hello->job, "4242");
  ASSERT_EQ(datagram.collectives.size(), 1u);
  EXPECT_EQ(datagram.collectives[0].seq, 99u);
  EXPECT_EQ(datagram.collectives[0].bytes, 1u << 30);
  EXPECT_EQ(datagram.collectives[0].end_ns, 0u);
  EXPECT_EQ(data.size(), 12 + 3 + 13 + 4 + kTrainingCollectiveRecordSize);
}

}  // namespace
}  // namespace gpuscope
