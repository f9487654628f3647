#include "src/sinks/queue/durable_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
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
  o.consumers = {"a"};
  return o;
}

std::unique_ptr<DurableQueue> OpenOrDie(const DurableQueueOptions& o) {
  std::unique_ptr<DurableQueue> q;
  Status st = DurableQueue::Open(o, &q);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return q;
}

std::vector<std::string> PeekAll(DurableQueue& q, std::string_view consumer = "a", uint64_t* id = nullptr) {
  QueueBatch b;
  EXPECT_TRUE(q.Peek(consumer, 1 << 30, size_t{1} << 40, &b).ok());
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

// The sample of `name` whose labels include every given (name, value) pair.
double MetricValue(const std::vector<MetricFamily>& fams, const std::string& name, const Labels& match = {}) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& s : f.samples) {
      bool all = true;
      for (const auto& m : match) {
        all = all && std::find(s.labels.begin(), s.labels.end(), m) != s.labels.end();
      }
      if (all) return s.value;
    }
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

double Dropped(const std::vector<MetricFamily>& fams, const std::string& consumer,
               const std::string& reason) {
  return MetricValue(fams, "gpuscope_queue_dropped_total", {{"consumer", consumer}, {"reason", reason}});
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
  ASSERT_TRUE(q->Peek("a", 3, 1 << 20, &b).ok());
  EXPECT_EQ(b.records.size(), 3u);
  ASSERT_TRUE(q->Peek("a", 100, 250, &b).ok());
  EXPECT_EQ(b.records.size(), 2u);
  ASSERT_TRUE(q->Peek("a", 100, 1, &b).ok());
  EXPECT_EQ(b.records.size(), 1u);
}

TEST(QueueDurableQueue, PeekWithoutAckRedeliversTheSameRecords) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  ASSERT_TRUE(q->Append("a").ok());
  ASSERT_TRUE(q->Append("b").ok());
  uint64_t id1 = 0, id2 = 0;
  auto first = PeekAll(*q, "a", &id1);
  auto second = PeekAll(*q, "a", &id2);
  EXPECT_EQ(first, second);
  EXPECT_NE(id1, id2);
  EXPECT_EQ(q->Ack("a", id1).code(), Status::Code::kNotFound);  // superseded by the later Peek
  EXPECT_TRUE(q->Ack("a", id2).ok());
  EXPECT_TRUE(PeekAll(*q).empty());
}

TEST(QueueDurableQueue, ForEachPendingVisitsTheUnacknowledgedRecordsOldestFirstAndLeavesPeekAlone) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 100;  // across several segments
  auto q = OpenOrDie(o);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(q->Append("r" + std::to_string(i)).ok());
  QueueBatch b;
  ASSERT_TRUE(q->Peek("a", 5, 1 << 20, &b).ok());
  ASSERT_TRUE(q->Ack("a", b.id).ok());
  ASSERT_TRUE(q->Peek("a", 3, 1 << 20, &b).ok());  // in flight, not acknowledged
  std::vector<std::string> visited;
  ASSERT_TRUE(q->ForEachPending("a", [&](std::string_view r) { visited.emplace_back(r); }).ok());
  ASSERT_EQ(visited.size(), 15u);
  EXPECT_EQ(visited.front(), "r5");
  EXPECT_EQ(visited.back(), "r19");
  EXPECT_TRUE(q->Ack("a", b.id).ok());  // the batch peeked before is still the one to acknowledge
  EXPECT_EQ(PeekAll(*q).front(), "r8");
  EXPECT_EQ(q->ForEachPending("nobody", [](std::string_view) {}).code(), Status::Code::kNotFound);
}

TEST(QueueDurableQueue, EmptyQueuePeeksAnEmptyBatch) {
  TempDir dir;
  auto q = OpenOrDie(Options(dir.path()));
  uint64_t id = 99;
  EXPECT_TRUE(PeekAll(*q, "a", &id).empty());
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(q->Ack("a", 0).code(), Status::Code::kNotFound);
}

TEST(QueueDurableQueue, RestartResumesAfterTheLastAcknowledgedBatch) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 200;  // many segments, so acknowledged ones are deleted
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(q->Append("r" + std::to_string(i)).ok());
    QueueBatch b;
    ASSERT_TRUE(q->Peek("a", 20, 1 << 20, &b).ok());
    ASSERT_TRUE(q->Ack("a", b.id).ok());
    ASSERT_TRUE(q->Peek("a", 7, 1 << 20, &b).ok());  // read but never acknowledged: redelivered
  }
  auto q = OpenOrDie(o);
  std::vector<std::string> got = PeekAll(*q);
  ASSERT_EQ(got.size(), 30u);
  EXPECT_EQ(got.front(), "r20");
  EXPECT_EQ(got.back(), "r49");
  EXPECT_EQ(q->pending_records("a"), 30u);
}

TEST(QueueDurableQueue, AcknowledgedSegmentsAreDeleted) {
  TempDir dir;
  auto o = Options(dir.path());
  o.segment_bytes = 100;
  auto q = OpenOrDie(o);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(q->Append("0123456789").ok());
  EXPECT_GT(SegmentFiles(dir.path()).size(), 5u);
  uint64_t id = 0;
  PeekAll(*q, "a", &id);
  ASSERT_TRUE(q->Ack("a", id).ok());
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
  const uint64_t dropped = q->dropped_full("a");
  EXPECT_EQ(dropped + got.size(), 100u);
  EXPECT_EQ(dropped % 5, 0u);  // whole segments
  // The survivors are the newest records, in order.
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::stoi(got[i]), static_cast<int>(dropped + i));
  }
  auto m = q->Metrics("test");
  EXPECT_EQ(Dropped(m, "a", "full"), static_cast<double>(dropped));
  EXPECT_EQ(Dropped(m, "a", "corrupt"), 0);
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
  EXPECT_EQ(q->dropped_corrupt("a"), 1u);
  ASSERT_TRUE(q->Append("after").ok());  // appends follow the last valid record
  q.reset();
  q = OpenOrDie(o);
  got = PeekAll(*q);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got.back(), "after");
  EXPECT_EQ(q->dropped_corrupt("a"), 0u);  // the cut tail is gone: nothing corrupt left
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
  EXPECT_EQ(Dropped(q->Metrics("t"), "a", "corrupt"), 1);
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
  EXPECT_EQ(q->dropped_corrupt("a"), 1u);
}

TEST(QueueDurableQueue, CorruptCheckpointFallsBackToRedeliveringEverything) {
  TempDir dir;
  auto o = Options(dir.path());
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q->Append("x").ok());
    QueueBatch b;
    ASSERT_TRUE(q->Peek("a", 2, 1 << 20, &b).ok());
    ASSERT_TRUE(q->Ack("a", b.id).ok());
  }
  FlipByte(dir.path() + "/checkpoint-a", 12);
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
  ASSERT_TRUE(q->Peek("a", 1, 1 << 20, &b).ok());
  ASSERT_TRUE(q->Ack("a", b.id).ok());
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
    ASSERT_TRUE(q->Peek("a", 64, 1 << 20, &b).ok());
    for (const auto& r : b.records) ASSERT_EQ(std::stoi(r), next++);
    if (b.id != 0) {
      ASSERT_TRUE(q->Ack("a", b.id).ok());
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_EQ(q->pending_records("a"), 0u);
  EXPECT_EQ(q->dropped_full("a"), 0u);
}

// --- Named consumers ---------------------------------------------------------------------------

DurableQueueOptions TwoConsumers(const std::string& dir) {
  DurableQueueOptions o = Options(dir);
  o.consumers = {"loki", "otlp"};
  return o;
}

// Peeks up to n records for `consumer` and acknowledges them.
void Consume(DurableQueue& q, std::string_view consumer, size_t n) {
  QueueBatch b;
  ASSERT_TRUE(q.Peek(consumer, n, size_t{1} << 40, &b).ok());
  ASSERT_EQ(b.records.size(), n);
  ASSERT_TRUE(q.Ack(consumer, b.id).ok());
}

std::string Numbered(int i) {
  char p[16];
  std::snprintf(p, sizeof(p), "r%03d", i);
  return p;
}

TEST(QueueDurableQueue, OpenRejectsMissingInvalidOrDuplicateConsumerNames) {
  TempDir dir;
  for (const std::vector<std::string>& names : std::vector<std::vector<std::string>>{
           {}, {""}, {"Loki"}, {"a-b"}, {"a b"}, {"ok", "ok"}, {"ok", "bad/name"}}) {
    auto o = Options(dir.path());
    o.consumers = names;
    std::unique_ptr<DurableQueue> q;
    EXPECT_EQ(DurableQueue::Open(o, &q).code(), Status::Code::kInvalidArgument)
        << (names.empty() ? std::string("(none)") : names.back());
    EXPECT_EQ(q, nullptr);
  }
  auto o = Options(dir.path());
  o.consumers = {"loki", "otlp_2"};
  EXPECT_NE(OpenOrDie(o), nullptr);
}

TEST(QueueDurableQueue, UnknownConsumerAndAnotherConsumersBatchAreNotFound) {
  TempDir dir;
  auto q = OpenOrDie(TwoConsumers(dir.path()));
  ASSERT_TRUE(q->Append("x").ok());
  QueueBatch b;
  EXPECT_EQ(q->Peek("nobody", 10, 1 << 20, &b).code(), Status::Code::kNotFound);
  EXPECT_EQ(b.id, 0u);
  ASSERT_TRUE(q->Peek("loki", 10, 1 << 20, &b).ok());
  ASSERT_NE(b.id, 0u);
  EXPECT_EQ(q->Ack("nobody", b.id).code(), Status::Code::kNotFound);
  EXPECT_EQ(q->Ack("otlp", b.id).code(), Status::Code::kNotFound);  // ids are per consumer
  EXPECT_EQ(q->pending_records("otlp"), 1u);
  EXPECT_EQ(q->pending_records("nobody"), 0u);
  EXPECT_TRUE(q->HasConsumer("loki"));
  EXPECT_FALSE(q->HasConsumer("nobody"));
  EXPECT_TRUE(q->Ack("loki", b.id).ok());
}

TEST(QueueDurableQueue, ConsumersProgressIndependentlyAndResumeIndependentlyAfterRestart) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(q->Append(Numbered(i)).ok());
    Consume(*q, "loki", 25);
    Consume(*q, "otlp", 3);
    // Interleaved peeks do not disturb each other's batches.
    QueueBatch loki, otlp;
    ASSERT_TRUE(q->Peek("loki", 2, 1 << 20, &loki).ok());
    ASSERT_TRUE(q->Peek("otlp", 4, 1 << 20, &otlp).ok());
    EXPECT_EQ(loki.records, (std::vector<std::string>{"r025", "r026"}));
    EXPECT_EQ(otlp.records, (std::vector<std::string>{"r003", "r004", "r005", "r006"}));
    ASSERT_TRUE(q->Ack("loki", loki.id).ok());
    ASSERT_TRUE(q->Ack("otlp", otlp.id).ok());
    EXPECT_EQ(q->pending_records("loki"), 3u);
    EXPECT_EQ(q->pending_records("otlp"), 23u);
  }
  auto q = OpenOrDie(o);
  std::vector<std::string> loki = PeekAll(*q, "loki");
  std::vector<std::string> otlp = PeekAll(*q, "otlp");
  ASSERT_EQ(loki.size(), 3u);
  EXPECT_EQ(loki.front(), "r027");
  ASSERT_EQ(otlp.size(), 23u);
  EXPECT_EQ(otlp.front(), "r007");
  EXPECT_EQ(otlp.back(), "r029");
}

TEST(QueueDurableQueue, SlowConsumerPinsSegmentsUntilItPassesThem) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);  // 5 records per segment
  auto q = OpenOrDie(o);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(q->Append(Numbered(i)).ok());
  ASSERT_EQ(SegmentFiles(dir.path()).size(), 4u);
  Consume(*q, "loki", 20);
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 4u);  // otlp has read nothing yet
  Consume(*q, "otlp", 7);
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 3u);  // both passed the first segment only
  Consume(*q, "otlp", 13);
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 1u);  // the segment being written
  EXPECT_EQ(MetricValue(q->Metrics("events"), "gpuscope_queue_bytes"), 5 * (kQueueRecordHeaderSize + 4));
}

TEST(QueueDurableQueue, FullQueueDropsForTheLaggingConsumerOnlyWhatItHadNotAcknowledged) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.max_total_bytes = 1000;
  o.segment_bytes = 250;  // records of 20 + 30 bytes: 5 per segment, at most 20 on disk
  auto q = OpenOrDie(o);
  std::vector<std::string> loki_got;
  for (int i = 0; i < 100; ++i) {
    std::string p = std::to_string(i);
    p.resize(30, '.');
    ASSERT_TRUE(q->Append(p).ok());
    if (i == 2) Consume(*q, "otlp", 2);  // otlp acknowledges two records of the first segment, then stalls
    uint64_t id = 0;
    for (const std::string& r : PeekAll(*q, "loki", &id)) loki_got.push_back(r);  // loki keeps up
    ASSERT_TRUE(q->Ack("loki", id).ok());
  }
  ASSERT_EQ(loki_got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(std::stoi(loki_got[i]), i);
  EXPECT_EQ(q->dropped_full("loki"), 0u);

  std::vector<std::string> otlp = PeekAll(*q, "otlp");
  ASSERT_FALSE(otlp.empty());
  const int first = std::stoi(otlp.front());
  EXPECT_EQ(first % 5, 0);  // whole segments dropped
  for (size_t i = 0; i < otlp.size(); ++i) EXPECT_EQ(std::stoi(otlp[i]), first + static_cast<int>(i));
  EXPECT_EQ(otlp.size() + static_cast<size_t>(first), 100u);
  // Lost to otlp: everything before `first` except the two records it had acknowledged.
  EXPECT_EQ(q->dropped_full("otlp"), static_cast<uint64_t>(first - 2));
  auto m = q->Metrics("events");
  EXPECT_EQ(Dropped(m, "otlp", "full"), first - 2);
  EXPECT_EQ(Dropped(m, "loki", "full"), 0);
  EXPECT_LE(MetricValue(m, "gpuscope_queue_bytes"), 1000);
}

TEST(QueueDurableQueue, ConsumerAddedToAnExistingQueueStartsAtTheOldestRetainedRecord) {
  TempDir dir;
  auto o = Options(dir.path());
  o.consumers = {"loki"};
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(q->Append(Numbered(i)).ok());
    Consume(*q, "loki", 12);  // the first two segments are gone; the third starts at r010
  }
  o.consumers = {"loki", "otlp"};
  {
    auto q = OpenOrDie(o);
    std::vector<std::string> otlp = PeekAll(*q, "otlp");
    ASSERT_EQ(otlp.size(), 10u);
    EXPECT_EQ(otlp.front(), "r010");
    EXPECT_EQ(PeekAll(*q, "loki").front(), "r012");
    Consume(*q, "loki", 8);  // loki is done; otlp still pins r010.. across a restart
  }
  auto q = OpenOrDie(o);
  EXPECT_EQ(PeekAll(*q, "otlp").front(), "r010");
  EXPECT_TRUE(PeekAll(*q, "loki").empty());
}

TEST(QueueDurableQueue, ConsumerNoLongerConfiguredIsForgottenAndStopsPinningSegments) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(q->Append(Numbered(i)).ok());
    Consume(*q, "loki", 18);
  }
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 4u);  // pinned by otlp
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/checkpoint-otlp"));
  o.consumers = {"loki"};
  {
    auto q = OpenOrDie(o);
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/checkpoint-otlp"));
    EXPECT_EQ(SegmentFiles(dir.path()).size(), 1u);
    EXPECT_EQ(PeekAll(*q, "loki"), (std::vector<std::string>{"r018", "r019"}));
    QueueBatch b;
    EXPECT_EQ(q->Peek("otlp", 1, 1 << 20, &b).code(), Status::Code::kNotFound);
  }
  o.consumers = {"loki", "otlp"};  // configured again: a new consumer, no memory of its old position
  auto q = OpenOrDie(o);
  EXPECT_EQ(PeekAll(*q, "otlp").front(), "r015");
}

TEST(QueueDurableQueue, OldSingleConsumerCheckpointAndLeftoverTemporaryFilesAreRemoved) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  {
    auto q = OpenOrDie(o);
    ASSERT_TRUE(q->Append("x").ok());
  }
  for (const char* name : {"checkpoint", "checkpoint-loki.tmp"}) {
    std::ofstream(dir.path() + "/" + name) << "stale";
  }
  auto q = OpenOrDie(o);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/checkpoint"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/checkpoint-loki.tmp"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/checkpoint-loki"));
  EXPECT_EQ(PeekAll(*q, "loki").size(), 1u);
}

TEST(QueueDurableQueue, CorruptRecordCountsOnlyForConsumersThatHadNotPassedIt) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.consumers = {"loki", "otlp", "slow"};
  o.segment_bytes = 5 * (kQueueRecordHeaderSize + 4);
  {
    auto q = OpenOrDie(o);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(q->Append(Numbered(i)).ok());
    Consume(*q, "loki", 4);  // past r002, inside the first segment
    Consume(*q, "otlp", 1);  // before r002
  }
  auto files = SegmentFiles(dir.path());
  ASSERT_EQ(files.size(), 4u);
  FlipByte(files[0], 2 * (kQueueRecordHeaderSize + 4) + kQueueRecordHeaderSize);  // r002's payload
  auto q = OpenOrDie(o);
  EXPECT_EQ(q->dropped_corrupt("loki"), 0u);
  EXPECT_EQ(q->dropped_corrupt("otlp"), 1u);
  EXPECT_EQ(q->dropped_corrupt("slow"), 1u);
  EXPECT_EQ(PeekAll(*q, "loki").front(), "r004");
  std::vector<std::string> otlp = PeekAll(*q, "otlp");
  ASSERT_EQ(otlp.size(), 18u);
  EXPECT_EQ(otlp[0], "r001");
  EXPECT_EQ(otlp[1], "r003");
  EXPECT_EQ(Dropped(q->Metrics("events"), "slow", "corrupt"), 1);
}

TEST(QueueDurableQueue, MetricsCarryQueueAndConsumerLabels) {
  TempDir dir;
  int64_t now = 1'000'000;
  auto o = TwoConsumers(dir.path());
  o.now_unix_ms = [&now] { return now; };
  auto q = OpenOrDie(o);
  ASSERT_TRUE(q->Append("one").ok());
  now += 1000;
  ASSERT_TRUE(q->Append("two").ok());
  now += 1000;
  Consume(*q, "loki", 1);
  auto m = q->Metrics("events");
  const std::vector<MetricDescription> described = DurableQueue::Describe();
  ASSERT_EQ(m.size(), described.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const MetricDescription& d = described[i];
    EXPECT_EQ(m[i].name, d.name);
    ASSERT_FALSE(m[i].samples.empty()) << d.name;
    for (const auto& s : m[i].samples) {
      std::vector<std::string> names;
      for (const auto& l : s.labels) names.push_back(l.first);
      EXPECT_EQ(names, d.labels) << d.name;
      EXPECT_EQ(s.labels[0], (std::pair<std::string, std::string>{"queue", "events"}));
    }
  }
  // Per queue: one series. Per consumer: one series per consumer (two per consumer for dropped).
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_bytes"), 2 * (kQueueRecordHeaderSize + 3));
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_appended_total"), 2);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_records", {{"consumer", "loki"}}), 1);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_records", {{"consumer", "otlp"}}), 2);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_acked_total", {{"consumer", "loki"}}), 1);
  EXPECT_EQ(MetricValue(m, "gpuscope_queue_acked_total", {{"consumer", "otlp"}}), 0);
  EXPECT_DOUBLE_EQ(MetricValue(m, "gpuscope_queue_oldest_age_seconds", {{"consumer", "loki"}}), 1);
  EXPECT_DOUBLE_EQ(MetricValue(m, "gpuscope_queue_oldest_age_seconds", {{"consumer", "otlp"}}), 2);
  std::map<std::string, size_t> series;
  for (const auto& f : m) series[f.name] = f.samples.size();
  EXPECT_EQ(series["gpuscope_queue_bytes"], 1u);
  EXPECT_EQ(series["gpuscope_queue_appended_total"], 1u);
  EXPECT_EQ(series["gpuscope_queue_records"], 2u);
  EXPECT_EQ(series["gpuscope_queue_oldest_age_seconds"], 2u);
  EXPECT_EQ(series["gpuscope_queue_acked_total"], 2u);
  EXPECT_EQ(series["gpuscope_queue_dropped_total"], 4u);  // full and corrupt per consumer
}

TEST(QueueDurableQueue, OneProducerAndTwoConsumerThreadsEachGetEverythingInOrder) {
  TempDir dir;
  auto o = TwoConsumers(dir.path());
  o.segment_bytes = 4096;
  auto q = OpenOrDie(o);
  constexpr int kCount = 5000;
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i) ASSERT_TRUE(q->Append(std::to_string(i)).ok());
  });
  auto consume = [&](std::string name, size_t batch) {
    int next = 0;
    while (next < kCount) {
      QueueBatch b;
      ASSERT_TRUE(q->Peek(name, batch, 1 << 20, &b).ok());
      for (const auto& r : b.records) ASSERT_EQ(std::stoi(r), next++);
      if (b.id != 0) {
        ASSERT_TRUE(q->Ack(name, b.id).ok());
      } else {
        std::this_thread::yield();
      }
    }
  };
  std::thread loki(consume, "loki", 64);
  std::thread otlp(consume, "otlp", 7);
  producer.join();
  loki.join();
  otlp.join();
  for (const char* name : {"loki", "otlp"}) {
    EXPECT_EQ(q->pending_records(name), 0u);
    EXPECT_EQ(q->dropped_full(name), 0u);
  }
  EXPECT_EQ(SegmentFiles(dir.path()).size(), 1u);
}

}  // namespace
}  // namespace gpuscope
