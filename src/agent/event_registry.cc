#include "src/agent/event_registry.h"

#include <cstdlib>
#include <filesystem>

#include "src/events/sources/file_source.h"
#include "src/events/sources/journal_source.h"
#include "src/events/sources/kmsg_source.h"
#include "src/sinks/loki/loki_events.h"
#include "src/sinks/otlp/otlp_events.h"
#include "src/sinks/push/push_sender.h"

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
          [](const AgentConfig& config) -> std::unique_ptr<EventSource> {
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
          [](const AgentConfig& config) -> std::unique_ptr<EventSource> {
            FileTailer::Options o;
            o.globs = config.events_files;
            o.checkpoint_path = CheckpointPath(config, "files.checkpoint");
            o.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
            return std::make_unique<FileSource>(std::move(o));
          },
          &FileSource::Describe};
}

EventSourceEntry JournalSourceEntry() {
  return {"journal", "the systemd journal, resumed by cursor",
          [](const AgentConfig& config) { return config.events_journal; },
          [](const AgentConfig& config) -> std::unique_ptr<EventSource> {
            JournalReader::Options o;
            o.directory = config.events_journal_directory;
            o.matches = config.events_journal_matches;
            o.checkpoint_path = CheckpointPath(config, "journal.cursor");
            o.max_line_bytes = static_cast<size_t>(config.events_max_line_bytes);
            o.max_entries_per_poll = 10000;
            return std::make_unique<JournalSource>(std::move(o));
          },
          [] { return std::vector<MetricDescription>{}; }};
}

// The options every queue-reading push sink shares.
PushSinkOptions QueueSinkOptions(const AgentConfig& config, std::string name, std::string url) {
  PushSinkOptions o;
  o.name = std::move(name);
  o.url = std::move(url);
  o.ca_file = config.sink_tls_ca_file;
  return o;
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
            PushSinkOptions o = QueueSinkOptions(config, "otlp", config.otlp_url);
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
    return r;
  }();
  return registry;
}

const PushSinkRegistry& BuiltinPushSinks() {
  static const PushSinkRegistry registry = [] {
    PushSinkRegistry r;
    MustRegister(r, LokiSinkEntry());
    MustRegister(r, OtlpSinkEntry());
    return r;
  }();
  return registry;
}

}  // namespace gpuscope
