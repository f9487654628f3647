#include "src/collectors/training/trace_ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpuscope {
namespace {

TEST(TrainingTraceIds, EveryNodeDerivesTheSameIdsForTheSameStep) {
  EXPECT_EQ(TrainingStepTraceId("4242", 17), TrainingStepTraceId("4242", 17));
  EXPECT_EQ(TrainingStepSpanId("4242", 17, 3), TrainingStepSpanId("4242", 17, 3));
  EXPECT_EQ(TrainingCollectiveSpanId("4242", 3, 0xabc, 9), TrainingCollectiveSpanId("4242", 3, 0xabc, 9));
}

TEST(TrainingTraceIds, JobStepRankCommunicatorAndSequenceEachChangeTheId) {
  std::set<std::string> ids;
  ids.insert(IdHex(TrainingStepTraceId("4242", 17)));
  ids.insert(IdHex(TrainingStepTraceId("4242", 18)));
  ids.insert(IdHex(TrainingStepTraceId("4243", 17)));
  ids.insert(IdHex(TrainingStepTraceId("42421", 7)));  // no ambiguity between job and step
  EXPECT_EQ(ids.size(), 4u);
  std::set<std::string> spans;
  spans.insert(IdHex(TrainingStepSpanId("4242", 17, 0)));
  spans.insert(IdHex(TrainingStepSpanId("4242", 17, 1)));
  spans.insert(IdHex(TrainingCollectiveSpanId("4242", 0, 1, 17)));
  spans.insert(IdHex(TrainingCollectiveSpanId("4242", 0, 2, 17)));
  spans.insert(IdHex(TrainingCollectiveSpanId("4242", 1, 1, 17)));
  spans.insert(IdHex(TrainingCollectiveSpanId("4242", 0, 1, 18)));
  EXPECT_EQ(spans.size(), 6u);
}

TEST(TrainingTraceIds, HexIsLowerCaseTwoDigitsPerByte) {
  std::string trace = IdHex(TrainingStepTraceId("1", 1));
  EXPECT_EQ(trace.size(), 32u);
  EXPECT_EQ(trace.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(IdHex(std::array<uint8_t, 3>{0x00, 0x0f, 0xa5}), "000fa5");
  EXPECT_NE(trace, std::string(32, '0'));
}

}  // namespace
}  // namespace gpuscope
