#include "src/sinks/queue/durable_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "src/sinks/queue/record_format.h"
#include "tests/unit/sinks/queue/queue_test_util.h"

namespace gpuscope {
namespace {

DurableQueueOptions Options(const std::string& dir) {
  DurableQueueOptions o;
  o.directory = dir;
  o.max_total_bytes = 1 << 20;
  o.segment_bytes = 64 << 10;
  o.sync = QueueSyncPolicy::kNone;
  return o;
}

std::unique_ptr<DurableQueue> OpenOrDie(const DurableQueueOptions& o) {
  std::unique_ptr<DurableQueue> q;
  Status st = DurableQueue::Open(o, &q);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return q;
}

std::vector<std::string> PeekAll(DurableQueue& q, uint64_t* id = nullptr) {
  QueueBatch b;
  EXPECT_TRUE(q.Peek(1 << 30, size_t{1} << 40, &b).ok());
  if (id != nullptr) *id = b.id;
  return b.records;
}

std::vector<std::string> SegmentFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("segment-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double MetricValue(const std::vector<MetricFamily>& fams, const std::string& name,
                   const std::string& reason = "") {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& s : f.samples) {
      if (reason.empty() || (s.labels.size() == 2 && s.labels[1].second == reason)) return s.value;
    }
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

TEST(QueueDurableQueue, AppendedRecordsPeekBackInOrder) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(q->Append("record-" + std::to_string(i)).ok());
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], "record-" + std::to_string(i));
}

TEST(QueueDurableQueue, PeekHonoursRecordAndByteLimitsButReturnsAtLeastOne) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q->Append(std::string(100, 'a' + i)).ok());
  QueueBatch b;
  ASSERT_TRUE(q->Peek(3, 1 << 20, &b).ok());
  EXPECT_EQ(b.records.size(), 3u);
  ASSERT_TRUE(q->Peek(100, 250, &b).ok());
  EXPECT_EQ(b.records.size(), 2u);
  ASSERT_TRUE(q->Peek(100, 1, &b).ok());
  EXPECT_EQ(b.records.size(), 1u);
}

TEST(QueueDurableQueue, PeekWithoutAckRedeliversTheSameRecords) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  ASSERT_TRUE(q->Append("a").ok());
  ASSERT_TRUE(q->Append("b").ok());
  uint64_t id1 = 0, id2 = 0;
  auto first = PeekAll(*q, &id1);
  auto second = PeekAll(*q, &id2);
  EXPECT_EQ(first, second);
  EXPECT_NE(id1, id2);
  EXPECT_EQ(q->Ack(id1).code(), Status::Code::kNotFound);  // superseded by the later Peek
  EXPECT_TRUE(q->Ack(id2).ok());
  EXPECT_TRUE(PeekAll(*q).empty());
}

TEST(QueueDurableQueue, EmptyQueuePeeksAnEmptyBatch) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  uint64_t id = 99;
  EXPECT_TRUE(PeekAll(*q, &id).empty());
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(q->Ack(0).code(), Status::Code::kNotFound);
}

TEST(QueueDurableQueue, RestartResumesAfterTheLastAcknowledgedBatch) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 200;  // many segments, so acknowledged ones are deleted
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(q->Append("r" + std::to_string(i)).ok());
    QueueBatch b;
    ASSERT_TRUE(q->Peek(20, 1 << 20, &b).ok());
    ASSERT_TRUE(q->Ack(b.id).ok());
    ASSERT_TRUE(q->Peek(7, 1 << 20, &b).ok());  // read but never acknowledged: redelivered
  }
  auto q = OpenOrDie(o);
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 30u);
  EXPECT_EQ(got.front(), "r20");
  EXPECT_EQ(got.back(), "r49");
  EXPECT_EQ(q->pending_records(), 30u);
}

TEST(QueueDurableQueue, AcknowledgedSegmentsAreDeleted) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 100;
  auto q = OpenOrDie(o);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(q->Append("0123456789").ok());
  EXPECT_GT(SegmentFiles(dir.path()).size(), 5u);
  uint64_t id = 0;
  PeekAll(*q, &id);
  ASSERT_TRUE(q->Ack(id).ok());
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 1u);  // only the segment being written
  auto m = q->Metrics("test");
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_records"), 0);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_acked_total"), 40);
}

TEST(QueueDurableQueue, FullQueueDropsTheOldestSegmentsAndCountsThem) {
  TempDir dir;
  auto o = Options(dir.path());
  o.max_total_bytes = 1000;
  o.segment_bytes = 250;
  auto q = OpenOrDie(o);
  // Each record is 20 + 30 = 50 bytes: 5 per segment, at most 20 on disk.
  for (int i = 0; i < 100; ++i) {
    std::string p = std::to_string(i);
    p.resize(30, '.');
    ASSERT_TRUE(q->Append(p).ok());
  }
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.size(), 20u);
  const uint64_t dropped = q->dropped_full();
  EXPECT_EQ(dropped + got.size(), 100u);
  EXPECT_EQ(dropped % 5, 0u);  // whole segments
  // The survivors are the newest records, in order.
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::stoi(got[i]), static_cast<int>(dropped + i));
  }
  auto m = q->Metrics("test");
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_dropped_total", "full"), static_cast<double>(dropped));
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_dropped_total", "corrupt"), 0);
  EXPECT_LE(MetricValue(m, "gpuscope_queue_bytes"), 1000);
}

TEST(QueueDurableQueue, RecordThatCanNeverFitIsRejected) {
  TempDir dir;
  auto o = Options(dir.path());
  o.max_total_bytes = 1000;
  auto q = OpenOrDie(o);
  EXPECT_EQ(q->Append(std::string(2000, 'x')).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(q->Append("fits").ok());
  EXPECT_EQ(PeekAll(*q).size(), 1u);
}

TEST(QueueDurableQueue, TruncatedTailLosesOneRecordAndTheQueueStillWorks) {
  TempDir dir;
  auto o = Options(dir.path());
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(q->Append("rec" + std::to_string(i)).ok());
  }
  auto files = SegmentFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) - 2);
  auto q = OpenOrDie(o);
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got.back(), "rec8");
  EXPECT_EQ(q->dropped_corrupt(), 1u);
  ASSERT_TRUE(q->Append("after").ok());  // appends follow the last valid record
  q.reset();
  q = OpenOrDie(o);
  got = PeekAll(*q);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got.back(), "after");
  EXPECT_EQ(q->dropped_corrupt(), 0u);  // the cut tail is gone: nothing corrupt left
}

void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

TEST(QueueDurableQueue, FlippedByteInTheLastRecordLosesOnlyThatRecord) {
  TempDir dir;
  auto o = Options(dir.path());
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(q->Append("rec" + std::to_string(i)).ok());
  }
  auto files = SegmentFiles(dir.path());
  FlipByte(files[0], std::filesystem::file_size(files[0]) - 1);
  auto q = OpenOrDie(o);
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got.back(), "rec8");
  EXPECT_EQ(MetricValue(q->Metrics("t"), "gpuscope_queue_dropped_total", "corrupt"), 1);
}

TEST(QueueDurableQueue, FlippedByteInAnOlderSegmentSkipsOnlyThatRecord) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);  // 5 records of 4 bytes per segment
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 20; ++i) {
      char p[16];
      std::snprintf(p, sizeof(p), "r%03d", i);
      ASSERT_TRUE(q->Append(p).ok());
    }
  }
  auto files = SegmentFiles(dir.path());
  ASSERT_EQ(files.size(), 4u);
  // Third record of the first segment: its payload's first byte.
  FlipByte(files[0], 2 * (kQueueRecordHeaderSize + 4) + kQueueRecordHeaderSize);
  auto q = OpenOrDie(o);
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 19u);
  EXPECT_EQ(got[1], "r001");
  EXPECT_EQ(got[2], "r003");
  EXPECT_EQ(got.back(), "r019");
  EXPECT_EQ(q->dropped_corrupt(), 1u);
}

TEST(QueueDurableQueue, CorruptCheckpointFallsBackToRedeliveringEverything) {
  TempDir dir;
  auto o = Options(dir.path());
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q->Append("x").ok());
    QueueBatch b;
    ASSERT_TRUE(q->Peek(2, 1 << 20, &b).ok());
    ASSERT_TRUE(q->Ack(b.id).ok());
  }
  FlipByte(dir.path() + "/checkpoint", 12);
  auto q = OpenOrDie(o);
  EXPECT_EQ(PeekAll(*q).size(), 5u);  // at-least-once: duplicates, never loss
}

TEST(QueueDurableQueue, OldestAgeComesFromTheInjectedClock) {
  TempDir dir;
  auto o = Options(dir.path());
  int64_t now = 1'000'000;
  o.now_unix_ms = [&now] { return now; };
  auto q = OpenOrDie(o);
  EXPECT_EQ(MetricValue(q->Metrics("t"), "gpuscope_queue_oldest_age_seconds"), 0);
  ASSERT_TRUE(q->Append("old").ok());
  now += 5000;
  ASSERT_TRUE(q->Append("new").ok());
  now += 2500;
  auto m = q->Metrics("t");
  EXPECT_DOUBLE_EQ(MetricValue(m, "gpuscope_queue_oldest_age_seconds"), 7.5);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_records"), 2);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_appended_total"), 2);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_bytes"), 2 * (kQueueRecordHeaderSize + 3));
  QueueBatch b;
  ASSERT_TRUE(q->Peek(1, 1 << 20, &b).ok());
  ASSERT_TRUE(q->Ack(b.id).ok());
  EXPECT_DOUBLE_EQ(MetricValue(q->Metrics("t"), "gpuscope_queue_oldest_age_seconds"), 2.5);
}

TEST(QueueDurableQueue, MetricNamesAndLabelsAreValid) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  for (const auto& f : q->Metrics("loki")) {
    EXPECT_TRUE(IsValidMetricName(f.name)) << f.name;
    for (const auto& s : f.samples) {
      ASSERT_FALSE(s.labels.empty());
      EXPECT_EQ(s.labels[0].first, "queue");
      EXPECT_EQ(s.labels[0].second, "loki");
    }
  }
  EXPECT_EQ(DurableQueue::Describe().size(), q->Metrics("loki").size());
}

TEST(QueueDurableQueue, OneProducerAndOneConsumerThreadDeliverEverythingInOrder) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 4096;
  auto q = OpenOrDie(o);
  constexpr int kCount = 20000;
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i) ASSERT_TRUE(q->Append(std::to_string(i)).ok());
  });
  int next = 0;
  while (next < kCount) {
    QueueBatch b;
    ASSERT_TRUE(q->Peek(64, 1 << 20, &b).ok());
    for (const auto& r : b.records) ASSERT_EQ(std::stoi(r), next++);
    if (b.id != 0) {
      ASSERT_TRUE(q->Ack(b.id).ok());
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_EQ(q->pending_records(), 0u);
  EXPECT_EQ(q->dropped_full(), 0u);
}

}  // namespace
}  // namespace gpuscope
