#include "src/agent/event_registry.h"

#include <cstdlib>
#include <filesystem>

#include "src/events/sources/file_source.h"
#include "src/events/sources/journal_source.h"
#include "src/events/sources/kmsg_source.h"
#include "src/events/sources/posted_source.h"
#include "src/events/sources/security_source.h"
#include "src/sinks/loki/loki_events.h"
#include "src/sinks/otlp/otlp_events.h"
#include "src/sinks/otlp/otlp_metrics_sink.h"
#include "src/sinks/otlp/otlp_traces_sink.h"
#include "src/sinks/push/push_sender.h"
#include "src/sinks/remote_write/remote_write_sink.h"

namespace gpuscope {
namespace {

// Where a source keeps its checkpoint; empty (no checkpoint) without a state directory.
std::string CheckpointPath(const AgentConfig& config, std::string_view name) {
  if (config.events_state_dir.empty()) return "";
  return (std::filesystem::path(config.events_state_dir) / name).string();
}

EventSourceEntry KmsgSourceEntry() {
  return {"kmsg", "kernel log records from /dev/kmsg, resumed by sequence number",
          [](const AgentConfig& config) { return !config.events_kmsg_path.empty(); },
          [](const AgentConfig& config, const EventSourceContext&) -> std::unique_ptr<EventSource> {
            KmsgSource::Options o;
            o.reader.path = config.events_kmsg_path;
            o.reader.checkpoint_path = CheckpointPath(config, "kmsg.seq");
            return std::make_unique<KmsgSource>(std::move(o));
          },
          &KmsgSource::Describe};
}

EventSourceEntry FileSourceEntry() {
  return {"file", "files matching the --events.file globs, followed through rotation",
          [](const AgentConfig& config) { return !config.events_files.empty(); },
          [](const AgentConfig& config, const EventSourceContext&) -> std::unique_ptr<EventSource> {
            FileTailer::Options o;
            o.globs = config.events_files;
            o.checkpoint_path = CheckpointPath(config, "files.checkpoint");
            o.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
            return std::make_unique<FileSource>(std::move(o));
          },
          &FileSource::Describe};
}

EventSourceEntry JournalSourceEntry() {
  return {"journal", "the systemd journal from this boot on, resumed by cursor",
          [](const AgentConfig& config) { return config.events_journal; },
          [](const AgentConfig& config, const EventSourceContext&) -> std::unique_ptr<EventSource> {
            JournalReader::Options o;
            o.directory = config.events_journal_directory;
            o.matches = config.events_journal_matches;
            o.checkpoint_path = CheckpointPath(config, "journal.cursor");
            // A first start (no checkpoint) reads this boot's entries, as /dev/kmsg would hold them.
            o.start = JournalReader::Start::kThisBoot;
            o.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
            o.max_entries_per_poll = 10000;
            return std::make_unique<JournalSource>(std::move(o));
          },
          [] { return std::vector<MetricDescription>{}; }};
}

// A source of the events a collector posts (PostedEvents): on with that collector, empty when nothing
// posts to it.
EventSourceEntry PostedSourceEntry(const std::string& name, std::string help, const std::string& collector,
                                   PostedEvents* EventSourceContext::*queue) {
  return {
      name, std::move(help),
      [collector](const AgentConfig& config) {
        auto it = config.collectors.find(collector);
        return it != config.collectors.end() && it->second.enabled;
      },
      [name, queue](const AgentConfig&, const EventSourceContext& context) -> std::unique_ptr<EventSource> {
        static PostedEvents none(0);  // no collector posts: a source that stays empty
        PostedEvents* events = context.*queue;
        return std::make_unique<PostedEventSource>(name, events != nullptr ? events : &none);
      },
      &PostedEventSource::Describe};
}

// Falco's or Tetragon's JSON events: the tool's files and, for Falco, what its http_output POSTed.
EventSourceEntry SecuritySourceEntry(SecurityTool tool) {
  const bool falco = tool == SecurityTool::kFalco;
  return {falco ? "falco" : "tetragon",
          falco ? "Falco's JSON output (--events.falco-file, and POST /api/v1/falco with --events.falco-http)"
                : "Tetragon's JSON export (--events.tetragon-file)",
          [falco](const AgentConfig& config) {
            return falco ? !config.events_falco_files.empty() || config.events_falco_http
                         : !config.events_tetragon_files.empty();
          },
          [tool, falco](const AgentConfig& config,
                        const EventSourceContext& context) -> std::unique_ptr<EventSource> {
            SecuritySource::Options o;
            o.tool = tool;
            o.files.globs = falco ? config.events_falco_files : config.events_tetragon_files;
            o.files.checkpoint_path =
                CheckpointPath(config, falco ? "falco.checkpoint" : "tetragon.checkpoint");
            o.files.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
            o.procfs = config.procfs;
            if (falco && config.events_falco_http) o.posted = context.falco_events;
            return std::make_unique<SecuritySource>(std::move(o));
          },
          [tool] { return SecuritySource::Describe(tool); }};
}

// "name=value" (validated by the options) as a pair.
std::pair<std::string, std::string> SplitPair(const std::string& pair) {
  const size_t eq = pair.find('=');
  return {pair.substr(0, eq), pair.substr(eq + 1)};
}

// The options every queue-reading push sink shares.
PushSinkOptions QueueSinkOptions(const AgentConfig& config, std::string name, std::string url) {
  PushSinkOptions o;
  o.name = std::move(name);
  o.url = std::move(url);
  o.ca_file = config.sink_tls_ca_file;
  return o;
}

// The OTLP sinks' receiver (logs and metrics alike): headers, credentials and client certificate.
PushEndpoint OtlpEndpoint(const AgentConfig& config, std::string url) {
  PushEndpoint e;
  e.url = std::move(url);
  for (const std::string& header : config.otlp_headers) e.headers.push_back(SplitPair(header));
  e.ca_file = config.sink_tls_ca_file;
  e.cert_file = config.otlp_tls_cert_file;
  e.key_file = config.otlp_tls_key_file;
  e.username = config.otlp_basic_auth_username;
  e.password_file = config.otlp_basic_auth_password_file;
  e.bearer_token_file = config.otlp_bearer_token_file;
  return e;
}

// The remote_write receivers: the URLs with the shared settings, then the endpoints with their own.
std::vector<RemoteWriteEndpoint> RemoteWriteEndpoints(const AgentConfig& config) {
  RemoteWriteProtocol shared_protocol = RemoteWriteProtocol::kV1;
  ParseRemoteWriteProtocol(config.remote_write_protocol, &shared_protocol);  // validated by the options
  std::vector<RemoteWriteEndpoint> out;
  for (const std::string& url : config.remote_write_urls) {
    RemoteWriteEndpoint e;
    e.url = url;
    e.protocol = shared_protocol;
    if (!config.remote_write_tenant.empty())
      e.headers.emplace_back("X-Scope-OrgID", config.remote_write_tenant);
    e.ca_file = config.sink_tls_ca_file;
    e.cert_file = config.remote_write_tls_cert_file;
    e.key_file = config.remote_write_tls_key_file;
    e.username = config.remote_write_basic_auth_username;
    e.password_file = config.remote_write_basic_auth_password_file;
    e.bearer_token_file = config.remote_write_bearer_token_file;
    out.push_back(std::move(e));
  }
  for (const RemoteWriteEndpointConfig& c : config.remote_write_endpoints) {
    RemoteWriteEndpoint e;
    e.url = c.url;
    e.protocol = shared_protocol;
    if (!c.protocol.empty()) ParseRemoteWriteProtocol(c.protocol, &e.protocol);  // validated
    if (!c.tenant.empty()) e.headers.emplace_back("X-Scope-OrgID", c.tenant);
    for (const std::string& header : c.headers) e.headers.push_back(SplitPair(header));
    e.ca_file = c.tls_ca_file.empty() ? config.sink_tls_ca_file : c.tls_ca_file;
    e.cert_file = c.tls_cert_file;
    e.key_file = c.tls_key_file;
    e.username = c.basic_auth_username;
    e.password_file = c.basic_auth_password_file;
    e.bearer_token_file = c.bearer_token_file;
    out.push_back(std::move(e));
  }
  return out;
}

PushSinkEntry LokiSinkEntry() {
  return {"loki", "events to Loki's push API, protobuf+snappy or JSON",
          [](const AgentConfig& config) { return !config.loki_url.empty(); },
          [](const AgentConfig& config, const PushSinkContext& context) -> std::unique_ptr<PushSink> {
            PushSinkOptions o = QueueSinkOptions(config, "loki", config.loki_url);
            if (!config.loki_tenant.empty()) o.headers.emplace_back("X-Scope-OrgID", config.loki_tenant);
            const LokiFormat format =
                config.loki_format == "json" ? LokiFormat::kJson : LokiFormat::kProtobuf;
            o.encode = [format](const std::vector<std::string>& records) {
              EncodedBody body;
              body.body = LokiBodyForRecords(records, format, nullptr);
              body.content_type =
                  std::string(format == LokiFormat::kJson ? kLokiJsonContentType : kLokiProtobufContentType);
              return body;
            };
            return std::make_unique<PushSender>(context.queue, std::move(o));
          },
          &PushSender::Describe};
}

PushSinkEntry OtlpSinkEntry() {
  return {"otlp", "events as OTLP/HTTP logs",
          [](const AgentConfig& config) { return !config.otlp_url.empty(); },
          [](const AgentConfig& config, const PushSinkContext& context) -> std::unique_ptr<PushSink> {
            PushSinkOptions o;
            static_cast<PushEndpoint&>(o) = OtlpEndpoint(config, config.otlp_url);
            o.name = "otlp";
            o.encode = [](const std::vector<std::string>& records) {
              EncodedBody body;
              body.body = OtlpBodyForRecords(records, nullptr);
              body.content_type = std::string(kOtlpContentType);
              return body;
            };
            return std::make_unique<PushSender>(context.queue, std::move(o));
          },
          &PushSender::Describe};
}

// A metrics sink's queue: the `name` subdirectory of the events' queue directory (which ignores it).
std::string MetricsQueueDirectory(const AgentConfig& config, std::string_view name) {
  const std::filesystem::path base = !config.queue_dir.empty()
                                         ? std::filesystem::path(config.queue_dir)
                                         : std::filesystem::path(config.events_state_dir) / "queue";
  return (base / name).string();
}

PushSinkEntry OtlpMetricsSinkEntry() {
  PushSinkEntry entry{
      "otlp_metrics", "the metrics as OTLP/HTTP metrics, every --sink.otlp.metrics-interval",
      [](const AgentConfig& config) { return !config.otlp_metrics_url.empty(); },
      [](const AgentConfig& config, const PushSinkContext& context) -> std::unique_ptr<PushSink> {
        OtlpMetricsOptions o;
        o.endpoint = OtlpEndpoint(config, config.otlp_metrics_url);
        o.interval = config.otlp_metrics_interval;
        o.resource_attributes = {{"service.name", "gpuscope-agent"},
                                 {"host.name", std::string(context.host)}};
        o.queue_directory = MetricsQueueDirectory(config, "otlp_metrics");
        o.queue_max_bytes = static_cast<uint64_t>(config.queue_max_mib) << 20;
        o.snapshots = context.snapshots;
        return std::make_unique<OtlpMetricsSink>(std::move(o));
      },
      &OtlpMetricsSink::Describe};
  entry.reads_events = false;
  return entry;
}

PushSinkEntry OtlpTracesSinkEntry() {
  PushSinkEntry entry{
      "otlp_traces", "the training collector's spans (--training.traces) as OTLP/HTTP traces",
      [](const AgentConfig& config) { return !config.otlp_traces_url.empty(); },
      [](const AgentConfig& config, const PushSinkContext& context) -> std::unique_ptr<PushSink> {
        OtlpTracesOptions o;
        o.endpoint = OtlpEndpoint(config, config.otlp_traces_url);
        o.resource_attributes = {{"service.name", "gpuscope-agent"},
                                 {"host.name", std::string(context.host)}};
        o.queue_directory = MetricsQueueDirectory(config, "otlp_traces");
        o.queue_max_bytes = static_cast<uint64_t>(config.queue_max_mib) << 20;
        return std::make_unique<OtlpTracesSink>(std::move(o));
      },
      &OtlpTracesSink::Describe};
  entry.reads_events = false;
  entry.span_exporter = [](PushSink& sink) -> SpanExporter* { return &static_cast<OtlpTracesSink&>(sink); };
  return entry;
}

PushSinkEntry RemoteWriteSinkEntry() {
  PushSinkEntry entry{
      "remote_write", "the metrics by Prometheus remote_write 1.0 or 2.0, every --sink.remote-write.interval",
      [](const AgentConfig& config) {
        return !config.remote_write_urls.empty() || !config.remote_write_endpoints.empty();
      },
      [](const AgentConfig& config, const PushSinkContext& context) -> std::unique_ptr<PushSink> {
        RemoteWriteOptions o;
        o.endpoints = RemoteWriteEndpoints(config);
        o.interval = config.remote_write_interval;
        for (const std::string& pair : config.remote_write_external_labels)
          o.external_labels.push_back(SplitPair(pair));
        o.queue_directory = MetricsQueueDirectory(config, "remote_write");
        o.queue_max_bytes = static_cast<uint64_t>(config.queue_max_mib) << 20;
        o.snapshots = context.snapshots;
        return std::make_unique<RemoteWriteSink>(std::move(o));
      },
      &RemoteWriteSink::Describe};
  entry.reads_events = false;
  return entry;
}

// Duplicate built-in names are a programming error.
template <typename Registry, typename Entry>
void MustRegister(Registry& registry, Entry entry) {
  if (!registry.Register(std::move(entry)).ok()) std::abort();
}

}  // namespace

const EventSourceRegistry& BuiltinEventSources() {
  static const EventSourceRegistry registry = [] {
    EventSourceRegistry r;
    MustRegister(r, KmsgSourceEntry());
    MustRegister(r, FileSourceEntry());
    MustRegister(r, JournalSourceEntry());
    MustRegister(
        r, PostedSourceEntry("training",
                             "the training collector's hung ranks (training_hang), once per hang episode",
                             "training", &EventSourceContext::training_events));
    MustRegister(r,
                 PostedSourceEntry("ebpf",
                                   "the ebpf collector's unexpected connections, foreign file opens and CUDA "
                                   "allocation failures",
                                   "ebpf", &EventSourceContext::ebpf_events));
    EventSourceEntry gpu =
        PostedSourceEntry("gpu",
                          "the gpu collector's DCGM health incidents (dcgm_health) and the "
                          "profiling pauses (profiling_paused, profiling_resumed); on with "
                          "any other event source",
                          "gpu", &EventSourceContext::gpu_events);
    gpu.joins_only = true;
    MustRegister(r, std::move(gpu));
    MustRegister(r, SecuritySourceEntry(SecurityTool::kFalco));
    MustRegister(r, SecuritySourceEntry(SecurityTool::kTetragon));
    return r;
  }();
  return registry;
}

const PushSinkRegistry& BuiltinPushSinks() {
  static const PushSinkRegistry registry = [] {
    PushSinkRegistry r;
    MustRegister(r, LokiSinkEntry());
    MustRegister(r, OtlpSinkEntry());
    MustRegister(r, RemoteWriteSinkEntry());
    MustRegister(r, OtlpMetricsSinkEntry());
    MustRegister(r, OtlpTracesSinkEntry());
    return r;
  }();
  return registry;
}

}  // namespace gpuscope
