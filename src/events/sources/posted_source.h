// PostedEvents and PostedEventSource: events the agent's own detectors raise (the training source's hung
// ranks: class training_hang), handed to the event path as a log's lines are, so they are counted
// (gpuscope_events_total), attributed and shipped (Loki, OTLP logs) like every other event.
//
// A detector Post()s an event with its line and time into a PostedEvents; the PostedEventSource over it
// (one per detector, named as its `source` label) hands every waiting event to the pipeline at its next
// poll, already classified (EventLine::event). At most `capacity` events wait: a detector that posts into
// a full one (no pipeline polling it) loses the event, and the source counts it
// (gpuscope_event_posted_dropped_total{source}). Nothing is kept across restarts: a detector raises its
// events again from its own state.
//
// Thread-safety: PostedEvents: any thread. PostedEventSource: as EventSource.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "src/core/mutex.h"
#include "src/events/event.h"
#include "src/events/event_source.h"

namespace gpuscope {

struct PostedEvent {
  Event event;
  std::string line;          // the human line (what Loki shows)
  std::string origin;        // what raised it, e.g. "training"
  int64_t time_unix_ns = 0;  // when it was raised; 0: when the pipeline reads it
};

class PostedEvents {
 public:
  explicit PostedEvents(size_t capacity = 1024) : capacity_(capacity) {}

  // Queues `event`; false (and counted) when `capacity` events wait already.
  bool Post(PostedEvent event);
  // Every waiting event, oldest first.
  std::vector<PostedEvent> Take();
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  Mutex mu_;
  std::deque<PostedEvent> waiting_ GUARDED_BY(mu_);
  std::atomic<uint64_t> dropped_{0};
};

class PostedEventSource final : public EventSource {
 public:
  // `events` outlives the source.
  PostedEventSource(std::string name, PostedEvents* events) : name_(std::move(name)), events_(events) {}

  std::string_view Name() const override { return name_; }
  Status Poll(const Emit& emit) override;
  Counters counters() const override { return {}; }
  void AppendMetrics(std::vector<MetricFamily>& out) const override;
  static std::vector<MetricDescription> Describe();

 private:
  const std::string name_;
  PostedEvents* events_;
};

}  // namespace gpuscope
