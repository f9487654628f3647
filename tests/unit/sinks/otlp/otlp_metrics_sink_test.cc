// OtlpMetricsSink against the test HTTP server as a fault receiver (a 503 on demand), the bodies it is
// sent read back with the test-side protobuf reader. The real Collector is in
// tests/integration/otlp_metrics_test.py.
#include "src/sinks/otlp/otlp_metrics_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "src/core/version.h"
#include "src/sinks/otlp/otlp_metrics.h"
#include "tests/tools/push_receiver/proto_reader.h"
#include "tests/tools/push_receiver/test_http_server.h"

namespace gpuscope {
namespace {

using testing::Eventually;
using testing::MakeHttpResponse;
using testing::TestHttpReply;
using testing::TestHttpRequest;
using testing::TestHttpServer;

Snapshot GpuSnapshot(double temperature) {
  MetricFamily family{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  family.samples.push_back({Labels{{"gpu", "0"}, {"UUID", "GPU-a"}}, temperature});
  MetricFamily xids{"gpuscope_xid_errors_total", "XIDs.", MetricType::kCounter, "", {}};
  xids.samples.push_back({Labels{{"gpu", "0"}, {"UUID", "GPU-a"}}, 3});
  return Snapshot::Of({family, xids});
}

class OtlpMetricsSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscope-otlp-metrics-sink-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    server_ =
        std::make_unique<TestHttpServer>(testing::TestHttpServerOptions{}, [this](const TestHttpRequest& r) {
          std::lock_guard<std::mutex> lock(mu_);
          received_.push_back(r);
          const int status = accept_ ? 200 : 503;
          if (accept_) delivered_.push_back(r);
          return TestHttpReply{MakeHttpResponse(status, "application/x-protobuf", ""), false, false};
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (sink_) sink_->Stop();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  SnapshotStore store_;
  std::unique_ptr<TestHttpServer> server_;
  std::unique_ptr<OtlpMetricsSink> sink_;
  std::mutex mu_;
  std::vector<TestHttpRequest> received_;
  bool accept_ = false;                     // 503 until the test says otherwise
  std::vector<TestHttpRequest> delivered_;  // the accepted requests, in order
};

TEST_F(OtlpMetricsSinkTest, QueuedRequestsSurvive503sAndArriveOnceOldestFirstAtV1Metrics) {
  OtlpMetricsOptions o;
  o.endpoint.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/metrics";
  o.interval = std::chrono::hours(1);  // requests are queued by the test
  o.resource_attributes = {{"service.name", "gpuscope-agent"}, {"host.name", "n1"}};
  o.queue_directory = (dir_ / "queue").string();
  o.snapshots = &store_;
  o.now_unix_ms = [] { return int64_t{500}; };  // when the sink starts: the counters' start time
  o.min_backoff = std::chrono::milliseconds(1);
  sink_ = std::make_unique<OtlpMetricsSink>(std::move(o));
  EXPECT_EQ(sink_->QueueSnapshot(GpuSnapshot(40), 1000).code(), Status::Code::kUnavailable);  // not started
  ASSERT_TRUE(sink_->Start().ok());
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(41), 1000).ok());
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    return !received_.empty();  // refused: it stays queued
  }));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(42), 2000).ok());
  {
    std::lock_guard<std::mutex> lock(mu_);
    accept_ = true;
  }
  // Exactly the encoder's requests, oldest first, each stamped with its time, the counters with the
  // sink's start; every one delivered once (in one body, or two when a retry raced the second append).
  OtlpMetricsRequest first;
  first.resource_attributes = {{"service.name", "gpuscope-agent"}, {"host.name", "n1"}};
  first.scope_version = std::string(Version());
  first.time_unix_nano = 1000ull * 1000000;
  first.start_time_unix_nano = 500ull * 1000000;
  OtlpMetricsRequest second = first;
  second.time_unix_nano = 2000ull * 1000000;
  const Snapshot a = GpuSnapshot(41), b = GpuSnapshot(42);
  const std::string expected =
      EncodeOtlpMetricsRequest(first, a.families()) + EncodeOtlpMetricsRequest(second, b.families());
  std::string delivered;
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    delivered.clear();
    for (const TestHttpRequest& r : delivered_) delivered += r.body;
    return delivered.size() >= expected.size();
  }));
  EXPECT_EQ(delivered, expected);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(received_[0].body, EncodeOtlpMetricsRequest(first, a.families()));  // refused, then sent again
  for (const TestHttpRequest& r : delivered_) {
    EXPECT_EQ(r.path, "/v1/metrics");
    EXPECT_EQ(r.Header("content-type"), kOtlpContentType);
  }
  const auto top = testing::ParseProtoFields(delivered);
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(testing::FieldsNumbered(*top, 1).size(), 2u);  // two ResourceMetrics: both intervals
}

}  // namespace
}  // namespace gpuscope
