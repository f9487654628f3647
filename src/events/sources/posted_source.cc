#include "src/events/sources/posted_source.h"

#include <utility>

namespace gpuscope {

bool PostedEvents::Post(PostedEvent event) {
  MutexLock lock(&mu_);
  if (waiting_.size() >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  waiting_.push_back(std::move(event));
  return true;
}

std::vector<PostedEvent> PostedEvents::Take() {
  MutexLock lock(&mu_);
  std::vector<PostedEvent> out(std::make_move_iterator(waiting_.begin()),
                               std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  return out;
}

Status PostedEventSource::Poll(const Emit& emit) {
  for (const PostedEvent& posted : events_->Take()) {
    EventLine line;
    line.text = posted.line;
    line.origin = posted.origin;
    line.time_unix_ns = posted.time_unix_ns;
    line.event = &posted.event;
    emit(line);
  }
  return Status::Ok();
}

void PostedEventSource::AppendMetrics(std::vector<MetricFamily>& out) const {
  std::vector<MetricDescription> d = Describe();
  MetricFamily dropped;
  dropped.name = std::move(d[0].name);
  dropped.help = std::move(d[0].help);
  dropped.type = d[0].type;
  dropped.samples.push_back(Sample{{{"source", name_}}, static_cast<double>(events_->dropped())});
  out.push_back(std::move(dropped));
}

std::vector<MetricDescription> PostedEventSource::Describe() {
  MetricDescription dropped;
  dropped.name = "gpuscope_event_posted_dropped_total";
  dropped.type = MetricType::kCounter;
  dropped.help =
      "Events handed to the agent that were lost because too many waited for the event pipeline: its own "
      "detectors' (training, ebpf) and Falco's http_output (falco).";
  dropped.labels = {"source"};
  dropped.source = "the agent's detectors (hung ranks, eBPF findings) and POST /api/v1/falco";
  return {dropped};
}

}  // namespace gpuscope
