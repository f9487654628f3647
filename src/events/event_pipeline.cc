#include "src/events/event_pipeline.h"

#include <time.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "src/core/log.h"
#include "src/core/utf8.h"
#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/kernel_classifier.h"
#include "src/events/event_attribution.h"
#include "src/node/gpu_directory.h"
#include "src/node/job_table.h"
#include "src/node/xid_ledger.h"

namespace gpuscope {
namespace {

constexpr std::string_view kTruncatedMarker = " [truncated]";

int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::optional<uint32_t> ParseXid(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  uint32_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

}  // namespace

EventPipeline::EventPipeline(EventPipelineOptions options, XidLedger* ledger, const JobTable* jobs,
                             const GpuDirectory* gpus)
    : options_(std::move(options)), ledger_(ledger), jobs_(jobs), gpus_(gpus) {}

EventPipeline::~EventPipeline() { Stop(); }

Status EventPipeline::Start() {
  if (options_.sources.empty()) return Status::InvalidArgument("no event source configured");
  std::set<std::string_view> names;
  for (const auto& source : options_.sources) {
    if (!names.insert(source->Name()).second) {
      return Status::InvalidArgument("two event sources named '" + std::string(source->Name()) + "'");
    }
  }
  {
    MutexLock lock(&wait_mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void EventPipeline::Stop() {
  {
    MutexLock lock(&wait_mu_);
    stop_ = true;
  }
  wait_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void EventPipeline::Run() {
  // The first poll always runs, so what is there at start is read even when Stop() follows at once.
  while (true) {
    PollOnce();
    MutexLock lock(&wait_mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.poll_interval;
    while (!stop_ && std::chrono::steady_clock::now() < deadline) wait_cv_.WaitUntil(&wait_mu_, deadline);
    if (stop_) return;
  }
}

void EventPipeline::PollOnce() {
  shipped_this_poll_ = false;
  for (const auto& source : options_.sources) PollSource(*source);
  if (shipped_this_poll_ && options_.flush) options_.flush();
}

int64_t EventPipeline::NowUnixNs() const {
  return options_.now_unix_ns ? options_.now_unix_ns() : ClockNs(CLOCK_REALTIME);
}

void EventPipeline::SourceError(const std::string& source, const Status& status) {
  MutexLock lock(&mu_);
  ++sources_[source].poll_errors;
  std::string& last = last_error_[source];
  if (last != status.message()) {
    last = status.message();
    Log(LogLevel::kWarn, "event source failed", {{"source", source}, {"error", status.message()}});
  }
}

void EventPipeline::PollSource(EventSource& source) {
  const std::string_view name = source.Name();
  uint64_t lines = 0;
  Status status = source.Poll([&](const EventLine& line) {
    ++lines;
    ProcessLine(name, line);
  });
  const EventSource::Counters counters = source.counters();
  {
    MutexLock lock(&mu_);
    auto it = sources_.find(name);
    if (it == sources_.end()) it = sources_.emplace(std::string(name), SourceCounters{}).first;
    it->second.lines += lines;
    it->second.source = counters;
  }
  if (!status.ok()) SourceError(std::string(name), status);
}

void EventPipeline::ProcessLine(std::string_view source, const EventLine& in) {
  // The hot path: most lines match nothing and take no lock.
  const std::string_view line = in.text;
  std::optional<Event> event;
  if (in.event != nullptr) {
    event = *in.event;
  } else {
    event = ClassifyKernelLine(line);
    if (!event && !in.kernel_only) event = ClassifyJobLine(line);
  }
  if (!event) return;
  const int64_t time_unix_ns = in.time_unix_ns != 0 ? in.time_unix_ns : NowUnixNs();
  const double seconds = static_cast<double>(time_unix_ns) / 1e9;

  if (ledger_ != nullptr && event->event_class == "xid") {
    if (auto xid = ParseXid(event->Field("xid"))) {
      ledger_->Record(XidObserver::kKernelLog, event->Field("pci_bus_id"), *xid, seconds);
    }
  }
  const std::string_view path = in.origin_is_path ? in.origin : std::string_view();
  std::shared_ptr<const JobTable::View> view = jobs_ != nullptr ? jobs_->Current() : nullptr;
  EventAttribution who = AttributeEvent(*event, path, view.get(), gpus_);

  const bool ship = options_.ship && event->severity >= options_.ship_severity;
  {
    MutexLock lock(&mu_);
    ++events_[{std::string(source), event->event_class, std::string(EventSeverityName(event->severity))}];
    double& last = last_seen_[event->event_class];
    last = std::max(last, seconds);
  }
  if (!ship) return;

  EventRecord record;
  record.time_unix_ns = time_unix_ns;
  record.host = options_.host;
  record.source = std::string(source);
  record.origin = ToValidUtf8(in.origin);
  // Lines from files are already cut by the tailer; kmsg records are short; cap what else arrives.
  std::string_view kept = line.substr(0, std::min(line.size(), options_.max_line_bytes));
  record.line = ToValidUtf8(kept);
  if (kept.size() < line.size()) record.line += kTruncatedMarker;
  record.event = std::move(*event);
  record.job_id = std::move(who.job_id);
  record.user = std::move(who.user);
  record.account = std::move(who.account);
  record.gpu = std::move(who.gpu);
  record.uuid = std::move(who.uuid);
  Status status = options_.ship(record);
  MutexLock lock(&mu_);
  if (status.ok()) {
    ++shipped_;
    shipped_this_poll_ = true;
  } else {
    ++not_shipped_["queue"];
  }
}

std::vector<MetricFamily> EventPipeline::Metrics() const {
  MutexLock lock(&mu_);
  std::vector<MetricFamily> out;
  MetricFamily events = Family("gpuscope_events_total",
                               "Events classified from the event sources, by source, class and severity.",
                               MetricType::kCounter);
  for (const auto& [key, count] : events_) {
    const auto& [source, event_class, severity] = key;
    events.samples.push_back(Sample{{{"source", source}, {"class", event_class}, {"severity", severity}},
                                    static_cast<double>(count)});
  }
  out.push_back(std::move(events));
  MetricFamily last = Family("gpuscope_event_last_seen_timestamp_seconds",
                             "When an event of the class was last seen (Unix time).", MetricType::kGauge);
  for (const auto& [event_class, seconds] : last_seen_)
    last.samples.push_back(Sample{{{"class", event_class}}, seconds});
  out.push_back(std::move(last));
  MetricFamily lines =
      Family("gpuscope_event_lines_total", "Lines read from the event sources.", MetricType::kCounter);
  MetricFamily truncated =
      Family("gpuscope_event_lines_truncated_total",
             "Lines longer than the line limit, cut with a \" [truncated]\" marker.", MetricType::kCounter);
  MetricFamily errors =
      Family("gpuscope_event_source_errors_total",
             "Failed opens, reads and checkpoint writes of the event sources.", MetricType::kCounter);
  for (const auto& [source, c] : sources_) {
    lines.samples.push_back(Sample{{{"source", source}}, static_cast<double>(c.lines)});
    truncated.samples.push_back(Sample{{{"source", source}}, static_cast<double>(c.source.truncated_lines)});
    errors.samples.push_back(
        Sample{{{"source", source}}, static_cast<double>(c.poll_errors + c.source.read_errors)});
  }
  out.push_back(std::move(lines));
  out.push_back(std::move(truncated));
  out.push_back(std::move(errors));
  MetricFamily shipped = Family("gpuscope_events_shipped_total", "Events handed to the push sinks' queue.",
                                MetricType::kCounter);
  shipped.samples.push_back(Sample{{}, static_cast<double>(shipped_)});
  out.push_back(std::move(shipped));
  MetricFamily not_shipped =
      Family("gpuscope_events_not_shipped_total",
             "Events at or above the ship severity the queue did not take.", MetricType::kCounter);
  auto queue_failures = not_shipped_.find("queue");
  not_shipped.samples.push_back(
      Sample{{{"reason", "queue"}},
             static_cast<double>(queue_failures == not_shipped_.end() ? 0 : queue_failures->second)});
  out.push_back(std::move(not_shipped));
  // Sources of one kind (every PostedEventSource: training, ebpf) append the same family, each with its
  // own `source` samples: one family of that name, with all their samples.
  const size_t own = out.size();
  for (const auto& source : options_.sources) {
    std::vector<MetricFamily> appended;
    source->AppendMetrics(appended);
    for (MetricFamily& family : appended) {
      auto same = std::find_if(out.begin() + static_cast<std::ptrdiff_t>(own), out.end(),
                               [&](const MetricFamily& f) { return f.name == family.name; });
      if (same == out.end()) {
        out.push_back(std::move(family));
      } else {
        for (Sample& sample : family.samples) same->samples.push_back(std::move(sample));
      }
    }
  }
  return out;
}

std::vector<MetricDescription> EventPipeline::Describe() {
  auto d = [](std::string name, MetricType type, std::string help, std::vector<std::string> labels,
              std::string source) {
    MetricDescription m;
    m.name = std::move(name);
    m.type = type;
    m.help = std::move(help);
    m.labels = std::move(labels);
    m.source = std::move(source);
    return m;
  };
  const MetricType C = MetricType::kCounter;
  return {
      d("gpuscope_events_total", C,
        "Events classified from the event sources, by source, class and severity.",
        {"source", "class", "severity"}, "the event sources' lines through the classifiers"),
      d("gpuscope_event_last_seen_timestamp_seconds", MetricType::kGauge,
        "When an event of the class was last seen (Unix time).", {"class"}, "event pipeline"),
      d("gpuscope_event_lines_total", C, "Lines read from the event sources.", {"source"}, "event pipeline"),
      d("gpuscope_event_lines_truncated_total", C,
        "Lines longer than the line limit, cut with a \" [truncated]\" marker.", {"source"},
        "event pipeline"),
      d("gpuscope_event_source_errors_total", C,
        "Failed opens, reads and checkpoint writes of the event sources.", {"source"}, "event pipeline"),
      d("gpuscope_events_shipped_total", C, "Events handed to the push sinks' queue.", {}, "event pipeline"),
      d("gpuscope_events_not_shipped_total", C,
        "Events at or above the ship severity the queue did not take.", {"reason"}, "event pipeline"),
  };
}

}  // namespace gpuscope
