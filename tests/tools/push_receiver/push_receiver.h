// PushReceiver: the test stand-in for Loki and an OpenTelemetry Collector. It accepts
//   POST /loki/api/v1/push   Content-Type application/x-protobuf (snappy) or application/json
//   POST /v1/logs            Content-Type application/x-protobuf (OTLP ExportLogsServiceRequest)
// (Content-Encoding gzip is undone first), decodes the real wire formats (push_decoder.h) and records
// one JSON line per entry, in arrival order, in memory and appended to an output file:
//   Loki: {"sink":"loki","format":"protobuf|json","stream":{labels},"timestamp_ns":"<ns>","line":"...",
//          "metadata":{structured metadata}}
//   OTLP: {"sink":"otlp","resource":{attributes},"scope":{"name":..,"version":..},"time_unix_nano":"<ns>",
//          "observed_time_unix_nano":"<ns>","severity_number":N,"severity_text":"..","body":..,
//          "attributes":{..}}
// A body that does not decode is answered 400 and recorded as {"error":"...","path":"..."}.
// Metrics pushes are not decoded (real receivers, Prometheus and the Collector, do that in the tests):
//   POST /api/v1/write, POST /v1/metrics   recorded as {"target":"...","bytes":N,"headers":{name: value}}
// so that a test sees the headers a real receiver does not show (a tenant, an API key), and answered
// by the mode like every push.
// Its answer to pushes is switchable while it runs, so fault tests can make it fail and recover:
//   POST /control?mode=ok|503|429|400|garbage|hang[&retry_after=SECONDS]   (GET /control: the mode)
// ok answers 204 (Loki) / 200 (OTLP) and records the entries; 503, 429 and 400 answer that status and
// record nothing; garbage writes bytes that are not HTTP and closes; hang never answers. GET /stats
// returns the counters as JSON.
//
// Thread-safety: every method may be called from any thread, except Start()/Stop() (one controlling
// thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"
#include "tests/tools/push_receiver/test_http_server.h"

namespace gpuscope::testing {

enum class ReceiverMode { kOk, kUnavailable, kTooManyRequests, kBadRequest, kGarbage, kHang };

// "ok", "503", "429", "400", "garbage", "hang".
bool ParseReceiverMode(std::string_view name, ReceiverMode* mode);
std::string_view ReceiverModeName(ReceiverMode mode);

struct PushReceiverOptions {
  uint16_t port = 0;        // 0 picks a free port
  std::string output_path;  // JSON lines appended here when set
  std::string cert_file;    // TLS when set, with key_file
  std::string key_file;
  ReceiverMode mode = ReceiverMode::kOk;
  int retry_after_seconds = -1;  // Retry-After sent with 503 and 429 when >= 0
};

class PushReceiver {
 public:
  explicit PushReceiver(PushReceiverOptions options);
  ~PushReceiver();
  PushReceiver(const PushReceiver&) = delete;
  PushReceiver& operator=(const PushReceiver&) = delete;

  // Opens the output file and starts listening on 127.0.0.1. Unavailable when the port is taken or the
  // file cannot be opened.
  Status Start();
  void Stop();
  uint16_t port() const;

  void SetMode(ReceiverMode mode, int retry_after_seconds = -1);
  ReceiverMode mode() const;

  std::vector<std::string> lines() const;  // every recorded JSON line, in arrival order
  uint64_t push_requests() const { return push_requests_.load(); }          // pushes received, any mode
  uint64_t accepted_requests() const { return accepted_requests_.load(); }  // answered 2xx
  uint64_t decode_errors() const { return decode_errors_.load(); }
  uint64_t connections_accepted() const;

 private:
  TestHttpReply Handle(const TestHttpRequest& request);
  // Counts the push and answers what the mode says when that is not "ok"; nullopt for "ok".
  std::optional<TestHttpReply> FaultReply();
  TestHttpReply HandlePush(const TestHttpRequest& request, bool otlp);
  TestHttpReply HandleMetricsPush(const TestHttpRequest& request);
  void Record(std::vector<std::string> lines);

  PushReceiverOptions options_;
  std::unique_ptr<TestHttpServer> server_;
  int output_fd_ = -1;
  mutable std::mutex mu_;
  ReceiverMode mode_;               // guarded by mu_
  int retry_after_seconds_;         // guarded by mu_
  std::vector<std::string> lines_;  // guarded by mu_
  std::atomic<uint64_t> push_requests_{0};
  std::atomic<uint64_t> accepted_requests_{0};
  std::atomic<uint64_t> decode_errors_{0};
};

}  // namespace gpuscope::testing
