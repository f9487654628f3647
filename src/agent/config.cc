// Parsing and validation of the agent's options, driven by their descriptions (src/agent/options.cc):
// nothing here names an option, only the collectors' switches, which come from the collector registry.
#include "src/agent/config.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <span>
#include <variant>

#include "src/agent/options.h"
#include "src/core/duration.h"
#include "src/core/yaml_config.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

const OptionSpec* FindByYaml(std::string_view key) {
  for (const OptionSpec& option : AgentOptions()) {
    if (!option.yaml.empty() && option.yaml == key) return &option;
  }
  return nullptr;
}

const OptionSpec* FindByFlag(std::string_view flag) {
  for (const OptionSpec& option : AgentOptions()) {
    if (!option.flag.empty() && option.flag == flag) return &option;
  }
  return nullptr;
}

// True when some option's key lies under `path` ("events.journal" for "events.journal.directory").
bool IsYamlSection(std::string_view path) {
  for (const OptionSpec& option : AgentOptions()) {
    if (option.yaml.size() > path.size() && option.yaml.starts_with(path) &&
        option.yaml[path.size()] == '.') {
      return true;
    }
  }
  return false;
}

// --- YAML ------------------------------------------------------------------------------------------

// A list of remote_write endpoints: each a mapping of the keys of RemoteWriteEndpointConfig, url required.
// Replaces *out.
Status ReadEndpointsYaml(const YAML::Node& node, std::string_view path,
                         std::vector<RemoteWriteEndpointConfig>* out) {
  if (node.IsNull()) {
    out->clear();
    return Status::Ok();
  }
  if (!node.IsSequence()) {
    return Status::InvalidArgument(std::string(path) + " must be a list of endpoints" + YamlLine(node));
  }
  std::vector<RemoteWriteEndpointConfig> endpoints;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string at = std::string(path) + "[" + std::to_string(i) + "]";
    RemoteWriteEndpointConfig e;
    auto strings = [&](const std::string& section, const YAML::Node& value,
                       std::initializer_list<std::pair<std::string_view, std::string*>> fields) {
      return ForEachYamlEntry(value, section, [&](const std::string& key, const YAML::Node& field) {
        std::string full = section;
        full += '.';
        full += key;
        for (const auto& [name, target] : fields) {
          if (key == name) return ReadYamlString(field, full, target);
        }
        return UnknownYamlKey(section, key, field);
      });
    };
    Status status = ForEachYamlEntry(item, at, [&](const std::string& key, const YAML::Node& value) {
      if (key == "url") return ReadYamlString(value, at + ".url", &e.url);
      if (key == "protocol") return ReadYamlString(value, at + ".protocol", &e.protocol);
      if (key == "tenant") return ReadYamlString(value, at + ".tenant", &e.tenant);
      if (key == "bearer_token_file")
        return ReadYamlString(value, at + ".bearer_token_file", &e.bearer_token_file);
      if (key == "headers") return ReadYamlStringList(value, at + ".headers", &e.headers);
      if (key == "basic_auth") {
        return strings(
            at + ".basic_auth", value,
            {{"username", &e.basic_auth_username}, {"password_file", &e.basic_auth_password_file}});
      }
      if (key == "tls") {
        return strings(
            at + ".tls", value,
            {{"ca_file", &e.tls_ca_file}, {"cert_file", &e.tls_cert_file}, {"key_file", &e.tls_key_file}});
      }
      return UnknownYamlKey(at, key, value);
    });
    if (!status.ok()) return status;
    if (e.url.empty()) return Status::InvalidArgument(at + ": url is required" + YamlLine(item));
    endpoints.push_back(std::move(e));
  }
  *out = std::move(endpoints);
  return Status::Ok();
}

Status ReadOptionYaml(const OptionSpec& option, const YAML::Node& node, AgentConfig* config) {
  return std::visit(
      Overloaded{
          [&](std::string AgentConfig::*field) {
            return ReadYamlString(node, option.yaml, &(config->*field));
          },
          [&](bool AgentConfig::*field) { return ReadYamlBool(node, option.yaml, &(config->*field)); },
          [&](int AgentConfig::*field) { return ReadYamlInt(node, option.yaml, &(config->*field)); },
          [&](std::chrono::milliseconds AgentConfig::*field) {
            return ReadYamlDuration(node, option.yaml, &(config->*field));
          },
          [&](std::vector<std::string> AgentConfig::*field) {
            return ReadYamlStringList(node, option.yaml, &(config->*field));
          },
          [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*field) {
            return ReadEndpointsYaml(node, option.yaml, &(config->*field));
          },
      },
      option.field);
}

// collectors: {NAME: {enabled: BOOL, interval: DURATION}}, NAME from the registry's defaults.
Status ApplyCollectorsYaml(const YAML::Node& collectors, AgentConfig* config) {
  return ForEachYamlEntry(collectors, "collectors", [&](const std::string& name, const YAML::Node& value) {
    auto it = config->collectors.find(name);
    if (it == config->collectors.end()) {
      return Status::InvalidArgument("unknown collector '" + name + "'" + YamlLine(value));
    }
    std::string path = "collectors." + name;
    return ForEachYamlEntry(value, path, [&](const std::string& key, const YAML::Node& field) {
      if (key == "enabled") return ReadYamlBool(field, path + ".enabled", &it->second.enabled);
      if (key == "interval") return ReadYamlDuration(field, path + ".interval", &it->second.interval);
      return UnknownYamlKey(path, key, field);
    });
  });
}

// Applies the mapping `node` found at the dotted `path` ("" for the document's root).
Status ApplyYamlSection(const YAML::Node& node, const std::string& path, AgentConfig* config) {
  const std::string section = path.empty() ? "config" : path;
  return ForEachYamlEntry(node, section, [&](const std::string& key, const YAML::Node& value) {
    if (path.empty() && key == "collectors") return ApplyCollectorsYaml(value, config);
    const std::string full = path.empty() ? key : path + "." + key;
    if (const OptionSpec* option = FindByYaml(full)) return ReadOptionYaml(*option, value, config);
    if (IsYamlSection(full)) {
      // A section with an `enabled` switch may be written as a bare boolean: `journal: true`.
      const OptionSpec* enabled = FindByYaml(full + ".enabled");
      if (enabled != nullptr && value.IsScalar()) return ReadOptionYaml(*enabled, value, config);
      return ApplyYamlSection(value, full, config);
    }
    return UnknownYamlKey(section, key, value);
  });
}

// --- flags -----------------------------------------------------------------------------------------

std::optional<bool> ParseBoolText(std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return std::nullopt;
}

// Sets a value-taking option from its flag's value; a list option gets the value appended.
Status ApplyFlagValue(const OptionSpec& option, const std::string& value, AgentConfig* config) {
  const std::string flag = "--" + std::string(option.flag);
  return std::visit(
      Overloaded{
          [&](std::string AgentConfig::*field) {
            config->*field = value;
            return Status::Ok();
          },
          [&](bool AgentConfig::*) {
            return Status::Internal(flag + " is a switch; it takes no separate value");
          },
          [&](int AgentConfig::*field) {
            int parsed = 0;
            auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
            if (error != std::errc() || end != value.data() + value.size() || value.empty()) {
              return Status::InvalidArgument(flag + ": expected an integer, got '" + value + "'");
            }
            config->*field = parsed;
            return Status::Ok();
          },
          [&](std::chrono::milliseconds AgentConfig::*field) {
            return ParseDurationSetting(value, flag, &(config->*field));
          },
          [&](std::vector<std::string> AgentConfig::*field) {
            (config->*field).push_back(value);  // repeatable: each occurrence adds one
            return Status::Ok();
          },
          [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*) {
            return Status::Internal(flag + ": a list of endpoints is set in the config file only");
          },
      },
      option.field);
}

bool IsSwitch(const OptionSpec& option) { return std::holds_alternative<bool AgentConfig::*>(option.field); }

// --collector.NAME, --no-collector.NAME, --collector.NAME.interval=DUR (other --collector.NAME.X flags
// are options of the table, e.g. --collector.textfile.directory)
std::optional<Status> ApplyCollectorFlag(std::string_view name, const std::optional<std::string>& value,
                                         bool* consumed_value, AgentConfig* config) {
  if (FindByFlag(name) != nullptr) return std::nullopt;  // a collector's own option in the table
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
    return ParseDurationSetting(*value, "--collector." + std::string(name), &it->second.interval);
  }
  it->second.enabled = !negate;
  return Status::Ok();
}

// --- validation ------------------------------------------------------------------------------------

std::string Joined(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view word : words) out += (out.empty() ? "" : ", ") + std::string(word);
  return out;
}

// Pairs of options that make sense only together ("" or a message naming both).
std::string PairProblem(std::string_view a_name, const std::string& a, std::string_view b_name,
                        const std::string& b) {
  if (a.empty() == b.empty()) return "";
  return std::string(a.empty() ? b_name : a_name) + " needs " + std::string(a.empty() ? a_name : b_name);
}

// What is wrong with one endpoint of a list, "" when nothing is.
std::string EndpointProblem(const RemoteWriteEndpointConfig& e) {
  if (e.url.empty()) return "url is required";
  if (std::string_view problem = CheckHttpUrl(e.url); !problem.empty()) return "url " + std::string(problem);
  const auto protocols = RemoteWriteProtocolChoices();
  if (!e.protocol.empty() && std::find(protocols.begin(), protocols.end(), e.protocol) == protocols.end())
    return "protocol must be one of " + Joined(protocols) + ", got '" + e.protocol + "'";
  for (const std::string& header : e.headers) {
    if (std::string_view problem = CheckHeaderPair(header); !problem.empty())
      return "headers " + std::string(problem) + ", got '" + header + "'";
  }
  std::string problem = PairProblem("basic_auth.username", e.basic_auth_username, "basic_auth.password_file",
                                    e.basic_auth_password_file);
  if (problem.empty())
    problem = PairProblem("tls.cert_file", e.tls_cert_file, "tls.key_file", e.tls_key_file);
  if (problem.empty() && !e.basic_auth_username.empty() && !e.bearer_token_file.empty())
    problem = "basic_auth and bearer_token_file are exclusive";
  return problem;
}

Status ValidateOption(const OptionSpec& option, const AgentConfig& config) {
  return std::visit(
      Overloaded{
          [&](std::string AgentConfig::*field) {
            const std::string& value = config.*field;
            if (!option.choices.empty() &&
                std::find(option.choices.begin(), option.choices.end(), value) == option.choices.end()) {
              return Status::InvalidArgument(OptionName(option) + " must be one of " +
                                             Joined(option.choices) + ", got '" + value + "'");
            }
            if (option.check != nullptr) {
              std::string_view problem = option.check(value);
              if (!problem.empty()) {
                return Status::InvalidArgument(OptionName(option) + " " + std::string(problem) + ", got '" +
                                               value + "'");
              }
            }
            return Status::Ok();
          },
          [&](int AgentConfig::*field) {
            if (config.*field >= option.min) return Status::Ok();
            return Status::InvalidArgument(OptionName(option) + " must be at least " +
                                           std::to_string(option.min) + ", got " +
                                           std::to_string(config.*field));
          },
          [&](std::chrono::milliseconds AgentConfig::*field) {
            if ((config.*field).count() > 0) return Status::Ok();
            return Status::InvalidArgument(OptionName(option) + " must be positive");
          },
          [](bool AgentConfig::*) { return Status::Ok(); },
          [&](std::vector<std::string> AgentConfig::*field) {
            for (const std::string& value : config.*field) {
              const std::string_view problem = option.check != nullptr ? option.check(value) : "";
              if (!problem.empty()) {
                return Status::InvalidArgument(OptionName(option) + " " + std::string(problem) + ", got '" +
                                               value + "'");
              }
            }
            return Status::Ok();
          },
          [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*field) {
            const std::vector<RemoteWriteEndpointConfig>& endpoints = config.*field;
            for (size_t i = 0; i < endpoints.size(); ++i) {
              const std::string problem = EndpointProblem(endpoints[i]);
              if (!problem.empty()) {
                return Status::InvalidArgument(std::string(option.yaml) + "[" + std::to_string(i) + "] (" +
                                               endpoints[i].url + "): " + problem);
              }
            }
            return Status::Ok();
          },
      },
      option.field);
}

}  // namespace

Status ApplyConfigYaml(std::string_view yaml, AgentConfig* config) {
  return WalkYamlDocument(yaml, "config",
                          [&](const YAML::Node& root) { return ApplyYamlSection(root, "", config); });
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
    // --no-X switches X off.
    if (body.starts_with("no-")) {
      const OptionSpec* option = FindByFlag(body.substr(3));
      if (option != nullptr && IsSwitch(*option)) {
        if (inline_value) return Status::InvalidArgument("flag --" + std::string(body) + " takes no value");
        config->*std::get<bool AgentConfig::*>(option->field) = false;
        continue;
      }
    }
    const OptionSpec* option = FindByFlag(body);
    if (option == nullptr)
      return Status::InvalidArgument("unknown flag --" + std::string(body) + " (see --help)");
    if (IsSwitch(*option)) {
      bool value = true;
      if (inline_value) {
        auto parsed = ParseBoolText(*inline_value);
        if (!parsed) return Status::InvalidArgument("flag --" + std::string(body) + " takes true or false");
        value = *parsed;
      }
      config->*std::get<bool AgentConfig::*>(option->field) = value;
      continue;
    }
    if (!next_value) return Status::InvalidArgument("flag --" + std::string(body) + " needs a value");
    if (!inline_value) ++i;
    Status status = ApplyFlagValue(*option, *next_value, config);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

namespace {

// Appends the *.yml and *.yaml files of `directory` in name order (byte order, as ls -U | sort in the C
// locale). Dot files (an editor's swap file) and anything not a regular file are left out.
Status ListConfigDirectory(const std::string& directory, std::vector<std::string>* files) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> found;
  fs::directory_iterator it(directory, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with('.') || !(name.ends_with(".yml") || name.ends_with(".yaml"))) continue;
    std::error_code type_error;
    if (!it->is_regular_file(type_error)) continue;
    found.push_back(it->path().string());
  }
  if (error) return Status::NotFound("cannot read config directory " + directory + ": " + error.message());
  std::sort(found.begin(), found.end());
  files->insert(files->end(), found.begin(), found.end());
  return Status::Ok();
}

}  // namespace

Status LoadConfig(const std::vector<std::string>& args, AgentConfig* config) {
  // First pass: only to learn --config, so that the file applies before the flags that override it.
  AgentConfig probe = *config;
  Status status = ApplyFlags(args, &probe);
  if (!status.ok()) return status;
  std::vector<std::string> files;
  if (!probe.config_file.empty()) files.push_back(probe.config_file);
  if (!probe.config_dir.empty()) {
    status = ListConfigDirectory(probe.config_dir, &files);
    if (!status.ok()) return status;
  }
  for (const std::string& file : files) {
    std::optional<std::string> text = ReadWholeFile(file);
    if (!text) return Status::NotFound("cannot read config file " + file);
    status = ApplyConfigYaml(*text, config);
    if (!status.ok()) return Status::InvalidArgument(file + ": " + status.message());
  }
  status = ApplyFlags(args, config);
  if (!status.ok()) return status;
  // --ebpf switches the ebpf collector on (and with it the ebpf event source), as --collector.ebpf would.
  if (config->ebpf) {
    if (auto it = config->collectors.find("ebpf"); it != config->collectors.end()) it->second.enabled = true;
  }
  return ValidateConfig(*config);
}

Status ValidateConfig(const AgentConfig& config) {
  for (const OptionSpec& option : AgentOptions()) {
    Status status = ValidateOption(option, config);
    if (!status.ok()) return status;
  }
  for (const auto& [name, collector] : config.collectors) {
    if (collector.interval.count() <= 0) {
      return Status::InvalidArgument("collectors." + name + ".interval must be positive");
    }
  }
  // Credentials and client certificates come in pairs; basic auth and a bearer token exclude each other.
  const std::string pairs[] = {
      PairProblem("sinks.remote_write.basic_auth.username", config.remote_write_basic_auth_username,
                  "sinks.remote_write.basic_auth.password_file",
                  config.remote_write_basic_auth_password_file),
      PairProblem("sinks.remote_write.tls.cert_file", config.remote_write_tls_cert_file,
                  "sinks.remote_write.tls.key_file", config.remote_write_tls_key_file),
      PairProblem("sinks.otlp.basic_auth.username", config.otlp_basic_auth_username,
                  "sinks.otlp.basic_auth.password_file", config.otlp_basic_auth_password_file),
      PairProblem("sinks.otlp.tls.cert_file", config.otlp_tls_cert_file, "sinks.otlp.tls.key_file",
                  config.otlp_tls_key_file),
      !config.remote_write_basic_auth_username.empty() && !config.remote_write_bearer_token_file.empty()
          ? "sinks.remote_write.basic_auth and sinks.remote_write.bearer_token_file are exclusive"
          : "",
      !config.otlp_basic_auth_username.empty() && !config.otlp_bearer_token_file.empty()
          ? "sinks.otlp.basic_auth and sinks.otlp.bearer_token_file are exclusive"
          : "",
  };
  for (const std::string& problem : pairs) {
    if (!problem.empty()) return Status::InvalidArgument(problem);
  }
  if ((!config.loki_url.empty() || !config.otlp_url.empty()) && config.events_state_dir.empty() &&
      config.queue_dir.empty()) {
    return Status::InvalidArgument(
        "push sinks need a queue directory: set events.state_dir or sinks.queue.directory");
  }
  return Status::Ok();
}

}  // namespace gpuscope
