// SecuritySource: Falco's and Tetragon's JSON events as an EventSource, one source per tool (named "falco"
// and "tetragon": the `source` label). It tails the tool's JSON files (FileTailer: rotation, truncation,
// its own checkpoint) and, for Falco, takes the events its http_output POSTed to the agent
// (PostedEvents, filled by the agent's POST /api/v1/falco through SecurityEventForPost). Each line goes to
// the pipeline with its Event already made (EventLine::event; classes "falco" and "tetragon"), so the
// classifiers are skipped; the pipeline counts, attributes (field job_id) and ships it as any event.
//
// A line that is not the tool's JSON is counted as a read error (gpuscope_event_source_errors_total) and
// logged at most once a minute (with how many were not logged); the lines around it are not affected.
// Exports gpuscope_security_events_total{source,rule,priority}; at most max_rules distinct rules per
// source, later ones are counted as rule="other".
//
// Job: when the event names a pid and <procfs>/<pid>/cgroup names a Slurm job (ParseProcCgroup), the
// event's job_id field is set. A process that is gone (or a file that cannot be read) gives no job, never
// an error.
//
// Thread-safety: as EventSource (AppendMetrics from any thread); SecurityEventForPost from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/mutex.h"
#include "src/events/event_source.h"
#include "src/events/sources/file_tailer.h"
#include "src/events/sources/posted_source.h"
#include "src/parsers/security_events.h"

namespace gpuscope {

// The Event of a parsed Falco or Tetragon event: class "falco" or "tetragon", severity from the parser's
// mapping, fields in this order: rule, priority, pid, process, process_user, container_id, pod, namespace,
// then the tool's own (SecurityEvent::extra), then job_id when <procfs>/<pid>/cgroup names a Slurm job.
Event SecurityEventToEvent(const SecurityEvent& parsed, const std::string& procfs);

// One POSTed Falco event (a JSON object) as a PostedEvent for the falco source; InvalidArgument when it
// does not parse.
Status SecurityEventForPost(std::string_view json, const std::string& procfs, PostedEvent* out);

// Queues the Falco events of one request body (Falco's http_output sends one JSON object; a body may hold
// several, one a line; blank lines are skipped) into `queue` for the falco source. Every object is parsed
// before any is queued: InvalidArgument ("line N: why", one line) when one does not parse or the body
// holds none, and nothing is queued. Unavailable when the queue is full: the events it took are queued,
// the others are lost and counted by the queue (gpuscope_event_posted_dropped_total{source="falco"}).
Status PostFalcoEvents(std::string_view body, const std::string& procfs, PostedEvents* queue);

class SecuritySource final : public EventSource {
 public:
  struct Options {
    SecurityTool tool = SecurityTool::kFalco;
    FileTailer::Options files;  // no globs: no file is read (Falco over HTTP only)
    std::string procfs = "/proc";
    PostedEvents* posted = nullptr;  // Falco's http_output events; null: none. Outlives the source.
    size_t max_rules = 200;
  };

  explicit SecuritySource(Options options);

  std::string_view Name() const override;
  Status Poll(const Emit& emit) override;
  Counters counters() const override;
  void AppendMetrics(std::vector<MetricFamily>& out) const override;
  // The families the source of `tool` appends: gpuscope_security_events_total; for Falco also
  // gpuscope_event_posted_dropped_total{source="falco"} (Falco's http_output queue; 0 without it).
  static std::vector<MetricDescription> Describe(SecurityTool tool);

 private:
  void Count(std::string_view rule, std::string_view priority);
  void ParseFailed(std::string_view origin, const Status& status);

  Options options_;
  std::optional<FileTailer> tailer_;
  std::optional<PostedEventSource> posted_;
  uint64_t parse_errors_ = 0;  // pipeline thread only
  uint64_t unlogged_errors_ = 0;
  std::chrono::steady_clock::time_point last_error_log_{};
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> events_ GUARDED_BY(mu_);  // (rule, priority)
  std::set<std::string, std::less<>> rules_ GUARDED_BY(mu_);                        // distinct rules counted
};

}  // namespace gpuscope
