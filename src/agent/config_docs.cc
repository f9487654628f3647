// --help and --print-config-docs, rendered from the options' descriptions (src/agent/options.cc) and the
// collector registry's defaults, so that neither can drift from what the parsers accept.
#include <string>
#include <variant>
#include <vector>

#include "src/agent/config.h"
#include "src/agent/markdown.h"
#include "src/agent/options.h"
#include "src/core/duration.h"
#include "src/core/json_string.h"

namespace gpuscope {
namespace {

std::string_view TypeName(const OptionSpec& option) {
  return std::visit(Overloaded{
                        [](std::string AgentConfig::*) { return std::string_view("string"); },
                        [](bool AgentConfig::*) { return std::string_view("bool"); },
                        [](int AgentConfig::*) { return std::string_view("int"); },
                        [](std::chrono::milliseconds AgentConfig::*) { return std::string_view("duration"); },
                        [](std::vector<std::string> AgentConfig::*) { return std::string_view("list"); },
                        [](std::vector<RemoteWriteEndpointConfig> AgentConfig::*) {
                          return std::string_view("list of endpoints");
                        },
                    },
                    option.field);
}

// The option's value in `config` as a flag would take it; list items joined with ", ".
std::string ValueText(const OptionSpec& option, const AgentConfig& config) {
  return std::visit(
      Overloaded{
          [&](std::string AgentConfig::*field) { return config.*field; },
          [&](bool AgentConfig::*field) { return std::string(config.*field ? "true" : "false"); },
          [&](int AgentConfig::*field) { return std::to_string(config.*field); },
          [&](std::chrono::milliseconds AgentConfig::*field) { return FormatDuration(config.*field); },
          [&](std::vector<std::string> AgentConfig::*field) {
            std::string out;
            for (const std::string& item : config.*field) out += (out.empty() ? "" : ", ") + item;
            return out;
          },
          [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*field) {
            std::string out;
            for (const RemoteWriteEndpointConfig& item : config.*field)
              out += (out.empty() ? "" : ", ") + item.url;
            return out;
          },
      },
      option.field);
}

// The default in words where the option has them, else the default value; "" when there is none and
// for the flag-only options (modes such as --once, and --config), whose default is "not given".
struct DefaultDescription {
  std::string text;
  bool is_value;  // text is a literal value (shown as code), not words
};

DefaultDescription Default(const OptionSpec& option, const AgentConfig& defaults) {
  if (option.yaml.empty()) return {"", false};
  if (!option.default_text.empty()) return {std::string(option.default_text), false};
  return {ValueText(option, defaults), true};
}

// `text` as lines of at most `width` characters (longer words stay whole), each after `indent`.
std::string Wrapped(std::string_view text, size_t indent, size_t width) {
  std::string out, line;
  while (!text.empty()) {
    size_t space = text.find(' ');
    std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

// The sentences after the help text: allowed values, lowest value, repeatability.
std::string Constraints(const OptionSpec& option) {
  std::string out;
  if (!option.choices.empty()) {
    out += " One of";
    for (size_t i = 0; i < option.choices.size(); ++i) {
      out += (i == 0 ? " " : ", ") + std::string(option.choices[i]);
    }
    out += ".";
  }
  if (std::holds_alternative<int AgentConfig::*>(option.field))
    out += " At least " + std::to_string(option.min) + ".";
  if (std::holds_alternative<std::vector<std::string> AgentConfig::*>(option.field) && !option.flag.empty()) {
    out += " Repeatable flag.";
  }
  return out;
}

std::string Placeholder(const OptionSpec& option) {
  return std::visit(Overloaded{
                        [](std::string AgentConfig::*) { return std::string("=STRING"); },
                        [](bool AgentConfig::*) { return std::string(); },
                        [](int AgentConfig::*) { return std::string("=INT"); },
                        [](std::chrono::milliseconds AgentConfig::*) { return std::string("=DURATION"); },
                        [](std::vector<std::string> AgentConfig::*) { return std::string("=STRING"); },
                        [](std::vector<RemoteWriteEndpointConfig> AgentConfig::*) { return std::string(); },
                    },
                    option.field);
}

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

// A JSON string is a valid YAML double-quoted scalar, with the same escapes.
std::string YamlQuoted(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

std::string YamlValue(const OptionSpec& option, const AgentConfig& config) {
  return std::visit(Overloaded{
                        [&](std::string AgentConfig::*field) { return YamlQuoted(config.*field); },
                        [&](std::vector<std::string> AgentConfig::*field) {
                          std::string out = "[";
                          for (const std::string& item : config.*field) {
                            out += (out.size() == 1 ? "" : ", ") + YamlQuoted(item);
                          }
                          return out + "]";
                        },
                        [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*field) {
                          // Only the empty default is rendered: the docs show the keys of an endpoint
                          // in the option's help.
                          return std::string((config.*field).empty() ? "[]" : "[...]");
                        },
                        [&](auto) { return ValueText(option, config); },
                    },
                    option.field);
}

// One remote_write endpoint as a YAML flow mapping of the fields it sets.
std::string EndpointYaml(const RemoteWriteEndpointConfig& endpoint) {
  std::string out = "{url: " + YamlQuoted(endpoint.url);
  auto add = [&out](std::string_view key, const std::string& value) {
    if (!value.empty()) out += ", " + std::string(key) + ": " + YamlQuoted(value);
  };
  add("protocol", endpoint.protocol);
  add("tenant", endpoint.tenant);
  if (!endpoint.basic_auth_username.empty()) {
    out += ", basic_auth: {username: " + YamlQuoted(endpoint.basic_auth_username) +
           ", password_file: " + YamlQuoted(endpoint.basic_auth_password_file) + "}";
  }
  add("bearer_token_file", endpoint.bearer_token_file);
  if (!endpoint.tls_ca_file.empty() || !endpoint.tls_cert_file.empty() || !endpoint.tls_key_file.empty()) {
    out += ", tls: {ca_file: " + YamlQuoted(endpoint.tls_ca_file) +
           ", cert_file: " + YamlQuoted(endpoint.tls_cert_file) +
           ", key_file: " + YamlQuoted(endpoint.tls_key_file) + "}";
  }
  if (!endpoint.headers.empty()) {
    out += ", headers: [";
    for (size_t i = 0; i < endpoint.headers.size(); ++i)
      out += (i ? ", " : "") + YamlQuoted(endpoint.headers[i]);
    out += "]";
  }
  return out + "}";
}

// YamlValue, with the endpoints written out in full.
std::string FullYamlValue(const OptionSpec& option, const AgentConfig& config) {
  if (const auto* field = std::get_if<std::vector<RemoteWriteEndpointConfig> AgentConfig::*>(&option.field)) {
    std::string out = "[";
    for (const RemoteWriteEndpointConfig& endpoint : config.**field) {
      out += (out.size() == 1 ? "" : ", ") + EndpointYaml(endpoint);
    }
    return out + "]";
  }
  return YamlValue(option, config);
}

// The YAML keys as a tree, in the table's order: a section appears where its first key does.
struct YamlTree {
  std::string name;
  const OptionSpec* option = nullptr;  // set on leaves
  std::vector<YamlTree> children;

  YamlTree& Child(std::string_view child_name) {
    for (YamlTree& child : children) {
      if (child.name == child_name) return child;
    }
    children.push_back(YamlTree{std::string(child_name), nullptr, {}});
    return children.back();
  }
};

void RenderYaml(const YamlTree& tree, const AgentConfig& defaults, int depth, std::string* out) {
  for (const YamlTree& child : tree.children) {
    *out += std::string(2 * depth, ' ') + child.name + ":";
    if (child.option != nullptr) {
      *out += " " + YamlValue(*child.option, defaults) + "\n";
    } else {
      *out += "\n";
      RenderYaml(child, defaults, depth + 1, out);
    }
  }
}

YamlTree KeyTree() {
  YamlTree root;
  for (const OptionSpec& option : AgentOptions()) {
    if (option.yaml.empty()) continue;
    YamlTree* node = &root;
    std::string_view rest = option.yaml;
    while (!rest.empty()) {
      size_t dot = rest.find('.');
      node = &node->Child(rest.substr(0, dot));
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    }
    node->option = &option;
  }
  return root;
}

// True when a key under `tree` has another value in `config` than in `defaults`.
bool SetsAKey(const YamlTree& tree, const AgentConfig& defaults, const AgentConfig& config) {
  if (tree.option != nullptr)
    return FullYamlValue(*tree.option, config) != FullYamlValue(*tree.option, defaults);
  for (const YamlTree& child : tree.children) {
    if (SetsAKey(child, defaults, config)) return true;
  }
  return false;
}

// The commented file: each key under its help; a key `config` sets is written as it is there, the others
// commented out at their defaults; a section is written when a key under it is.
void RenderCommentedYaml(const YamlTree& tree, const AgentConfig& defaults, const AgentConfig& config,
                         int depth, std::string* out) {
  const std::string indent(2 * depth, ' ');
  for (const YamlTree& child : tree.children) {
    const bool set = SetsAKey(child, defaults, config);
    const std::string mark = set ? "" : "#";
    if (child.option == nullptr) {
      out->append("\n").append(indent).append(mark).append(child.name).append(":\n");
      RenderCommentedYaml(child, defaults, config, depth + 1, out);
      continue;
    }
    const OptionSpec& option = *child.option;
    std::string help = std::string(option.help) + Constraints(option);
    if (!option.flag.empty()) help += " Flag: --" + std::string(option.flag) + ".";
    if (!option.default_text.empty()) help += " Default: " + std::string(option.default_text) + ".";
    std::string comment = Wrapped(help, 0, 100 - indent.size() - 2);
    for (size_t start = 0; start < comment.size();) {
      const size_t end = comment.find('\n', start);
      out->append(indent).append("# ").append(comment, start, end - start).append("\n");
      start = end + 1;
    }
    out->append(indent).append(mark).append(child.name).append(": ");
    out->append(FullYamlValue(option, set ? config : defaults)).append("\n");
  }
}

// A collector's entry under collectors: as a YAML flow mapping.
std::string CollectorYaml(const CollectorConfig& collector) {
  return std::string("{enabled: ") + (collector.enabled ? "true" : "false") +
         ", interval: " + FormatDuration(collector.interval) + "}";
}

std::string DefaultsYaml(const AgentConfig& defaults) {
  std::string out;
  RenderYaml(KeyTree(), defaults, 0, &out);
  out += "collectors:\n";
  for (const auto& [name, collector] : defaults.collectors)
    out += "  " + name + ": " + CollectorYaml(collector) + "\n";
  return out;
}

}  // namespace

std::string FlagsHelp(const AgentConfig& defaults) {
  std::string out =
      "usage: gpuscope-agent [flags]\n\n"
      "Flags override the YAML file given with --config. Switches take --X, --X=false or --no-X;\n"
      "durations are written 500ms, 1s, 1m30s.\n\nflags:\n";
  for (const OptionSpec& option : AgentOptions()) {
    if (option.flag.empty()) continue;
    std::string text = std::string(option.help) + Constraints(option);
    DefaultDescription fallback = Default(option, defaults);
    if (!fallback.text.empty() && !fallback.is_value) {
      text += " Default: " + fallback.text + ".";
    } else if (!fallback.text.empty()) {
      bool quoted = std::holds_alternative<std::string AgentConfig::*>(option.field);
      text += " Default: " + (quoted ? "\"" + fallback.text + "\"" : fallback.text) + ".";
    }
    out += "  --" + std::string(option.flag) + Placeholder(option) + "\n" + Wrapped(text, 6, 100);
  }
  out += "\ncollectors (--collector.NAME / --no-collector.NAME / --collector.NAME.interval=DURATION):\n";
  for (const auto& [name, collector] : defaults.collectors) {
    out += "  " + name + (collector.enabled ? " (enabled" : " (disabled") + ", every " +
           FormatDuration(collector.interval) + ")\n";
  }
  return out;
}

std::string CommentedConfigFile(const AgentConfig& defaults, const AgentConfig& config) {
  std::string out =
      "# gpuscope-agent configuration (YAML). Every key is listed under its help text; a key commented out\n"
      "# (\"#key: value\") is at its default, shown there: delete the \"#\" to change it, and that of its\n"
      "# section. Files in the --config.dir directory are applied after this one, and flags override both.\n"
      "# The reference: gpuscope-agent --help, or README.md's Configuration section.\n";
  RenderCommentedYaml(KeyTree(), defaults, config, 0, &out);
  out += "\n# Collectors: switch with enabled, set how often they run with interval.\n";
  // The collectors whose entry differs from its default, written active; the others commented out.
  std::string entries;
  bool any_set = false;
  for (const auto& [name, collector] : config.collectors) {
    const auto it = defaults.collectors.find(name);
    const bool set = it == defaults.collectors.end() || CollectorYaml(it->second) != CollectorYaml(collector);
    any_set = any_set || set;
    entries += std::string(set ? "  " : "  #") + name + ": " + CollectorYaml(collector) + "\n";
  }
  out += std::string(any_set ? "" : "#") + "collectors:\n" + entries;
  return out;
}

std::string ConfigDocs(const AgentConfig& defaults) {
  std::string out =
      "| flag | YAML key | type | default | what |\n"
      "|---|---|---|---|---|\n";
  auto append = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  std::string enabled, disabled, intervals;
  for (const auto& [name, collector] : defaults.collectors) {
    append(collector.enabled ? enabled : disabled, Code(name));
    append(intervals, Code(name) + " " + FormatDuration(collector.interval));
  }
  out += "| `--collector.NAME`, `--no-collector.NAME` | `collectors.NAME.enabled` | bool | on: " + enabled +
         "; off: " + disabled + " | Switch a collector (see [Collectors](#collectors)). |\n";
  out += "| `--collector.NAME.interval` | `collectors.NAME.interval` | duration | " + intervals +
         " | How often the collector runs. |\n";
  for (const OptionSpec& option : AgentOptions()) {
    DefaultDescription fallback = Default(option, defaults);
    std::string default_cell;
    if (!fallback.text.empty())
      default_cell = fallback.is_value ? Code(fallback.text) : MarkdownCell(fallback.text);
    out += "| " + (option.flag.empty() ? "" : Code("--" + std::string(option.flag))) + " | " +
           (option.yaml.empty() ? "" : Code(option.yaml)) + " | " + std::string(TypeName(option)) + " | " +
           default_cell + " | " + MarkdownCell(std::string(option.help) + Constraints(option)) + " |\n";
  }
  out +=
      "\nSwitches take `--X`, `--X=false` or `--no-X`; a list takes its flag once per value and adds to the "
      "file's list. Durations are written `500ms`, `1s`, `1m30s`. A section with an `enabled` key may be "
      "written as a bare boolean (`journal: true`).\n\nEvery key of the file, at its default:\n\n```yaml\n";
  out += DefaultsYaml(defaults);
  out += "```\n";
  return out;
}

}  // namespace gpuscope
