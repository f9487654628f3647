// PushSender: the one sending loop behind every push sink (Loki, OTLP), and their PushSink
// (src/sinks/push_sink.h). A thread of its own reads
// batches from the shared DurableQueue as the named consumer options.name, turns each batch into one
// request body with options.encode and POSTs it (HttpClient, on libcurl: connection reuse, HTTP/2 over
// TLS, proxies from the environment, timeouts, https). What the receiver answers decides the batch's fate:
//   2xx                               -> Ack: delivered.
//   5xx, 429, connection/timeout/garbage, 3xx
//                                     -> keep it queued and retry with exponential backoff and jitter,
//                                        honouring Retry-After (seconds) on 429/503, capped at max_backoff.
//   any other 4xx (400, 401, 413)     -> Ack and count the records as dropped (reason="rejected"): the
//                                        receiver will never take them, and retrying would block the queue.
// A bearer token file that cannot be read when a request is due is a local failure: the batch stays
// queued and is retried with backoff (counted in failed requests, code="error").
// Delivery is at-least-once: a batch is acknowledged only after the receiver accepted it, so a stop or
// crash in between resends it. When the queue is empty the loop polls it every idle_poll, or at once
// after Wake().
//
// Thread-safety: Start(), Stop() and the destructor from one controlling thread; Wake() and Metrics()
// from any thread. The encode function runs on the sending thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/platform/http_client.h"
#include "src/sinks/push_sink.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {

struct EncodedBody {
  std::string body;
  std::string content_type;                                  // sent as Content-Type
  std::string content_encoding;                              // sent as Content-Encoding when not empty
  std::vector<std::pair<std::string, std::string>> headers;  // more headers for this request
};

// What became of a batch after one attempt, as PushSinkOptions::on_result hears it.
enum class BatchFate {
  kDelivered,  // 2xx: acknowledged
  kRejected,   // a 4xx other than 429: acknowledged and counted as dropped
  kRetry,      // kept queued: it will be sent again after a backoff
};

// Where and how a push sink sends: the URL and what every request to it carries. The sinks' options
// (PushSinkOptions, and those of the metrics sinks, which hold one per URL) share it, so that the agent
// sets TLS and credentials the same way for every sink.
struct PushEndpoint {
  std::string url;                                           // http://host:port/path or https://...
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (e.g. X-Scope-OrgID)
  std::string ca_file;    // https: PEM file of CAs to trust instead of the system trust store
  std::string cert_file;  // https: client certificate and key (PEM), both or neither
  std::string key_file;
  std::string username;       // HTTP basic auth when not empty, with the password in password_file
  std::string password_file;  // read at Start() (a trailing newline is not part of the password)
  // Authorization: Bearer <the file's content, trailing newline dropped>, read for every request so that
  // a rotated token is used at once. Mutually exclusive with basic auth.
  std::string bearer_token_file;
};

struct PushSinkOptions : PushEndpoint {
  std::string name;  // metrics label sink="loki"|"otlp"; also the queue consumer name
  size_t max_batch_records = 1000;
  size_t max_batch_bytes = 1 << 20;
  std::chrono::milliseconds timeout{10000};  // one request: connect, TLS, send, response
  std::chrono::milliseconds min_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds idle_poll{200};  // how often to look for new records when the queue is empty
  // Turns a batch of queue records (opaque bytes) into one request body. Pure; never fails.
  std::function<EncodedBody(const std::vector<std::string>& records)> encode;
  // Optional, for protocols that negotiate: called with a 2xx or 415 response. False means the receiver
  // did not take the batch the way it was encoded (e.g. it ignored a newer protocol) and the encoder has
  // changed its mind: the batch is encoded and sent again at once, without a backoff.
  std::function<bool(const HttpClientResponse& response)> accept;
  // Optional: told each batch's fate after every attempt (on the sending thread).
  std::function<void(const std::vector<std::string>& records, BatchFate fate)> on_result;
};

class PushSender final : public PushSink {
 public:
  PushSender(DurableQueue* queue, PushSinkOptions options);  // queue outlives the sender
  ~PushSender() override;                                    // Stop()
  PushSender(const PushSender&) = delete;
  PushSender& operator=(const PushSender&) = delete;

  // Starts the sending thread. InvalidArgument for a bad URL, an unreadable CA, certificate, key,
  // password or bearer token file, basic auth and a bearer token both set, a missing encode function, or
  // a name that is not a consumer of the queue; Internal if it is already running. Nothing runs then.
  Status Start() override;

  // Stops promptly: interrupts a backoff sleep or a request in flight and joins the thread. Nothing is
  // lost: a batch not yet acknowledged stays queued for the next start. Safe to call more than once.
  void Stop() override;

  // Producer hint: records were appended; an idle sender looks at the queue now instead of at its next
  // poll. Does not shorten a backoff.
  void Wake() override;

  // gpuscope_sink_requests_total{sink,code}, _sent_records_total, _sent_bytes_total,
  // _failed_requests_total, _dropped_records_total{sink,reason}, _last_success_timestamp_seconds,
  // _retry_backoff_seconds (the current wait before a retry; 0 when healthy).
  std::vector<MetricFamily> Metrics() const override;
  static std::vector<MetricDescription> Describe();

  // options.name.
  std::string_view Name() const override { return options_.name; }

 private:
  void Run();
  // What to do with the batch after one attempt.
  enum class Outcome { kDelivered, kRejected, kRetry, kResend, kStopped };
  Outcome Attempt(const QueueBatch& batch, std::chrono::milliseconds* retry_after);
  // Waits up to `duration`; false once Stop() was called. With `wakeable`, Wake() ends the wait early.
  bool Sleep(std::chrono::milliseconds duration, bool wakeable);
  std::chrono::milliseconds NextBackoff(std::chrono::milliseconds retry_after);
  void SetBackoff(std::chrono::milliseconds backoff);

  DurableQueue* queue_;
  PushSinkOptions options_;
  std::unique_ptr<HttpClient> client_;
  std::thread thread_;
  std::chrono::milliseconds backoff_{0};  // sending thread only
  std::minstd_rand rng_;                  // sending thread only (jitter)
  bool healthy_ = true;                   // sending thread only: for logging transitions once

  mutable Mutex mu_;
  CondVar cv_;
  bool running_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  std::map<std::string, uint64_t> requests_by_code_ GUARDED_BY(mu_);
  uint64_t sent_records_ GUARDED_BY(mu_) = 0;
  uint64_t sent_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t failed_requests_ GUARDED_BY(mu_) = 0;
  uint64_t dropped_rejected_ GUARDED_BY(mu_) = 0;
  double last_success_unix_seconds_ GUARDED_BY(mu_) = 0;
  double backoff_seconds_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscope
