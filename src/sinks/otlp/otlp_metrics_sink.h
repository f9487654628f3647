// OtlpMetricsSink: the agent's metrics pushed as OTLP/HTTP metrics (protobuf, POST to e.g.
// http://collector:4318/v1/metrics), a PushSink (src/sinks/push_sink.h) created from the push sink
// registry.
//
// The shape of RemoteWriteSink (the queue and the interval loop are their shared SnapshotProducer,
// src/sinks/push/snapshot_producer.h): every interval a producer thread takes the SnapshotStore's current
// snapshot, encodes it as one ExportMetricsServiceRequest stamped with the current time
// (src/sinks/otlp/otlp_metrics.h: gauges as Gauge, counters as cumulative monotonic Sum starting at the
// sink's start, info families as Gauges of 1, labels as attributes) and appends it to its own
// DurableQueue (<queue>/otlp_metrics). One PushSender (consumer otlp_metrics) sends the queue oldest first,
// joining up to ten queued requests into one body (concatenated requests are one request): an outage
// or a restart loses nothing within the queue's disk bound; 5xx, 429 and connection errors are retried
// with backoff, other 4xx dropped and counted, as for every push sink.
//
// Thread-safety: Start() and Stop() from one owning thread; Name(), Wake(), Metrics() and QueueSnapshot()
// from any thread (QueueSnapshot serialises with the producer thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/snapshot.h"
#include "src/core/status.h"
#include "src/sinks/otlp/otlp_logs.h"
#include "src/sinks/push/push_sender.h"
#include "src/sinks/push/snapshot_producer.h"
#include "src/sinks/push_sink.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {

struct OtlpMetricsOptions {
  PushEndpoint endpoint;  // the URL (required), headers, TLS and credentials
  std::chrono::milliseconds interval{15000};
  std::vector<OtlpAttribute> resource_attributes;  // service.name, host.name
  std::string queue_directory;                     // created if missing
  uint64_t queue_max_bytes = 256ull << 20;
  const SnapshotStore* snapshots = nullptr;  // outlives the sink
  std::function<int64_t()> now_unix_ms;      // point timestamps; the system clock if empty
  std::chrono::milliseconds min_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
};

class OtlpMetricsSink final : public PushSink {
 public:
  explicit OtlpMetricsSink(OtlpMetricsOptions options);
  ~OtlpMetricsSink() override;  // Stop()
  OtlpMetricsSink(const OtlpMetricsSink&) = delete;
  OtlpMetricsSink& operator=(const OtlpMetricsSink&) = delete;

  std::string_view Name() const override { return "otlp_metrics"; }
  // Opens the queue and starts the sender and the producer. InvalidArgument for no URL, a bad URL or an
  // unreadable TLS, password or token file; Unavailable when the queue directory cannot be used. Nothing runs
  // then.
  Status Start() override;
  // Stops the producer, then the sender; what is queued stays queued for the next start.
  void Stop() override;
  void Wake() override;
  std::vector<MetricFamily> Metrics()
      const override;  // the sender's and the queue's (no samples before Start)
  static std::vector<MetricDescription> Describe();

  // Queues one request of `snapshot` stamped `timestamp_ms` now (the producer thread calls this every
  // interval). Unavailable before Start() or on a queue write error (the request is lost).
  Status QueueSnapshot(const Snapshot& snapshot, int64_t timestamp_ms);

 private:
  OtlpMetricsOptions options_;
  SnapshotProducer producer_;  // calls QueueSnapshot every interval

  mutable Mutex mu_;
  std::unique_ptr<DurableQueue> queue_ GUARDED_BY(mu_);
  std::unique_ptr<PushSender> sender_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  int64_t start_ms_ GUARDED_BY(mu_) = 0;  // the Sums' start time
};

}  // namespace gpuscope
