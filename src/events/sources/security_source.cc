#include "src/events/sources/security_source.h"

#include <algorithm>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/proc_cgroup.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxCgroupFileBytes = 64 * 1024;
constexpr std::chrono::seconds kErrorLogInterval{60};

std::string_view ToolName(SecurityTool tool) { return tool == SecurityTool::kFalco ? "falco" : "tetragon"; }

Status Parse(SecurityTool tool, std::string_view line, SecurityEvent* out) {
  return tool == SecurityTool::kFalco ? ParseFalcoEvent(line, out) : ParseTetragonEvent(line, out);
}

// The Slurm job whose cgroup holds `pid` now; "" when none, or when the process is gone.
std::string JobOfPid(const std::string& procfs, std::string_view pid) {
  if (pid.empty() || procfs.empty()) return "";
  std::optional<std::string> cgroup =
      ReadWholeFile(procfs + "/" + std::string(pid) + "/cgroup", kMaxCgroupFileBytes);
  if (!cgroup) return "";
  std::optional<SlurmCgroup> job = ParseProcCgroup(*cgroup);
  return job ? job->job_id : "";
}

}  // namespace

Event SecurityEventToEvent(const SecurityEvent& parsed, const std::string& procfs) {
  Event event;
  event.event_class = std::string(ToolName(parsed.tool));
  event.severity = ParseEventSeverity(parsed.severity).value_or(EventSeverity::kInfo);
  event.summary = parsed.summary;
  event.fields = {{"rule", parsed.rule},         {"priority", parsed.priority},
                  {"pid", parsed.pid},           {"process", parsed.process},
                  {"process_user", parsed.user}, {"container_id", parsed.container_id},
                  {"pod", parsed.pod},           {"namespace", parsed.namespace_name}};
  event.fields.insert(event.fields.end(), parsed.extra.begin(), parsed.extra.end());
  if (std::string job = JobOfPid(procfs, parsed.pid); !job.empty()) {
    event.fields.emplace_back("job_id", std::move(job));
  }
  return event;
}

Status SecurityEventForPost(std::string_view json, const std::string& procfs, PostedEvent* out) {
  SecurityEvent parsed;
  if (Status status = ParseFalcoEvent(json, &parsed); !status.ok()) return status;
  out->event = SecurityEventToEvent(parsed, procfs);
  // The human line (Falco's output text), as for the files: the JSON's fields travel as the event's fields.
  out->line = out->event.summary;
  out->origin = "http_output";
  out->time_unix_ns = parsed.time_unix_ns;
  return Status::Ok();
}

Status PostFalcoEvents(std::string_view body, const std::string& procfs, PostedEvents* queue) {
  std::vector<PostedEvent> events;
  size_t line_number = 0;
  while (!body.empty()) {
    const size_t newline = body.find('\n');
    std::string_view line = body.substr(0, newline);
    body.remove_prefix(newline == std::string_view::npos ? body.size() : newline + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    PostedEvent event;
    if (Status status = SecurityEventForPost(line, procfs, &event); !status.ok()) {
      std::string why = "line " + std::to_string(line_number) + ": " + status.message();
      std::replace_if(
          why.begin(), why.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
      return Status::InvalidArgument(std::move(why));
    }
    events.push_back(std::move(event));
  }
  if (events.empty()) return Status::InvalidArgument("no Falco event in the body");
  size_t lost = 0;
  for (PostedEvent& event : events) {
    if (!queue->Post(std::move(event))) ++lost;
  }
  if (lost != 0) {
    return Status::Unavailable(std::to_string(lost) + " of " + std::to_string(events.size()) +
                               " events lost: too many wait for the event pipeline");
  }
  return Status::Ok();
}

SecuritySource::SecuritySource(Options options) : options_(std::move(options)) {
  if (!options_.files.globs.empty()) tailer_.emplace(options_.files);
  if (options_.posted != nullptr) posted_.emplace(std::string(Name()), options_.posted);
}

std::string_view SecuritySource::Name() const { return ToolName(options_.tool); }

void SecuritySource::Count(std::string_view rule, std::string_view priority) {
  MutexLock lock(&mu_);
  std::string_view counted = rule;
  if (rules_.find(rule) == rules_.end()) {
    if (rules_.size() < options_.max_rules) {
      rules_.emplace(rule);
    } else {
      counted = "other";  // bounded: a flood of generated rule names cannot grow the family
    }
  }
  ++events_[{std::string(counted), std::string(priority)}];
}

void SecuritySource::ParseFailed(std::string_view origin, const Status& status) {
  ++parse_errors_;
  const auto now = std::chrono::steady_clock::now();
  if (parse_errors_ > 1 && now - last_error_log_ < kErrorLogInterval) {
    ++unlogged_errors_;
    return;
  }
  last_error_log_ = now;
  Log(LogLevel::kWarn, "security event not parsed",
      {{"source", Name()},
       {"origin", origin},
       {"error", status.message()},
       {"not_logged_since_last", std::to_string(unlogged_errors_)}});
  unlogged_errors_ = 0;
}

Status SecuritySource::Poll(const Emit& emit) {
  Status status = Status::Ok();
  if (tailer_) {
    status = tailer_->PollOnce([&](std::string_view path, std::string_view text) {
      SecurityEvent parsed;
      if (Status parse = Parse(options_.tool, text, &parsed); !parse.ok()) {
        ParseFailed(path, parse);
        return;
      }
      const Event event = SecurityEventToEvent(parsed, options_.procfs);
      Count(event.Field("rule"), event.Field("priority"));
      EventLine line;
      // What Loki shows: Falco's output text, Tetragon's summary; the JSON's fields travel as the event's
      // fields (structured metadata), and a JSON line would be split into fields by some receivers.
      line.text = event.summary;
      line.origin = path;
      line.time_unix_ns = parsed.time_unix_ns;
      line.event = &event;
      emit(line);
    });
  }
  if (posted_) {
    // What Falco's http_output POSTed: already events (SecurityEventForPost), counted as they pass.
    posted_->Poll([&](const EventLine& line) {
      Count(line.event->Field("rule"), line.event->Field("priority"));
      emit(line);
    });
  }
  return status;
}

EventSource::Counters SecuritySource::counters() const {
  Counters c;
  if (tailer_) {
    c.truncated_lines = tailer_->counters().truncated_lines;
    c.read_errors = tailer_->counters().read_errors;
  }
  c.read_errors += parse_errors_;
  return c;
}

void SecuritySource::AppendMetrics(std::vector<MetricFamily>& out) const {
  std::vector<MetricDescription> d = Describe(options_.tool);
  MetricFamily family;
  family.name = std::move(d[0].name);
  family.help = std::move(d[0].help);
  family.type = d[0].type;
  {
    MutexLock lock(&mu_);
    for (const auto& [key, count] : events_) {
      family.samples.push_back(
          Sample{{{"source", std::string(Name())}, {"rule", key.first}, {"priority", key.second}},
                 static_cast<double>(count)});
    }
  }
  out.push_back(std::move(family));
  if (posted_) {
    posted_->AppendMetrics(out);  // gpuscope_event_posted_dropped_total{source="falco"}
  } else if (options_.tool == SecurityTool::kFalco) {
    MetricFamily dropped = FamilyOf(d[1]);  // no http_output: nothing can be dropped
    dropped.samples.push_back(Sample{{{"source", std::string(Name())}}, 0.0});
    out.push_back(std::move(dropped));
  }
}

std::vector<MetricDescription> SecuritySource::Describe(SecurityTool tool) {
  MetricDescription events;
  events.name = "gpuscope_security_events_total";
  events.type = MetricType::kCounter;
  events.help =
      "Falco and Tetragon events read, by source (falco, tetragon), rule (Falco's rule; Tetragon's policy "
      "or event kind; at most 200 per source, then other) and priority (Falco's priority; Tetragon's "
      "severity).";
  events.labels = {"source", "rule", "priority"};
  events.source = "Falco's JSON output and Tetragon's JSON export";
  std::vector<MetricDescription> out = {events};
  if (tool == SecurityTool::kFalco) {  // Falco over HTTP
    for (MetricDescription& d : PostedEventSource::Describe()) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace gpuscope
