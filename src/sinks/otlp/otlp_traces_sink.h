// OtlpTracesSink: spans pushed as OTLP/HTTP traces (protobuf, POST to e.g.
// http://collector:4318/v1/traces), a PushSink (src/sinks/push_sink.h) created from the push sink
// registry, and the SpanExporter (src/core/span.h) the agent hands the span producers (the training
// collector).
//
// Export() appends each span as one record (its encoded Span message, src/sinks/otlp/otlp_traces.h) to
// the sink's own DurableQueue (<queue>/otlp_traces), syncs it once per call and wakes the sender; it
// never waits for the receiver. One PushSender (consumer otlp_traces) sends the queue oldest first, up to
// 1,000 spans per request, wrapped in one ExportTraceServiceRequest under the node's resource
// (service.name, host.name) and the agent as scope: an outage or a restart loses nothing within the
// queue's disk bound (the oldest spans go first when it is full, counted); 5xx, 429 and connection errors
// are retried with backoff, other 4xx dropped and counted, as for every push sink. One record per span,
// so the sender's and the queue's record counts are span counts.
//
// Spans exported before Start() (no queue yet) or that the queue refuses (a write error, a span larger
// than the queue) are dropped and counted (gpuscope_otlp_traces_unqueued_spans_total{reason}). After
// Stop() the queue stays open: spans still exported are kept for the next start.
//
// Thread-safety: Start() and Stop() from one owning thread; Name(), Wake(), Metrics() and Export() from
// any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/span.h"
#include "src/core/status.h"
#include "src/sinks/otlp/otlp_logs.h"
#include "src/sinks/push/push_sender.h"
#include "src/sinks/push_sink.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {

struct OtlpTracesOptions {
  PushEndpoint endpoint;                           // the URL (required), headers, TLS and credentials
  std::vector<OtlpAttribute> resource_attributes;  // service.name, host.name
  std::string queue_directory;                     // created if missing
  uint64_t queue_max_bytes = 256ull << 20;
  std::chrono::milliseconds min_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
};

class OtlpTracesSink final : public PushSink, public SpanExporter {
 public:
  explicit OtlpTracesSink(OtlpTracesOptions options);
  ~OtlpTracesSink() override;  // Stop()
  OtlpTracesSink(const OtlpTracesSink&) = delete;
  OtlpTracesSink& operator=(const OtlpTracesSink&) = delete;

  std::string_view Name() const override { return "otlp_traces"; }
  // Opens the queue and starts the sender. InvalidArgument for no URL, a bad URL or an unreadable TLS,
  // password or token file; Unavailable when the queue directory cannot be used. Nothing runs then.
  Status Start() override;
  // Stops the sender; what is queued stays queued for the next start.
  void Stop() override;
  void Wake() override;
  // The sender's and the queue's families (labelled otlp_traces) and the spans that could not be queued.
  std::vector<MetricFamily> Metrics() const override;
  static std::vector<MetricDescription> Describe();

  void Export(const std::vector<Span>& spans) override;

 private:
  OtlpTracesOptions options_;

  mutable Mutex mu_;
  std::unique_ptr<DurableQueue> queue_ GUARDED_BY(mu_);
  std::unique_ptr<PushSender> sender_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  uint64_t unqueued_not_started_ GUARDED_BY(mu_) = 0;
  uint64_t unqueued_queue_error_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscope
