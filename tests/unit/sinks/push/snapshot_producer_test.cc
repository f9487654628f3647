// SnapshotProducer: the interval loop and queue opening the metrics push sinks share.
#include "src/sinks/push/snapshot_producer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

bool Eventually(const std::function<bool()>& condition) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(SnapshotProducer, HandsTheCurrentSnapshotStampedByTheClockAndSkipsTheEmptyOneBeforeTheFirstCollection) {
  SnapshotStore store;
  std::mutex mu;
  std::vector<std::pair<uint64_t, int64_t>> produced;  // (snapshot version, timestamp)
  SnapshotProducer producer({.name = "test",
                             .interval = std::chrono::milliseconds(1),
                             .snapshots = &store,
                             .now_unix_ms = [] { return int64_t{1234}; },
                             .produce =
                                 [&](const Snapshot& snapshot, int64_t timestamp_ms) {
                                   std::lock_guard<std::mutex> lock(mu);
                                   produced.emplace_back(snapshot.version(), timestamp_ms);
                                   return Status::Ok();
                                 }});
  producer.Start();
  producer.Start();  // already running: nothing more
  // Some intervals pass with nothing collected (how many does not matter: none may be produced).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(produced.empty());
  }
  store.Update("test", {MetricFamily{"up", "", MetricType::kGauge, "", {{Labels{}, 1.0}}}});
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return produced.size() >= 2;
  }));
  producer.Stop();
  producer.Stop();  // safe twice
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [version, timestamp] : produced) {
    EXPECT_GT(version, 0u);
    EXPECT_EQ(timestamp, 1234);
  }
}

TEST(SnapshotProducer, AQueueDirectoryThatCannotBeUsedIsUnavailableNamingTheSinkAndDirectory) {
  testing::TempDir dir;
  const std::string file = dir.Write("not-a-directory", "x");
  std::unique_ptr<DurableQueue> queue;
  const Status status = OpenMetricsQueue("remote_write", file, 1 << 20, {"remote_write_0"}, &queue);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message().rfind("remote_write queue " + file + ": ", 0), 0u) << status.message();
  EXPECT_EQ(queue, nullptr);
  ASSERT_TRUE(OpenMetricsQueue("remote_write", dir.path() + "/q", 1 << 20, {"remote_write_0"}, &queue).ok());
  EXPECT_TRUE(queue->HasConsumer("remote_write_0"));
}

}  // namespace
}  // namespace gpuscope
