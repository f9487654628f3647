// RemoteWriteSink against the test HTTP server as a fault receiver: answers a real receiver does not
// give on demand (429 with Retry-After, garbage, 400, a 2xx that ignores 2.0), and the bodies it is sent
// decoded back. Real receivers (Prometheus, VictoriaMetrics) are in tests/integration/remote_write_test.py.
#include "src/sinks/remote_write/remote_write_sink.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "src/sinks/queue/durable_queue.h"
#include "tests/tools/push_receiver/test_http_server.h"
#include "tests/unit/sinks/remote_write/v2_request_reader.h"

namespace gpuscope {
namespace {

using testing::Eventually;
using testing::MakeHttpResponse;
using testing::TestHttpReply;
using testing::TestHttpRequest;
using testing::TestHttpServer;

struct Received {
  TestHttpRequest request;
  RemoteWriteBatch batch;             // decoded when 1.0
  std::vector<testing::V2Series> v2;  // read when 2.0
  std::chrono::steady_clock::time_point at;
};

Snapshot GpuSnapshot(int gpus) {
  MetricFamily family{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", MetricType::kGauge, "", {}};
  for (int g = 0; g < gpus; ++g) family.samples.push_back({Labels{{"gpu", std::to_string(g)}}, 40.0 + g});
  return Snapshot::Of({family});
}

double MetricValue(const std::vector<MetricFamily>& families, std::string_view name) {
  double sum = 0;
  for (const MetricFamily& f : families) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) sum += s.value;
  }
  return sum;
}

class RemoteWriteSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscope-rw-sink-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    server_ = std::make_unique<TestHttpServer>(testing::TestHttpServerOptions{},
                                               [this](const TestHttpRequest& r) { return Handle(r); });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (sink_) sink_->Stop();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  TestHttpReply Handle(const TestHttpRequest& request) {
    Received received{request, {}, {}, std::chrono::steady_clock::now()};
    std::string raw;
    if (snappy::Uncompress(request.body.data(), request.body.size(), &raw)) {
      if (request.Header("content-type") == kRemoteWriteV1ContentType)
        DecodeWriteRequestV1(raw, &received.batch);
      if (request.Header("content-type") == kRemoteWriteV2ContentType)
        received.v2 = testing::ReadV2Request(raw).value_or(std::vector<testing::V2Series>{});
    }
    std::lock_guard<std::mutex> lock(mu_);
    received_.push_back(received);
    return reply_(received_.size());
  }

  void StartSink(RemoteWriteProtocol protocol = RemoteWriteProtocol::kV1) {
    RemoteWriteOptions o;
    RemoteWriteEndpoint endpoint;
    endpoint.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/api/v1/write";
    endpoint.protocol = protocol;
    endpoint.headers = {{"X-Scope-OrgID", "tenant-a"}};
    endpoint.bearer_token_file = (dir_ / "token").string();
    o.endpoints = {endpoint};
    o.interval = std::chrono::hours(1);  // batches are queued by the test
    o.queue_directory = (dir_ / "queue").string();
    o.snapshots = &store_;
    o.min_backoff = std::chrono::milliseconds(1);
    o.max_backoff = std::chrono::seconds(10);  // also the cap on Retry-After
    o.external_labels = {{"cluster", "c1"}};
    std::ofstream(dir_ / "token") << "secret-1\n";
    sink_ = std::make_unique<RemoteWriteSink>(std::move(o));
    ASSERT_TRUE(sink_->Start().ok());
  }

  // What an agent from before the 2.0 queue records left in the queue directory: a plain 1.0
  // WriteRequest of `gpus` series stamped `timestamp_ms`.
  void QueuePreUpgradeBatch(int gpus, int64_t timestamp_ms) {
    RemoteWriteBatch batch;
    for (int g = 0; g < gpus; ++g) {
      batch.series.push_back(
          {{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", std::to_string(g)}},
           30.0 + g,
           timestamp_ms,
           0});
    }
    batch.metadata.push_back({"DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).", ""});
    DurableQueueOptions q;
    q.directory = (dir_ / "queue").string();
    q.consumers = {"remote_write_0"};
    std::unique_ptr<DurableQueue> queue;
    ASSERT_TRUE(DurableQueue::Open(q, &queue).ok());
    ASSERT_TRUE(queue->Append(EncodeWriteRequestV1(batch)).ok());
    ASSERT_TRUE(queue->Sync().ok());
  }

  std::vector<Received> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

  std::filesystem::path dir_;
  SnapshotStore store_;
  std::unique_ptr<TestHttpServer> server_;
  std::unique_ptr<RemoteWriteSink> sink_;
  std::mutex mu_;
  std::vector<Received> received_;
  // The answer to the n-th request (1-based).
  std::function<TestHttpReply(size_t)> reply_ = [](size_t) {
    return TestHttpReply{MakeHttpResponse(204, "text/plain", ""), false, false};
  };
};

TEST_F(RemoteWriteSinkTest, FaultReceiver429WithRetryAfterIsWaitedForThenDelivered) {
  reply_ = [](size_t n) {
    if (n == 1)
      return TestHttpReply{MakeHttpResponse(429, "text/plain", "slow down", {{"Retry-After", "1"}})};
    return TestHttpReply{MakeHttpResponse(204, "text/plain", "")};
  };
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() >= 2; }));
  const auto got = received();
  // Backoff alone would retry within 1 ms; Retry-After says a second.
  EXPECT_GE(got[1].at - got[0].at, std::chrono::milliseconds(1000));
  EXPECT_EQ(got[1].batch.series.size(), 2u);
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 2; }));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_retried_total"), 2);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_pending_batches"), 0);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_highest_sent_timestamp_seconds"), 1.0);
}

TEST_F(RemoteWriteSinkTest, FaultReceiverGarbageAnswerIsRetriedAndNothingIsLost) {
  reply_ = [](size_t n) {
    if (n <= 2) return TestHttpReply{"this is not HTTP\r\n\r\n", true, false};
    return TestHttpReply{MakeHttpResponse(204, "text/plain", "")};
  };
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 1000).ok());
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 2000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 6; }));
  const auto got = received();
  // Both batches in the delivered requests, oldest first, every series in time order.
  std::vector<int64_t> timestamps;
  for (size_t i = 2; i < got.size(); ++i) {
    for (const auto& s : got[i].batch.series) {
      if (s.labels[2].second == "0") timestamps.push_back(s.timestamp_ms);  // __name__, cluster, gpu
    }
  }
  EXPECT_EQ(timestamps, (std::vector<int64_t>{1000, 2000}));
}

TEST_F(RemoteWriteSinkTest, FaultReceiver400DropsTheBatchWithACounterAndMovesOn) {
  reply_ = [](size_t n) {
    if (n == 1) return TestHttpReply{MakeHttpResponse(400, "text/plain", "out of bounds")};
    return TestHttpReply{MakeHttpResponse(204, "text/plain", "")};
  };
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_dropped_total") == 2; }));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 2; }));
  EXPECT_EQ(received().back().batch.series.at(0).timestamp_ms, 2000);
}

TEST_F(RemoteWriteSinkTest, ASeriesThatDisappearsGetsOneStaleMarker) {
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 1; }));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());  // GPU 2 is gone
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 3000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 3; }));
  const auto got = received();
  std::vector<std::string> stale;
  for (const auto& s : got[1].batch.series) {
    if (IsStaleMarker(s.value)) stale.push_back(s.labels[2].second);
  }
  EXPECT_EQ(stale, std::vector<std::string>{"2"});
  EXPECT_EQ(got[1].batch.series.size(), 3u);
  EXPECT_EQ(got[2].batch.series.size(), 2u);  // marked once, then forgotten
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_stale_markers_total"), 1);
}

std::vector<std::string> StaleGpus(const RemoteWriteBatch& batch) {
  std::vector<std::string> out;
  for (const auto& s : batch.series) {
    if (IsStaleMarker(s.value)) out.push_back(s.labels[2].second);  // __name__, cluster, gpu
  }
  return out;
}

TEST_F(RemoteWriteSinkTest, ASeriesGoneWhileTheSinkWasStoppedIsMarkedStaleInTheFirstBatchAfterTheRestart) {
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 1; }));
  sink_->Stop();
  sink_.reset();
  EXPECT_TRUE(std::filesystem::exists(dir_ / "queue" / "series"));
  StartSink();  // a new process, as far as the sink knows: only the queue directory is left
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 2000).ok());  // GPUs 1 and 2 went while it was down
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  const std::vector<Received> got = received();
  std::vector<std::string> stale = StaleGpus(got[1].batch);
  std::sort(stale.begin(), stale.end());
  EXPECT_EQ(stale, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(got[1].batch.series.size(), 3u);
  for (const auto& s : got[1].batch.series) EXPECT_EQ(s.timestamp_ms, 2000);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_stale_markers_total"), 2);
  // Remembered as gone: the restart after that marks nothing again.
  sink_->Stop();
  sink_.reset();
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 3000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 3; }));
  EXPECT_TRUE(StaleGpus(received().at(2).batch).empty());
}

TEST_F(RemoteWriteSinkTest, ACorruptSeriesMemoryCostsOnlyTheStaleMarkersOfThatRestart) {
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 1; }));
  sink_->Stop();
  sink_.reset();
  std::filesystem::resize_file(dir_ / "queue" / "series", 40);  // torn
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 2000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  const Received second = received().at(1);
  EXPECT_TRUE(StaleGpus(second.batch).empty());
  EXPECT_EQ(second.batch.series.size(), 1u);
  // Rewritten whole: the next restart marks GPU 0 stale again once it is gone.
  sink_->Stop();
  sink_.reset();
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(Snapshot::Of({}), 3000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 3; }));
  EXPECT_EQ(StaleGpus(received().at(2).batch), std::vector<std::string>{"0"});
}

TEST_F(RemoteWriteSinkTest, SamplesPendingCountsWhatTheUrlHasNotAcceptedAlsoAfterARestart) {
  std::atomic<bool> accept{false};
  reply_ = [&accept](size_t) {
    return TestHttpReply{MakeHttpResponse(accept ? 204 : 503, "text/plain", "")};
  };
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());  // 2 samples
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 2000).ok());  // 3
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 3000).ok());  // 1 and 2 stale markers
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 8);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_pending_batches"), 3);
  sink_->Stop();
  sink_.reset();
  StartSink();  // the backlog is counted from the queue
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 8);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 4000).ok());
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 9);
  accept = true;
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_pending_batches") == 0; }));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 0);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total"), 9);
}

TEST_F(RemoteWriteSinkTest, SeriesCarrySortedLabelsExternalLabelsAndMetadata) {
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 1; }));
  const Received got = received().at(0);
  ASSERT_EQ(got.batch.series.size(), 1u);
  EXPECT_EQ(got.batch.series[0].labels,
            (std::vector<std::pair<std::string, std::string>>{
                {"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(got.batch.series[0].value, 40.0);
  ASSERT_EQ(got.batch.metadata.size(), 1u);
  EXPECT_EQ(got.batch.metadata[0].help, "GPU temperature (in C).");
  EXPECT_EQ(got.request.Header("content-encoding"), "snappy");
  EXPECT_EQ(got.request.Header("x-prometheus-remote-write-version"), "0.1.0");
  EXPECT_EQ(got.request.Header("x-scope-orgid"), "tenant-a");
  EXPECT_EQ(got.request.Header("authorization"), "Bearer secret-1");
}

TEST_F(RemoteWriteSinkTest, TheBearerTokenFileIsReadForEveryRequest) {
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 1; }));
  std::ofstream(dir_ / "token") << "secret-2\n";  // rotated
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 2000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  EXPECT_EQ(received().at(1).request.Header("authorization"), "Bearer secret-2");
}

TEST_F(RemoteWriteSinkTest, EachEndpointSendsItsOwnTenantCredentialsAndProtocol) {
  std::ofstream(dir_ / "password") << "cloud-secret\n";
  std::ofstream(dir_ / "token") << "mimir-token\n";
  const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
  RemoteWriteEndpoint mimir;
  mimir.url = base + "/mimir/api/v1/push";
  mimir.headers = {{"X-Scope-OrgID", "tenant-a"}};
  mimir.bearer_token_file = (dir_ / "token").string();
  RemoteWriteEndpoint cloud;
  cloud.url = base + "/cloud/api/prom/push";
  cloud.protocol = RemoteWriteProtocol::kV2;
  cloud.username = "12345";
  cloud.password_file = (dir_ / "password").string();
  RemoteWriteOptions o;
  o.endpoints = {mimir, cloud};
  o.interval = std::chrono::hours(1);
  o.queue_directory = (dir_ / "queue").string();
  o.snapshots = &store_;
  sink_ = std::make_unique<RemoteWriteSink>(std::move(o));
  ASSERT_TRUE(sink_->Start().ok());
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  std::map<std::string, TestHttpRequest> by_path;
  for (const Received& r : received()) by_path[r.request.path] = r.request;
  const TestHttpRequest& to_mimir = by_path.at("/mimir/api/v1/push");
  EXPECT_EQ(to_mimir.Header("x-scope-orgid"), "tenant-a");
  EXPECT_EQ(to_mimir.Header("authorization"), "Bearer mimir-token");
  EXPECT_EQ(to_mimir.Header("content-type"), kRemoteWriteV1ContentType);
  const TestHttpRequest& to_cloud = by_path.at("/cloud/api/prom/push");
  EXPECT_EQ(to_cloud.Header("x-scope-orgid"), "");
  EXPECT_EQ(to_cloud.Header("authorization"), "Basic MTIzNDU6Y2xvdWQtc2VjcmV0");  // 12345:cloud-secret
  EXPECT_EQ(to_cloud.Header("content-type"), kRemoteWriteV2ContentType);
}

TEST_F(RemoteWriteSinkTest, AnUnreadablePasswordFileFailsStartNamingTheUrl) {
  RemoteWriteEndpoint endpoint;
  endpoint.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/api/v1/write";
  endpoint.username = "u";
  endpoint.password_file = (dir_ / "missing").string();
  RemoteWriteOptions o;
  o.endpoints = {endpoint};
  o.queue_directory = (dir_ / "queue").string();
  o.snapshots = &store_;
  sink_ = std::make_unique<RemoteWriteSink>(std::move(o));
  const Status status = sink_->Start();
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(status.message().find("cannot read the password file " + (dir_ / "missing").string()),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(endpoint.url), std::string::npos) << status.message();
}

TEST_F(RemoteWriteSinkTest, FaultReceiverAutoFallsBackTo1WhenA2xxDoesNotConfirm2) {
  StartSink(RemoteWriteProtocol::kAuto);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());
  ASSERT_TRUE(Eventually([&] { return received().size() == 2; }));
  const auto got = received();
  EXPECT_EQ(got[0].request.Header("content-type"), kRemoteWriteV2ContentType);
  EXPECT_EQ(got[0].request.Header("x-prometheus-remote-write-version"), "2.0.0");
  EXPECT_EQ(got[1].request.Header("content-type"), kRemoteWriteV1ContentType);  // the same batch again
  EXPECT_EQ(got[1].batch.series.size(), 2u);
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 2; }));
}

TEST_F(RemoteWriteSinkTest, FaultReceiverAutoStaysOn2WhenTheReceiverConfirmsIt) {
  reply_ = [](size_t) {
    return TestHttpReply{
        MakeHttpResponse(204, "text/plain", "", {{"X-Prometheus-Remote-Write-Samples-Written", "2"}})};
  };
  StartSink(RemoteWriteProtocol::kAuto);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 4; }));
  for (const Received& r : received()) EXPECT_EQ(r.request.Header("content-type"), kRemoteWriteV2ContentType);
}

TEST_F(RemoteWriteSinkTest, FaultReceiverAutoFallsBackOn415) {
  reply_ = [](size_t n) { return TestHttpReply{MakeHttpResponse(n == 1 ? 415 : 204, "text/plain", "")}; };
  StartSink(RemoteWriteProtocol::kAuto);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 1000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 1; }));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_dropped_total"), 0);
  EXPECT_EQ(received().back().request.Header("content-type"), kRemoteWriteV1ContentType);
}

TEST_F(RemoteWriteSinkTest, PlainV1BatchesQueuedBeforeAnUpgradeAreSentAs1AsTheyWere) {
  QueuePreUpgradeBatch(2, 1000);
  StartSink(RemoteWriteProtocol::kV1);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 4; }));
  std::vector<std::tuple<std::string, double, int64_t>> got;
  for (const Received& r : received()) {
    for (const auto& s : r.batch.series) got.emplace_back(s.labels.at(2).second, s.value, s.timestamp_ms);
  }
  EXPECT_EQ(got, (std::vector<std::tuple<std::string, double, int64_t>>{
                     {"0", 30, 1000}, {"1", 31, 1000}, {"0", 40, 2000}, {"1", 41, 2000}}));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_highest_sent_timestamp_seconds"), 2.0);
}

TEST_F(RemoteWriteSinkTest, PlainV1BatchesQueuedBeforeAnUpgradeAreSentAs2) {
  reply_ = [](size_t) {
    return TestHttpReply{
        MakeHttpResponse(204, "text/plain", "", {{"X-Prometheus-Remote-Write-Samples-Written", "2"}})};
  };
  QueuePreUpgradeBatch(2, 1000);
  StartSink(RemoteWriteProtocol::kV2);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total") == 4; }));
  std::vector<std::tuple<std::string, double, int64_t>> got;
  for (const Received& r : received()) {
    EXPECT_EQ(r.request.Header("content-type"), kRemoteWriteV2ContentType);
    for (const auto& s : r.v2) {
      EXPECT_EQ(s.labels.at(0).second, "DCGM_FI_DEV_GPU_TEMP");
      EXPECT_EQ(s.help, "GPU temperature (in C).");
      got.emplace_back(s.labels.at(2).second, std::bit_cast<double>(s.value_bits), s.timestamp_ms);
    }
  }
  EXPECT_EQ(got, (std::vector<std::tuple<std::string, double, int64_t>>{
                     {"0", 30, 1000}, {"1", 31, 1000}, {"0", 40, 2000}, {"1", 41, 2000}}));
}

TEST_F(RemoteWriteSinkTest, SamplesPendingCountsThePlainV1BatchesAnOlderAgentLeftQueued) {
  std::atomic<bool> accept{false};
  reply_ = [&accept](size_t) {
    return TestHttpReply{MakeHttpResponse(accept ? 204 : 503, "text/plain", "")};
  };
  QueuePreUpgradeBatch(2, 1000);
  StartSink();
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 2);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 2000).ok());
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 5);
  accept = true;
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sink_->Metrics(), "gpuscope_remote_write_pending_batches") == 0; }));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_pending"), 0);
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_samples_sent_total"), 5);
}

TEST_F(RemoteWriteSinkTest, TheSeriesMemoryIsWrittenOnlyWhenTheSetOfSeriesChangesAlsoAcrossARestart) {
  const std::string path = (dir_ / "queue" / "series").string();
  StartSink();
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 1000).ok());
  EXPECT_EQ(SeriesMemory(path).Load().size(), 2u);
  std::filesystem::remove(path);  // a rewrite would bring it back
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(2), 2000).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 3000).ok());
  EXPECT_EQ(SeriesMemory(path).Load().size(), 3u);
  sink_->Stop();
  sink_.reset();
  StartSink();  // loads the three
  std::filesystem::remove(path);
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(3), 4000).ok());  // the same three: nothing to write
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(sink_->QueueSnapshot(GpuSnapshot(1), 5000).ok());
  const RemoteWriteSeriesSet remembered = SeriesMemory(path).Load();
  ASSERT_EQ(remembered.size(), 1u);
  EXPECT_EQ(remembered.begin()->second,
            (RemoteWriteLabels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"cluster", "c1"}, {"gpu", "0"}}));
  EXPECT_EQ(MetricValue(sink_->Metrics(), "gpuscope_remote_write_stale_markers_total"), 2);
}

}  // namespace
}  // namespace gpuscope
