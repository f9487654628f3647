// PushSink: a sink that sends what the agent produced to a remote receiver, on a thread of its own (Loki
// and OTLP logs today, each a PushSender reading the events' durable queue; remote_write and OTLP
// metrics next). The agent creates sinks by name from its registry (src/agent/event_registry.h), starts
// them before the producers, wakes them when new data is ready, stops them at shutdown and exports their
// metrics; it knows them only through this interface. What is not yet delivered when Stop() returns
// stays where the sink reads it from (the queue), for the next start.
//
// Thread-safety: Start() and Stop() from one owning thread; Name(), Wake() and Metrics() from any thread.
#pragma once

#include <string_view>
#include <vector>

#include "src/core/metric.h"
#include "src/core/status.h"

namespace gpuscope {

class PushSink {
 public:
  virtual ~PushSink() = default;

  // Stable name: the `sink` label of its metrics (and, for a queue reader, its consumer name).
  virtual std::string_view Name() const = 0;

  // Starts sending. An error (bad URL, unreadable CA file) means nothing runs.
  virtual Status Start() = 0;

  // Stops promptly and joins the sink's thread; safe to call more than once.
  virtual void Stop() = 0;

  // New data is ready: an idle sink looks now instead of at its next poll.
  virtual void Wake() = 0;

  // The sink's own families (requests, sent, failed, dropped), labelled sink=Name().
  virtual std::vector<MetricFamily> Metrics() const = 0;
};

}  // namespace gpuscope
