#include "src/sinks/push/push_sender.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/sinks/loki/loki_push.h"
#include "tests/tools/local_daemons/local_daemons.h"
#include "tests/tools/push_receiver/push_receiver.h"
#include "tests/tools/push_receiver/test_http_server.h"
#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

using testing::Eventually;
using testing::PushReceiver;
using testing::PushReceiverOptions;
using testing::ReceiverMode;

// Waits for `condition` (polling); the bound only keeps a broken build from hanging forever.
// Each queue record is one log line; the batch becomes a real Loki protobuf+snappy push.
EncodedBody EncodeAsLoki(const std::vector<std::string>& records) {
  std::vector<LokiEntry> entries;
  int64_t ts = 1700000000000000000;
  for (const auto& record : records)
    entries.push_back({{{"host", "n1"}, {"source", "test"}}, ts++, record, {}});
  return {EncodeLokiPushSnappy(entries), std::string(kLokiProtobufContentType), "", {}};
}

// The "line" field of each received JSON line (the receiver writes it with these exact keys).
std::vector<std::string> ReceivedLines(const PushReceiver& receiver) {
  std::vector<std::string> out;
  for (const auto& json : receiver.lines()) {
    const size_t start = json.find("\"line\":\"");
    const size_t end = json.find("\",\"metadata\"");
    if (start == std::string::npos || end == std::string::npos) {
      out.push_back("<unparsed " + json + ">");
    } else {
      out.push_back(json.substr(start + 8, end - start - 8));
    }
  }
  return out;
}

std::vector<std::string> Numbered(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("event " + std::to_string(i));
  return out;
}

// Value of the sample of `family` whose labels include `label`=`value` (or the only sample).
double MetricValue(const std::vector<MetricFamily>& families, const std::string& family,
                   const std::string& label = "", const std::string& value = "") {
  for (const auto& f : families) {
    if (f.name != family) continue;
    for (const auto& sample : f.samples) {
      if (label.empty()) return sample.value;
      for (const auto& [k, v] : sample.labels) {
        if (k == label && v == value) return sample.value;
      }
    }
  }
  return -1;
}

class PushSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DurableQueueOptions options;
    options.directory = dir_.path() + "/queue";
    options.consumers = {"loki"};
    options.sync = QueueSyncPolicy::kNone;
    ASSERT_TRUE(DurableQueue::Open(options, &queue_).ok());
  }

  void StartReceiver(ReceiverMode mode = ReceiverMode::kOk, uint16_t port = 0) {
    PushReceiverOptions options;
    options.mode = mode;
    options.port = port;
    receiver_ = std::make_unique<PushReceiver>(options);
    ASSERT_TRUE(receiver_->Start().ok());
  }

  PushSinkOptions SinkOptions(uint16_t port) const {
    PushSinkOptions options;
    options.name = "loki";
    options.url = "http://127.0.0.1:" + std::to_string(port) + "/loki/api/v1/push";
    options.headers = {{"X-Scope-OrgID", "tenant1"}};
    options.min_backoff = std::chrono::milliseconds(1);
    options.max_backoff = std::chrono::milliseconds(20);
    options.idle_poll = std::chrono::milliseconds(5);
    options.encode = EncodeAsLoki;
    return options;
  }

  void Append(const std::vector<std::string>& records) {
    for (const auto& r : records) ASSERT_TRUE(queue_->Append(r).ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<DurableQueue> queue_;
  std::unique_ptr<PushReceiver> receiver_;
};

TEST_F(PushSenderTest, DeliversEveryRecordInOrderInBatchesAndAcksThem) {
  StartReceiver();
  Append(Numbered(0, 2500));
  auto options = SinkOptions(receiver_->port());
  options.max_batch_records = 1000;
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();

  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 2500));
  EXPECT_EQ(receiver_->push_requests(), 3u);
  EXPECT_EQ(receiver_->connections_accepted(), 1u);  // one connection, reused for every batch
  const auto metrics = sender.Metrics();
  EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_requests_total", "code", "204"), 3);
  EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_sent_records_total"), 2500);
  EXPECT_GT(MetricValue(metrics, "gpuscope_sink_sent_bytes_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_failed_requests_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_dropped_records_total", "reason", "rejected"), 0);
  EXPECT_GT(MetricValue(metrics, "gpuscope_sink_last_success_timestamp_seconds"), 1.7e9);
  EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_retry_backoff_seconds"), 0);
}

TEST_F(PushSenderTest, ServerErrorsAndThrottlingAreRetriedThenEverythingArrivesInOrder) {
  for (ReceiverMode failing : {ReceiverMode::kUnavailable, ReceiverMode::kTooManyRequests}) {
    const std::string code = failing == ReceiverMode::kUnavailable ? "503" : "429";
    SCOPED_TRACE(code);
    StartReceiver(failing);
    receiver_->SetMode(failing, /*retry_after_seconds=*/3600);  // capped at max_backoff
    Append(Numbered(0, 50));
    auto options = SinkOptions(receiver_->port());
    options.max_batch_records = 7;
    PushSender sender(queue_.get(), options);
    ASSERT_TRUE(sender.Start().ok());
    ASSERT_TRUE(Eventually([&] { return receiver_->push_requests() >= 3; }));
    ASSERT_TRUE(
        Eventually([&] { return MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds") > 0; }));
    EXPECT_EQ(queue_->pending_records("loki"), 50u);
    Append(Numbered(50, 60));
    receiver_->SetMode(ReceiverMode::kOk);
    ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
    sender.Stop();

    EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 60));
    const auto metrics = sender.Metrics();
    EXPECT_GE(MetricValue(metrics, "gpuscope_sink_requests_total", "code", code), 3);
    EXPECT_GE(MetricValue(metrics, "gpuscope_sink_failed_requests_total"), 3);
    EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_sent_records_total"), 60);
    EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_dropped_records_total", "reason", "rejected"), 0);
    EXPECT_EQ(MetricValue(metrics, "gpuscope_sink_retry_backoff_seconds"), 0);
    receiver_->Stop();
  }
}

TEST_F(PushSenderTest, ReceiverDownThenBackOnTheSamePortGetsEverything) {
  StartReceiver();
  const uint16_t port = receiver_->port();
  receiver_->Stop();
  Append(Numbered(0, 20));
  PushSender sender(queue_.get(), SinkOptions(port));
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(sender.Metrics(), "gpuscope_sink_requests_total", "code", "error") >= 3; }));
  EXPECT_EQ(queue_->pending_records("loki"), 20u);
  StartReceiver(ReceiverMode::kOk, port);
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 20));
  EXPECT_GE(MetricValue(sender.Metrics(), "gpuscope_sink_failed_requests_total"), 3);
}

TEST_F(PushSenderTest, GarbageAndSilentAnswersAreRetriedWithoutLoss) {
  StartReceiver(ReceiverMode::kGarbage);
  Append(Numbered(0, 30));
  auto options = SinkOptions(receiver_->port());
  options.timeout = std::chrono::milliseconds(50);
  options.max_batch_records = 10;
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return receiver_->push_requests() >= 3; }));
  receiver_->SetMode(ReceiverMode::kHang);
  const uint64_t before_hang = receiver_->push_requests();
  ASSERT_TRUE(Eventually([&] { return receiver_->push_requests() >= before_hang + 2; }));
  receiver_->SetMode(ReceiverMode::kOk);
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 30));
  EXPECT_GE(MetricValue(sender.Metrics(), "gpuscope_sink_requests_total", "code", "error"), 5);
}

TEST_F(PushSenderTest, RejectedBatchesAreDroppedAndCounted) {
  StartReceiver(ReceiverMode::kBadRequest);
  Append(Numbered(0, 5));
  PushSender sender(queue_.get(), SinkOptions(receiver_->port()));
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  const auto rejected = sender.Metrics();
  EXPECT_EQ(MetricValue(rejected, "gpuscope_sink_dropped_records_total", "reason", "rejected"), 5);
  EXPECT_EQ(MetricValue(rejected, "gpuscope_sink_requests_total", "code", "400"), 1);
  EXPECT_EQ(MetricValue(rejected, "gpuscope_sink_failed_requests_total"), 1);
  EXPECT_EQ(MetricValue(rejected, "gpuscope_sink_sent_records_total"), 0);
  EXPECT_EQ(MetricValue(rejected, "gpuscope_sink_retry_backoff_seconds"), 0);
  EXPECT_TRUE(receiver_->lines().empty());

  receiver_->SetMode(ReceiverMode::kOk);
  Append(Numbered(5, 8));
  sender.Wake();
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(5, 8));
}

TEST_F(PushSenderTest, StopDuringABackoffReturnsAndKeepsTheBatchForTheNextStart) {
  StartReceiver(ReceiverMode::kUnavailable);
  Append(Numbered(0, 4));
  auto options = SinkOptions(receiver_->port());
  options.min_backoff = std::chrono::hours(1);
  options.max_backoff = std::chrono::hours(2);
  {
    PushSender sender(queue_.get(), options);
    ASSERT_TRUE(sender.Start().ok());
    ASSERT_TRUE(
        Eventually([&] { return MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds") > 0; }));
    sender.Stop();  // returns although the backoff is an hour: that is the assertion
  }
  EXPECT_EQ(queue_->pending_records("loki"), 4u);
  receiver_->SetMode(ReceiverMode::kOk);
  PushSender again(queue_.get(), SinkOptions(receiver_->port()));
  ASSERT_TRUE(again.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  again.Stop();
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 4));
}

TEST_F(PushSenderTest, StopDuringARequestTheReceiverNeverAnswersReturns) {
  StartReceiver(ReceiverMode::kHang);
  Append(Numbered(0, 3));
  auto options = SinkOptions(receiver_->port());
  options.timeout = std::chrono::hours(1);
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return receiver_->push_requests() >= 1; }));
  sender.Stop();  // returns although the request would wait an hour
  EXPECT_EQ(queue_->pending_records("loki"), 3u);
  // An interrupted request is not the receiver's failure.
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_failed_requests_total"), 0);
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds"), 0);
}

TEST_F(PushSenderTest, DeliversThroughTheProxyTheEnvironmentNamesAndStopInterruptsAHangThere) {
  testing::ProxyEnvironment environment;
  testing::TinyProxy proxy(dir_.path());
  const Status started = proxy.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  environment.Set("http_proxy", proxy.url());
  StartReceiver();
  Append(Numbered(0, 20));
  auto options = SinkOptions(receiver_->port());
  options.max_batch_records = 10;
  options.timeout = std::chrono::hours(1);
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 20));
  const std::string request = "POST " + options.url + " HTTP/1.1";
  EXPECT_EQ(proxy.Requests(), (std::vector<std::string>{request, request}));

  // The receiver behind the proxy now takes requests and never answers: Stop still returns at once.
  receiver_->SetMode(ReceiverMode::kHang);
  Append({"stuck"});
  sender.Wake();
  ASSERT_TRUE(Eventually([&] { return proxy.Requests().size() == 3; }));
  ASSERT_TRUE(Eventually([&] { return receiver_->push_requests() >= 3; }));
  sender.Stop();  // returns although the request would wait an hour
  EXPECT_EQ(queue_->pending_records("loki"), 1u);
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_failed_requests_total"), 0);
}

TEST_F(PushSenderTest, RetryAfterSetsTheWaitUpToMaxBackoff) {
  StartReceiver(ReceiverMode::kTooManyRequests);
  receiver_->SetMode(ReceiverMode::kTooManyRequests, /*retry_after_seconds=*/2);
  Append({"throttled"});
  auto options = SinkOptions(receiver_->port());
  options.max_backoff = std::chrono::hours(1);
  {
    PushSender sender(queue_.get(), options);
    ASSERT_TRUE(sender.Start().ok());
    ASSERT_TRUE(
        Eventually([&] { return MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds") > 0; }));
    EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds"),
              2);  // not the 1 ms backoff
  }
  receiver_->SetMode(ReceiverMode::kUnavailable, /*retry_after_seconds=*/3600);
  options.max_backoff = std::chrono::milliseconds(500);
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(
      Eventually([&] { return MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds") > 0; }));
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_retry_backoff_seconds"), 0.5);  // capped
}

TEST_F(PushSenderTest, WakeSendsAtOnceWhenIdlePollIsLong) {
  StartReceiver();
  auto options = SinkOptions(receiver_->port());
  options.idle_poll = std::chrono::hours(1);
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  for (int round = 0; round < 3; ++round) {
    Append(Numbered(round, round + 1));
    sender.Wake();
    ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; })) << round;
  }
  sender.Stop();
  EXPECT_EQ(ReceivedLines(*receiver_), Numbered(0, 3));
}

TEST_F(PushSenderTest, EncodedContentTypeEncodingAndExtraHeadersAreSent) {
  std::mutex mu;
  std::vector<testing::TestHttpRequest> requests;
  testing::TestHttpServer server({}, [&](const testing::TestHttpRequest& request) {
    std::lock_guard<std::mutex> lock(mu);
    requests.push_back(request);
    return testing::TestHttpReply{testing::MakeHttpResponse(204, "", "")};
  });
  ASSERT_TRUE(server.Start().ok());
  Append({"one", "two"});
  auto options = SinkOptions(server.port());
  options.encode = [](const std::vector<std::string>& records) {
    std::string body;
    for (const auto& r : records) body += r + ";";
    return EncodedBody{body, "application/x-test", "gzip", {}};
  };
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  server.Stop();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/loki/api/v1/push");
  EXPECT_EQ(requests[0].body, "one;two;");
  EXPECT_EQ(requests[0].Header("content-type"), "application/x-test");
  EXPECT_EQ(requests[0].Header("content-encoding"), "gzip");
  EXPECT_EQ(requests[0].Header("x-scope-orgid"), "tenant1");
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_sent_bytes_total"), 8);
}

TEST_F(PushSenderTest, LokiJsonBodiesDecodeAtTheReceiver) {
  StartReceiver();
  Append({"one"});
  auto options = SinkOptions(receiver_->port());
  options.encode = [](const std::vector<std::string>& records) {
    std::vector<LokiEntry> entries;
    for (const auto& r : records) entries.push_back({{{"host", "n1"}}, 1, r, {{"job_id", "42"}}});
    return EncodedBody{EncodeLokiPushJson(entries), std::string(kLokiJsonContentType), "", {}};
  };
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  ASSERT_EQ(receiver_->lines().size(), 1u);
  EXPECT_EQ(receiver_->lines()[0],
            "{\"sink\":\"loki\",\"format\":\"json\",\"stream\":{\"host\":\"n1\"},\"timestamp_ns\":\"1\","
            "\"line\":\"one\",\"metadata\":{\"job_id\":\"42\"}}");
}

TEST_F(PushSenderTest, ABearerTokenFileUnreadableWhenARequestIsDueKeepsTheBatchQueuedUntilItIsBack) {
  std::mutex mu;
  std::vector<std::string> authorizations;
  testing::TestHttpServer server({}, [&](const testing::TestHttpRequest& request) {
    std::lock_guard<std::mutex> lock(mu);
    authorizations.emplace_back(request.Header("authorization"));
    return testing::TestHttpReply{testing::MakeHttpResponse(204, "", "")};
  });
  ASSERT_TRUE(server.Start().ok());
  const std::string token = dir_.path() + "/token";
  std::ofstream(token) << "t1\n";
  auto options = SinkOptions(server.port());
  options.bearer_token_file = token;
  PushSender sender(queue_.get(), options);
  ASSERT_TRUE(sender.Start().ok());
  std::filesystem::remove(token);  // mid-rotation: gone for a while
  Append({"one"});
  ASSERT_TRUE(
      Eventually([&] { return MetricValue(sender.Metrics(), "gpuscope_sink_failed_requests_total") >= 2; }));
  EXPECT_EQ(queue_->pending_records("loki"), 1u);
  std::ofstream(token) << "t2\n";
  ASSERT_TRUE(Eventually([&] { return queue_->pending_records("loki") == 0; }));
  sender.Stop();
  server.Stop();
  EXPECT_EQ(authorizations, (std::vector<std::string>{"Bearer t2"}));  // nothing was sent without it
  EXPECT_EQ(MetricValue(sender.Metrics(), "gpuscope_sink_dropped_records_total"), 0);
}

TEST_F(PushSenderTest, StartRejectsBadConfiguration) {
  auto options = SinkOptions(1);
  options.url = "loki:3100";
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
  options = SinkOptions(1);
  options.username = "u";
  options.password_file = dir_.path() + "/no-such-password";
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
  options = SinkOptions(1);
  options.bearer_token_file = dir_.path() + "/no-such-token";
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
  std::ofstream(dir_.path() + "/token") << "t";
  std::ofstream(dir_.path() + "/password") << "p";
  options.bearer_token_file = dir_.path() + "/token";
  options.username = "u";  // and basic auth as well: which one?
  options.password_file = dir_.path() + "/password";
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
  options = SinkOptions(1);
  options.name = "otlp";  // not a consumer of this queue
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
  options = SinkOptions(1);
  options.encode = nullptr;
  EXPECT_EQ(PushSender(queue_.get(), options).Start().code(), Status::Code::kInvalidArgument);
}

TEST_F(PushSenderTest, MetricsMatchTheirDescriptions) {
  PushSender sender(queue_.get(), SinkOptions(1));
  const auto described = PushSender::Describe();
  const auto metrics = sender.Metrics();
  ASSERT_EQ(metrics.size(), described.size());
  for (size_t i = 0; i < described.size(); ++i) {
    EXPECT_EQ(metrics[i].name, described[i].name);
    EXPECT_EQ(metrics[i].type, described[i].type);
    EXPECT_TRUE(IsValidMetricName(described[i].name));
    for (const auto& sample : metrics[i].samples) {
      ASSERT_EQ(sample.labels.size(), described[i].labels.size()) << described[i].name;
      for (size_t j = 0; j < sample.labels.size(); ++j) {
        EXPECT_EQ(sample.labels[j].first, described[i].labels[j]);
      }
      EXPECT_EQ(sample.labels[0].second, "loki");
    }
  }
}

}  // namespace
}  // namespace gpuscope
