// OtlpTracesSink against the test HTTP server as a fault receiver (503 until told otherwise): spans
// exported while the receiver refuses, and while the sink is stopped, are all delivered once, in order,
// to /v1/traces under the node's resource, and counted as sent; spans exported before the sink started
// are counted, not lost silently. The real Collector is in tests/integration/training_traces_test.py.
#include "src/sinks/otlp/otlp_traces_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "src/core/version.h"
#include "src/sinks/otlp/otlp_traces.h"
#include "tests/tools/push_receiver/proto_reader.h"
#include "tests/tools/push_receiver/test_http_server.h"

namespace gpuscope {
namespace {

using testing::Eventually;
using testing::MakeHttpResponse;
using testing::TestHttpReply;
using testing::TestHttpRequest;
using testing::TestHttpServer;

Span NumberedSpan(uint8_t n) {
  Span span;
  span.trace_id.fill(n);
  span.span_id.fill(n);
  span.name = "train.step";
  span.start_unix_ns = 1'000'000'000ull * n;
  span.end_unix_ns = span.start_unix_ns + 500;
  span.attributes = {{"step", int64_t{n}}};
  return span;
}

// The Span messages of a request, in order (one ResourceSpans, one ScopeSpans, as the sink sends).
std::vector<std::string> SpansOf(std::string_view body, std::string* resource) {
  std::vector<std::string> out;
  const auto request = testing::ParseProtoFields(body);
  EXPECT_TRUE(request.has_value());
  if (!request) return out;
  for (const auto& rs : testing::FieldsNumbered(*request, 1)) {
    const auto resource_spans = testing::ParseProtoFields(rs.bytes);
    for (const auto& r : testing::FieldsNumbered(*resource_spans, 1)) *resource = std::string(r.bytes);
    for (const auto& ss : testing::FieldsNumbered(*resource_spans, 2)) {
      const auto scope_spans = testing::ParseProtoFields(ss.bytes);
      for (const auto& span : testing::FieldsNumbered(*scope_spans, 2)) out.emplace_back(span.bytes);
    }
  }
  return out;
}

double Sample(const std::vector<MetricFamily>& families, std::string_view name,
              const std::map<std::string, std::string>& labels) {
  for (const MetricFamily& f : families) {
    if (f.name != name) continue;
    for (const gpuscope::Sample& s : f.samples) {
      bool match = true;
      for (const auto& [k, v] : labels) {
        bool found = false;
        for (const auto& [lk, lv] : s.labels) found = found || (lk == k && lv == v);
        match = match && found;
      }
      if (match) return s.value;
    }
  }
  return -1;
}

class OtlpTracesSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscope-otlp-traces-sink-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    server_ =
        std::make_unique<TestHttpServer>(testing::TestHttpServerOptions{}, [this](const TestHttpRequest& r) {
          std::lock_guard<std::mutex> lock(mu_);
          ++received_;
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
  std::unique_ptr<TestHttpServer> server_;
  std::unique_ptr<OtlpTracesSink> sink_;
  std::mutex mu_;
  int received_ = 0;
  bool accept_ = false;                     // 503 until the test says otherwise
  std::vector<TestHttpRequest> delivered_;  // the accepted requests, in order
};

TEST_F(OtlpTracesSinkTest, SpansQueuedWhileRefusedOrStoppedArriveOnceInOrderAtV1Traces) {
  OtlpTracesOptions o;
  o.endpoint.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/traces";
  o.resource_attributes = {{"service.name", "gpuscope-agent"}, {"host.name", "n1"}};
  o.queue_directory = (dir_ / "otlp_traces").string();
  o.min_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(50);
  sink_ = std::make_unique<OtlpTracesSink>(std::move(o));
  sink_->Export({NumberedSpan(9), NumberedSpan(9)});  // before Start: counted
  EXPECT_EQ(
      Sample(sink_->Metrics(), "gpuscope_otlp_traces_unqueued_spans_total", {{"reason", "not_started"}}), 2);

  ASSERT_TRUE(sink_->Start().ok());
  sink_->Export({NumberedSpan(1), NumberedSpan(2)});
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    return received_ >= 2;  // refused, retried: still queued
  }));
  sink_->Stop();
  sink_->Export({NumberedSpan(3)});  // stopped: queued for the next start
  {
    std::lock_guard<std::mutex> lock(mu_);
    accept_ = true;
  }
  ASSERT_TRUE(sink_->Start().ok());
  std::vector<std::string> delivered;
  std::string resource;
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    delivered.clear();
    for (const TestHttpRequest& r : delivered_) {
      for (std::string& span : SpansOf(r.body, &resource)) delivered.push_back(std::move(span));
    }
    return delivered.size() >= 3;
  }));
  EXPECT_EQ(delivered,
            (std::vector<std::string>{EncodeOtlpSpan(NumberedSpan(1)), EncodeOtlpSpan(NumberedSpan(2)),
                                      EncodeOtlpSpan(NumberedSpan(3))}));
  EXPECT_EQ(resource, EncodeOtlpResource({{"service.name", "gpuscope-agent"}, {"host.name", "n1"}}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const TestHttpRequest& r : delivered_) {
      EXPECT_EQ(r.path, "/v1/traces");
      EXPECT_EQ(r.Header("content-type"), kOtlpContentType);
    }
    // The whole request is the encoder's (scope = the agent and its version).
    EXPECT_EQ(delivered_[0].body,
              EncodeOtlpTracesRequest({{"service.name", "gpuscope-agent"}, {"host.name", "n1"}}, "gpuscope",
                                      Version(),
                                      {EncodeOtlpSpan(NumberedSpan(1)), EncodeOtlpSpan(NumberedSpan(2)),
                                       EncodeOtlpSpan(NumberedSpan(3))}));
  }
  // Records are spans: 3 sent by this start's sender, 3 appended to the queue, none pending.
  ASSERT_TRUE(Eventually([&] {
    return Sample(sink_->Metrics(), "gpuscope_queue_records", {{"queue", "otlp_traces"}}) == 0;
  }));
  const auto metrics = sink_->Metrics();
  EXPECT_EQ(Sample(metrics, "gpuscope_sink_sent_records_total", {{"sink", "otlp_traces"}}), 3);
  EXPECT_EQ(Sample(metrics, "gpuscope_queue_appended_total", {{"queue", "otlp_traces"}}), 3);
  EXPECT_EQ(Sample(metrics, "gpuscope_otlp_traces_unqueued_spans_total", {{"reason", "queue_error"}}), 0);
}

TEST_F(OtlpTracesSinkTest, ASinkWithoutAUrlOrWithAnUnusableQueueDirectoryDoesNotStart) {
  OtlpTracesOptions o;
  o.queue_directory = (dir_ / "q").string();
  EXPECT_EQ(OtlpTracesSink(o).Start().code(), Status::Code::kInvalidArgument);
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  o.endpoint.url = "http://127.0.0.1:1/v1/traces";
  o.queue_directory = (dir_ / "file" / "q").string();
  const Status status = OtlpTracesSink(o).Start();
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("otlp_traces queue"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace gpuscope
