#include "src/agent/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "src/core/duration.h"
#include "src/events/event.h"

namespace gpuscope {
namespace {

// --- YAML ------------------------------------------------------------------------------------------

Status Unknown(const std::string& where, const std::string& key) {
  return Status::InvalidArgument("unknown key '" + key + "' in " + where);
}

Status ReadString(const YAML::Node& node, const std::string& path, std::string* out) {
  if (!node.IsScalar()) return Status::InvalidArgument(path + ": expected a string");
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadBool(const YAML::Node& node, const std::string& path, bool* out) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return Status::InvalidArgument(path + ": expected true or false");
  }
  *out = value;
  return Status::Ok();
}

Status ReadInt(const YAML::Node& node, const std::string& path, int* out) {
  int value = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
    return Status::InvalidArgument(path + ": expected an integer");
  }
  *out = value;
  return Status::Ok();
}

Status ReadDuration(std::string_view text, const std::string& path, std::chrono::milliseconds* out) {
  auto parsed = ParseDuration(text);
  if (!parsed) {
    return Status::InvalidArgument(path + ": '" + std::string(text) +
                                   "' is not a duration (e.g. 500ms, 1s, 1m30s)");
  }
  *out = *parsed;
  return Status::Ok();
}

Status ReadDurationNode(const YAML::Node& node, const std::string& path, std::chrono::milliseconds* out) {
  if (!node.IsScalar()) return Status::InvalidArgument(path + ": expected a duration");
  return ReadDuration(node.Scalar(), path, out);
}

template <typename Fn>
Status ForEachKey(const YAML::Node& map, const std::string& path, Fn fn) {
  if (!map.IsMap()) return Status::InvalidArgument(path + ": expected a mapping");
  for (const auto& item : map) {
    if (!item.first.IsScalar()) return Status::InvalidArgument(path + ": keys must be strings");
    Status status = fn(item.first.Scalar(), item.second);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

Status ApplyWeb(const YAML::Node& web, AgentConfig* config) {
  return ForEachKey(web, "web", [&](const std::string& key, const YAML::Node& value) {
    if (key == "listen_address") return ReadString(value, "web.listen_address", &config->listen_address);
    if (key == "telemetry_path") return ReadString(value, "web.telemetry_path", &config->telemetry_path);
    if (key == "config_file") return ReadString(value, "web.config_file", &config->web_config_file);
    if (key == "max_connections") return ReadInt(value, "web.max_connections", &config->max_connections);
    return Unknown("web", key);
  });
}

Status ApplyPaths(const YAML::Node& paths, AgentConfig* config) {
  return ForEachKey(paths, "paths", [&](const std::string& key, const YAML::Node& value) {
    if (key == "procfs") return ReadString(value, "paths.procfs", &config->procfs);
    if (key == "sysfs") return ReadString(value, "paths.sysfs", &config->sysfs);
    return Unknown("paths", key);
  });
}

Status ApplyNvml(const YAML::Node& nvml, AgentConfig* config) {
  return ForEachKey(nvml, "nvml", [&](const std::string& key, const YAML::Node& value) {
    if (key == "library") return ReadString(value, "nvml.library", &config->nvml_library);
    if (key == "call_deadline")
      return ReadDurationNode(value, "nvml.call_deadline", &config->nvml_call_deadline);
    return Unknown("nvml", key);
  });
}

Status ApplyGpu(const YAML::Node& gpu, AgentConfig* config) {
  return ForEachKey(gpu, "gpu", [&](const std::string& key, const YAML::Node& value) {
    if (key == "dcgm_compat") return ReadString(value, "gpu.dcgm_compat", &config->dcgm_compat);
    if (key == "hostname") return ReadString(value, "gpu.hostname", &config->hostname);
    return Unknown("gpu", key);
  });
}

Status ApplyAttribution(const YAML::Node& node, AgentConfig* config) {
  return ForEachKey(node, "attribution", [&](const std::string& key, const YAML::Node& value) {
    if (key == "hpc_job_mapping_dir") {
      return ReadString(value, "attribution.hpc_job_mapping_dir", &config->hpc_job_mapping_dir);
    }
    if (key == "mapping_format")
      return ReadString(value, "attribution.mapping_format", &config->mapping_format);
    if (key == "hpc_job_label") return ReadBool(value, "attribution.hpc_job_label", &config->hpc_job_label);
    if (key == "proc") return ReadBool(value, "attribution.proc", &config->attribution_proc);
    if (key == "device_map_file")
      return ReadString(value, "attribution.device_map_file", &config->device_map_file);
    if (key == "slurm") {
      return ForEachKey(value, "attribution.slurm", [&](const std::string& k, const YAML::Node& v) {
        if (k == "enabled") return ReadBool(v, "attribution.slurm.enabled", &config->attribution_slurm);
        if (k == "scontrol") return ReadString(v, "attribution.slurm.scontrol", &config->scontrol);
        if (k == "interval")
          return ReadDurationNode(v, "attribution.slurm.interval", &config->slurm_interval);
        if (k == "timeout") return ReadDurationNode(v, "attribution.slurm.timeout", &config->slurm_timeout);
        return Unknown("attribution.slurm", k);
      });
    }
    return Unknown("attribution", key);
  });
}

Status ApplySlurm(const YAML::Node& node, AgentConfig* config) {
  return ForEachKey(node, "slurm", [&](const std::string& key, const YAML::Node& value) {
    if (key == "bin_dir") return ReadString(value, "slurm.bin_dir", &config->slurm_bin_dir);
    if (key == "command_timeout") {
      return ReadDurationNode(value, "slurm.command_timeout", &config->slurm_command_timeout);
    }
    if (key == "include_user") return ReadBool(value, "slurm.include_user", &config->slurm_include_user);
    return Unknown("slurm", key);
  });
}

Status ReadStringList(const YAML::Node& node, const std::string& path, std::vector<std::string>* out) {
  if (node.IsScalar()) {
    out->assign(1, node.Scalar());
    return Status::Ok();
  }
  if (!node.IsSequence()) return Status::InvalidArgument(path + ": expected a list of strings");
  out->clear();
  for (const auto& item : node) {
    if (!item.IsScalar()) return Status::InvalidArgument(path + ": expected a list of strings");
    out->push_back(item.Scalar());
  }
  return Status::Ok();
}

Status ApplyEvents(const YAML::Node& node, AgentConfig* config) {
  return ForEachKey(node, "events", [&](const std::string& key, const YAML::Node& value) {
    if (key == "kmsg_path") return ReadString(value, "events.kmsg_path", &config->events_kmsg_path);
    if (key == "files") return ReadStringList(value, "events.files", &config->events_files);
    if (key == "journal") {
      if (value.IsScalar()) return ReadBool(value, "events.journal", &config->events_journal);
      return ForEachKey(value, "events.journal", [&](const std::string& k, const YAML::Node& v) {
        if (k == "enabled") return ReadBool(v, "events.journal.enabled", &config->events_journal);
        if (k == "directory")
          return ReadString(v, "events.journal.directory", &config->events_journal_directory);
        if (k == "matches")
          return ReadStringList(v, "events.journal.matches", &config->events_journal_matches);
        return Unknown("events.journal", k);
      });
    }
    if (key == "state_dir") return ReadString(value, "events.state_dir", &config->events_state_dir);
    if (key == "ship_severity")
      return ReadString(value, "events.ship_severity", &config->events_ship_severity);
    if (key == "max_line_bytes")
      return ReadInt(value, "events.max_line_bytes", &config->events_max_line_bytes);
    if (key == "poll_interval")
      return ReadDurationNode(value, "events.poll_interval", &config->events_poll_interval);
    return Unknown("events", key);
  });
}

Status ApplySinks(const YAML::Node& node, AgentConfig* config) {
  return ForEachKey(node, "sinks", [&](const std::string& key, const YAML::Node& value) {
    if (key == "loki") {
      return ForEachKey(value, "sinks.loki", [&](const std::string& k, const YAML::Node& v) {
        if (k == "url") return ReadString(v, "sinks.loki.url", &config->loki_url);
        if (k == "format") return ReadString(v, "sinks.loki.format", &config->loki_format);
        if (k == "tenant") return ReadString(v, "sinks.loki.tenant", &config->loki_tenant);
        return Unknown("sinks.loki", k);
      });
    }
    if (key == "otlp") {
      return ForEachKey(value, "sinks.otlp", [&](const std::string& k, const YAML::Node& v) {
        if (k == "url") return ReadString(v, "sinks.otlp.url", &config->otlp_url);
        return Unknown("sinks.otlp", k);
      });
    }
    if (key == "queue") {
      return ForEachKey(value, "sinks.queue", [&](const std::string& k, const YAML::Node& v) {
        if (k == "directory") return ReadString(v, "sinks.queue.directory", &config->queue_dir);
        if (k == "max_mib") return ReadInt(v, "sinks.queue.max_mib", &config->queue_max_mib);
        return Unknown("sinks.queue", k);
      });
    }
    if (key == "tls_ca_file") return ReadString(value, "sinks.tls_ca_file", &config->sink_tls_ca_file);
    return Unknown("sinks", key);
  });
}

Status ApplyLog(const YAML::Node& log, AgentConfig* config) {
  return ForEachKey(log, "log", [&](const std::string& key, const YAML::Node& value) {
    if (key == "level") return ReadString(value, "log.level", &config->log_level);
    if (key == "format") return ReadString(value, "log.format", &config->log_format);
    return Unknown("log", key);
  });
}

Status ApplyCollectors(const YAML::Node& collectors, AgentConfig* config) {
  return ForEachKey(collectors, "collectors", [&](const std::string& name, const YAML::Node& value) {
    auto it = config->collectors.find(name);
    if (it == config->collectors.end()) return Status::InvalidArgument("unknown collector '" + name + "'");
    std::string path = "collectors." + name;
    if (value.IsNull()) return Status::Ok();
    return ForEachKey(value, path, [&](const std::string& key, const YAML::Node& field) {
      if (key == "enabled") return ReadBool(field, path + ".enabled", &it->second.enabled);
      if (key == "interval") return ReadDurationNode(field, path + ".interval", &it->second.interval);
      return Unknown(path, key);
    });
  });
}

// --- flags -----------------------------------------------------------------------------------------

struct FlagSpec {
  std::string_view name;
  std::string_view help;
  bool takes_value;
};

constexpr FlagSpec kFlags[] = {
    {"config", "YAML configuration file; flags override it.", true},
    {"web.listen-address", "Address to listen on for /metrics (default :9400).", true},
    {"web.telemetry-path", "Path under which to expose metrics (default /metrics).", true},
    {"web.config.file", "Prometheus exporter-toolkit web config file (TLS, basic auth).", true},
    {"web.max-connections", "Concurrent HTTP connections served; more get 503.", true},
    {"path.procfs", "procfs mount point (default /proc).", true},
    {"path.sysfs", "sysfs mount point (default /sys).", true},
    {"nvml.library", "NVML library to load (default: the system's libnvidia-ml.so.1).", true},
    {"nvml.call-deadline", "A GPU whose collection takes longer is reported down (default 2s).", true},
    {"gpu.dcgm-compat", "dcgm-exporter names and units: 3 (default) or 4.9.", true},
    {"gpu.hostname", "Value of the Hostname label (default: this host's name).", true},
    {"hpc-job-mapping-dir", "Directory of the prolog's job mapping files (dcgm-exporter's option).", true},
    {"attribution.mapping-format", "Mapping file format: auto (default), dcgm, jobstats, amd.", true},
    {"attribution.hpc-job-label", "Add hpc_job to GPU series (default true; =false: join series only).",
     false},
    {"attribution.proc", "Attribute GPU processes to jobs through /proc (default true).", false},
    {"attribution.device-map-file", "Where to write the minor->NVML index map for the prolog.", true},
    {"attribution.slurm", "Ask scontrol for job details the node cannot know (default false).", false},
    {"attribution.slurm.scontrol", "scontrol binary (default scontrol).", true},
    {"attribution.slurm.interval", "How often to ask scontrol (default 30s).", true},
    {"slurm.bin-dir", "Directory of squeue/sinfo/sdiag/sshare for the slurm collector (default: PATH).",
     true},
    {"slurm.command-timeout", "Hard limit for each Slurm command of the slurm collector (default 15s).",
     true},
    {"slurm.include-user", "user label on the slurm collector's job counts (default true).", false},
    {"events.kmsg-path", "Read kernel log records from this device (/dev/kmsg on a node; default: off).",
     true},
    {"events.file", "Tail files matching this glob (job outputs, the slurmd log); repeatable.", true},
    {"events.journal", "Read the systemd journal (default false).", false},
    {"events.journal.directory", "Journal directory to read instead of the system journal.", true},
    {"events.journal.match", "Only journal entries matching FIELD=value (OR-ed); repeatable.", true},
    {"events.state-dir",
     "Where event sources keep checkpoints and the sinks their queue (default "
     "/var/lib/gpuscope).",
     true},
    {"events.ship-severity", "Ship events at or above: debug, info (default), warning, error, critical.",
     true},
    {"events.max-line-bytes", "Longer lines are cut with a \" [truncated]\" marker (default 65536).", true},
    {"events.poll-interval", "How often the event sources are read (default 250ms).", true},
    {"sink.loki.url", "Push events to Loki at this URL (e.g. http://loki:3100/loki/api/v1/push).", true},
    {"sink.loki.format", "Loki push body: protobuf (snappy, default) or json.", true},
    {"sink.loki.tenant", "X-Scope-OrgID for a multi-tenant Loki.", true},
    {"sink.otlp.url", "Push events as OTLP/HTTP logs to this URL (e.g. http://collector:4318/v1/logs).",
     true},
    {"sink.tls.ca-file", "PEM file of CAs the push sinks trust for https (default: system store).", true},
    {"sink.queue.directory", "The push sinks' durable queue (default <events.state-dir>/queue).", true},
    {"sink.queue.max-mib", "Bound on the queue's disk use; the oldest records go first (default 256).", true},
    {"log.level", "debug, info, warn or error (default info).", true},
    {"log.format", "logfmt or json (default logfmt).", true},
    {"once", "Collect once, print the exposition to stdout and exit.", false},
    {"print-metrics-docs", "Print the metrics reference (docs/metrics.md) and exit.", false},
    {"version", "Print the version and exit.", false},
    {"help", "Print this help and exit.", false},
};

std::optional<bool> ParseBoolText(std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return std::nullopt;
}

Status ApplyFlag(std::string_view name, const std::string& value, AgentConfig* config) {
  // Plain string settings, by flag name.
  const std::pair<std::string_view, std::string*> strings[] = {
      {"config", &config->config_file},
      {"web.listen-address", &config->listen_address},
      {"web.telemetry-path", &config->telemetry_path},
      {"web.config.file", &config->web_config_file},
      {"path.procfs", &config->procfs},
      {"path.sysfs", &config->sysfs},
      {"nvml.library", &config->nvml_library},
      {"gpu.dcgm-compat", &config->dcgm_compat},
      {"gpu.hostname", &config->hostname},
      {"hpc-job-mapping-dir", &config->hpc_job_mapping_dir},
      {"attribution.mapping-format", &config->mapping_format},
      {"attribution.device-map-file", &config->device_map_file},
      {"attribution.slurm.scontrol", &config->scontrol},
      {"slurm.bin-dir", &config->slurm_bin_dir},
      {"log.level", &config->log_level},
      {"log.format", &config->log_format},
      {"events.kmsg-path", &config->events_kmsg_path},
      {"events.journal.directory", &config->events_journal_directory},
      {"events.state-dir", &config->events_state_dir},
      {"events.ship-severity", &config->events_ship_severity},
      {"sink.loki.url", &config->loki_url},
      {"sink.loki.format", &config->loki_format},
      {"sink.loki.tenant", &config->loki_tenant},
      {"sink.otlp.url", &config->otlp_url},
      {"sink.tls.ca-file", &config->sink_tls_ca_file},
      {"sink.queue.directory", &config->queue_dir},
  };
  for (const auto& [flag, target] : strings) {
    if (name == flag) {
      *target = value;
      return Status::Ok();
    }
  }
  // Repeatable flags: each occurrence adds one value (to what the config file listed).
  if (name == "events.file") {
    config->events_files.push_back(value);
    return Status::Ok();
  }
  if (name == "events.journal.match") {
    config->events_journal_matches.push_back(value);
    return Status::Ok();
  }
  if (name == "events.poll-interval") {
    return ReadDuration(value, "--events.poll-interval", &config->events_poll_interval);
  }
  if (name == "nvml.call-deadline") {
    return ReadDuration(value, "--nvml.call-deadline", &config->nvml_call_deadline);
  }
  if (name == "slurm.command-timeout") {
    return ReadDuration(value, "--slurm.command-timeout", &config->slurm_command_timeout);
  }
  if (name == "attribution.slurm.interval") {
    return ReadDuration(value, "--attribution.slurm.interval", &config->slurm_interval);
  }
  const std::pair<std::string_view, int*> ints[] = {
      {"web.max-connections", &config->max_connections},
      {"events.max-line-bytes", &config->events_max_line_bytes},
      {"sink.queue.max-mib", &config->queue_max_mib},
  };
  for (const auto& [flag, target] : ints) {
    if (name != flag) continue;
    try {
      size_t used = 0;
      *target = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      return Status::InvalidArgument("--" + std::string(flag) + ": expected an integer, got '" + value + "'");
    }
    return Status::Ok();
  }
  // kFlags and this function list the same names; a flag in one but not the other is a programming error.
  return Status::Internal("flag --" + std::string(name) + " has no handler");
}

Status ApplyBoolFlag(std::string_view name, bool value, AgentConfig* config) {
  const std::pair<std::string_view, bool*> bools[] = {
      {"once", &config->once},
      {"print-metrics-docs", &config->print_metrics_docs},
      {"version", &config->show_version},
      {"help", &config->show_help},
      {"attribution.hpc-job-label", &config->hpc_job_label},
      {"attribution.proc", &config->attribution_proc},
      {"attribution.slurm", &config->attribution_slurm},
      {"slurm.include-user", &config->slurm_include_user},
      {"events.journal", &config->events_journal},
  };
  for (const auto& [flag, target] : bools) {
    if (name == flag) {
      *target = value;
      return Status::Ok();
    }
  }
  return Status::Internal("flag --" + std::string(name) + " has no handler");
}

// --collector.NAME, --no-collector.NAME, --collector.NAME.interval=DUR
std::optional<Status> ApplyCollectorFlag(std::string_view name, const std::optional<std::string>& value,
                                         bool* consumed_value, AgentConfig* config) {
  bool negate = false;
  if (name.starts_with("no-collector.")) {
    negate = true;
    name.remove_prefix(std::string_view("no-").size());
  }
  if (!name.starts_with("collector.")) return std::nullopt;
  name.remove_prefix(std::string_view("collector.").size());
  std::string_view collector = name;
  bool interval = false;
  if (auto dot = name.find('.'); dot != std::string_view::npos) {
    collector = name.substr(0, dot);
    if (name.substr(dot + 1) != "interval" || negate) {
      return Status::InvalidArgument("unknown flag --" + std::string(negate ? "no-" : "") + "collector." +
                                     std::string(name));
    }
    interval = true;
  }
  auto it = config->collectors.find(collector);
  if (it == config->collectors.end()) {
    return Status::InvalidArgument("unknown collector '" + std::string(collector) + "'");
  }
  if (interval) {
    if (!value) return Status::InvalidArgument("--collector." + std::string(name) + " needs a duration");
    *consumed_value = true;
    return ReadDuration(*value, "--collector." + std::string(name), &it->second.interval);
  }
  it->second.enabled = !negate;
  return Status::Ok();
}

}  // namespace

Status ApplyConfigYaml(std::string_view yaml, AgentConfig* config) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config is not valid YAML: " + std::string(e.what()));
  }
  if (root.IsNull()) return Status::Ok();  // an empty file configures nothing
  try {
    return ForEachKey(root, "config", [&](const std::string& key, const YAML::Node& value) {
      if (key == "web") return ApplyWeb(value, config);
      if (key == "paths") return ApplyPaths(value, config);
      if (key == "nvml") return ApplyNvml(value, config);
      if (key == "gpu") return ApplyGpu(value, config);
      if (key == "log") return ApplyLog(value, config);
      if (key == "attribution") return ApplyAttribution(value, config);
      if (key == "slurm") return ApplySlurm(value, config);
      if (key == "collectors") return ApplyCollectors(value, config);
      if (key == "events") return ApplyEvents(value, config);
      if (key == "sinks") return ApplySinks(value, config);
      return Unknown("the top level", key);
    });
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config: " + std::string(e.what()));
  }
}

Status ApplyFlags(const std::vector<std::string>& args, AgentConfig* config) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      return Status::InvalidArgument("unexpected argument '" + arg + "' (flags start with --)");
    }
    std::string_view body(arg);
    body.remove_prefix(2);
    std::optional<std::string> inline_value;
    if (auto eq = body.find('='); eq != std::string_view::npos) {
      inline_value = std::string(body.substr(eq + 1));
      body = body.substr(0, eq);
    }
    std::optional<std::string> next_value = inline_value;
    if (!next_value && i + 1 < args.size() && !args[i + 1].starts_with("--")) next_value = args[i + 1];

    bool consumed = false;
    if (auto status = ApplyCollectorFlag(body, next_value, &consumed, config)) {
      if (!status->ok()) return *status;
      if (consumed && !inline_value) ++i;
      continue;
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& candidate : kFlags) {
      if (candidate.name == body) spec = &candidate;
    }
    if (spec == nullptr)
      return Status::InvalidArgument("unknown flag --" + std::string(body) + " (see --help)");
    if (spec->takes_value) {
      if (!next_value) return Status::InvalidArgument("flag --" + std::string(body) + " needs a value");
      if (!inline_value) ++i;
      Status status = ApplyFlag(body, *next_value, config);
      if (!status.ok()) return status;
    } else {
      bool value = true;
      if (inline_value) {
        auto parsed = ParseBoolText(*inline_value);
        if (!parsed) return Status::InvalidArgument("flag --" + std::string(body) + " takes true or false");
        value = *parsed;
      }
      Status status = ApplyBoolFlag(body, value, config);
      if (!status.ok()) return status;
    }
  }
  return Status::Ok();
}

Status LoadConfig(const std::vector<std::string>& args, AgentConfig* config) {
  // First pass: only to learn --config, so that the file applies before the flags that override it.
  AgentConfig probe = *config;
  Status status = ApplyFlags(args, &probe);
  if (!status.ok()) return status;
  if (!probe.config_file.empty()) {
    std::ifstream in(probe.config_file);
    if (!in) return Status::NotFound("cannot read config file " + probe.config_file);
    std::stringstream buffer;
    buffer << in.rdbuf();
    status = ApplyConfigYaml(buffer.str(), config);
    if (!status.ok()) return Status::InvalidArgument(probe.config_file + ": " + status.message());
  }
  status = ApplyFlags(args, config);
  if (!status.ok()) return status;
  return ValidateConfig(*config);
}

Status ValidateConfig(const AgentConfig& config) {
  if (config.dcgm_compat != "3" && config.dcgm_compat != "4.9") {
    return Status::InvalidArgument("gpu.dcgm_compat must be \"3\" or \"4.9\", got '" + config.dcgm_compat +
                                   "'");
  }
  if (config.listen_address.find(':') == std::string::npos) {
    return Status::InvalidArgument("web.listen_address must be host:port or :port, got '" +
                                   config.listen_address + "'");
  }
  if (config.telemetry_path.empty() || config.telemetry_path[0] != '/') {
    return Status::InvalidArgument("web.telemetry_path must start with /");
  }
  if (config.max_connections < 1) return Status::InvalidArgument("web.max_connections must be at least 1");
  if (config.nvml_call_deadline.count() <= 0) {
    return Status::InvalidArgument("nvml.call_deadline must be positive");
  }
  if (config.log_level != "debug" && config.log_level != "info" && config.log_level != "warn" &&
      config.log_level != "error") {
    return Status::InvalidArgument("log.level must be debug, info, warn or error");
  }
  if (config.mapping_format != "auto" && config.mapping_format != "dcgm" &&
      config.mapping_format != "jobstats" && config.mapping_format != "amd") {
    return Status::InvalidArgument("attribution.mapping_format must be auto, dcgm, jobstats or amd");
  }
  if (config.log_format != "logfmt" && config.log_format != "json") {
    return Status::InvalidArgument("log.format must be logfmt or json");
  }
  for (const auto& [name, collector] : config.collectors) {
    if (collector.interval.count() <= 0) {
      return Status::InvalidArgument("collectors." + name + ".interval must be positive");
    }
  }
  if (!ParseEventSeverity(config.events_ship_severity)) {
    return Status::InvalidArgument(
        "events.ship_severity must be debug, info, warning, error or critical, got '" +
        config.events_ship_severity + "'");
  }
  if (config.events_max_line_bytes < 256)
    return Status::InvalidArgument("events.max_line_bytes must be >= 256");
  if (config.events_poll_interval.count() <= 0) {
    return Status::InvalidArgument("events.poll_interval must be positive");
  }
  if (config.loki_format != "protobuf" && config.loki_format != "json") {
    return Status::InvalidArgument("sinks.loki.format must be protobuf or json, got '" + config.loki_format +
                                   "'");
  }
  for (const auto& [what, url] : {std::pair<std::string, std::string>{"sinks.loki.url", config.loki_url},
                                  std::pair<std::string, std::string>{"sinks.otlp.url", config.otlp_url}}) {
    if (!url.empty() && !url.starts_with("http://") && !url.starts_with("https://")) {
      return Status::InvalidArgument(what + " must start with http:// or https://, got '" + url + "'");
    }
  }
  if (config.queue_max_mib < 1) return Status::InvalidArgument("sinks.queue.max_mib must be at least 1");
  if ((!config.loki_url.empty() || !config.otlp_url.empty()) && config.events_state_dir.empty() &&
      config.queue_dir.empty()) {
    return Status::InvalidArgument(
        "push sinks need a queue directory: set events.state_dir or sinks.queue.directory");
  }
  return Status::Ok();
}

std::string FlagsHelp(const AgentConfig& defaults) {
  std::string out = "usage: gpuscope-agent [flags]\n\nflags:\n";
  for (const FlagSpec& flag : kFlags) {
    std::string left = "  --" + std::string(flag.name) + (flag.takes_value ? "=VALUE" : "");
    if (left.size() < 34) left.resize(34, ' ');
    out += left + " " + std::string(flag.help) + "\n";
  }
  out += "\ncollectors (--collector.NAME / --no-collector.NAME / --collector.NAME.interval=DURATION):\n";
  for (const auto& [name, collector] : defaults.collectors) {
    out += "  " + name + (collector.enabled ? " (enabled" : " (disabled") + ", every " +
           FormatDuration(collector.interval) + ")\n";
  }
  return out;
}

}  // namespace gpuscope
