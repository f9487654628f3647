// Tests that the option table (src/agent/options.cc) is the one description every surface follows:
// a flag and its YAML key set the same thing, the docs' YAML is every key at its default, --help and the
// docs list every option, validation names the option, and the allowed words agree with the modules
// that parse them.
#include "src/agent/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/agent/config.h"
#include "src/agent/registry.h"
#include "src/attribution/mapping_dir_source.h"
#include "src/collectors/training/training_spans.h"
#include "src/events/event.h"

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

AgentConfig Defaults() {
  AgentConfig config;
  BuiltinCollectors().FillDefaults(&config);
  return config;
}

// A value for `option` that differs from its default, as flag values (a list gets two).
std::vector<std::string> SampleFlagValues(const OptionSpec& option, const AgentConfig& defaults) {
  return std::visit(
      Overloaded{
          [&](std::string AgentConfig::*field) -> std::vector<std::string> {
            for (std::string_view choice : option.choices) {
              if (choice != defaults.*field) return {std::string(choice)};
            }
            return {"sample \"value\": x"};
          },
          [&](bool AgentConfig::*field) -> std::vector<std::string> {
            return {defaults.*field ? "false" : "true"};
          },
          [&](int AgentConfig::*field) -> std::vector<std::string> {
            return {std::to_string(defaults.*field + 7)};
          },
          [&](std::chrono::milliseconds AgentConfig::*field) -> std::vector<std::string> {
            return {std::to_string((defaults.*field).count() + 7000) + "ms"};
          },
          [&](std::vector<std::string> AgentConfig::*) -> std::vector<std::string> {
            return {"/a/*.log", "/b c.log"};
          },
          [&](std::vector<RemoteWriteEndpointConfig> AgentConfig::*) -> std::vector<std::string> {
            return {"http://sample:9090/api/v1/write"};  // YAML only: the endpoints' URLs
          },
      },
      option.field);
}

std::string YamlQuote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A YAML document that sets `option` to `values`: "a: {b: {c: VALUE}}".
std::string SampleYaml(const OptionSpec& option, const std::vector<std::string>& values) {
  std::string value;
  if (std::holds_alternative<std::vector<std::string> AgentConfig::*>(option.field)) {
    for (const std::string& v : values) value += (value.empty() ? "[" : ", ") + YamlQuote(v);
    value += "]";
  } else if (std::holds_alternative<std::vector<RemoteWriteEndpointConfig> AgentConfig::*>(option.field)) {
    for (const std::string& v : values)
      value += (value.empty() ? "[" : ", ") + ("{url: " + YamlQuote(v) + "}");
    value += "]";
  } else if (std::holds_alternative<std::string AgentConfig::*>(option.field)) {
    value = YamlQuote(values[0]);
  } else {
    value = values[0];
  }
  std::string doc, close;
  std::string_view rest = option.yaml;
  for (size_t dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
    doc += std::string(rest.substr(0, dot)) + ": {";
    close += "}";
    rest.remove_prefix(dot + 1);
  }
  return doc + std::string(rest) + ": " + value + close + "\n";
}

bool SameValue(const OptionSpec& option, const AgentConfig& a, const AgentConfig& b) {
  return std::visit([&](auto field) { return a.*field == b.*field; }, option.field);
}

TEST(AgentOptions, EachFlagAndItsYamlKeySetTheSameField) {
  const AgentConfig defaults = Defaults();
  int checked = 0;
  for (const OptionSpec& option : AgentOptions()) {
    if (option.flag.empty() || option.yaml.empty()) continue;
    std::vector<std::string> values = SampleFlagValues(option, defaults);
    std::vector<std::string> args;
    for (const std::string& value : values) args.push_back("--" + std::string(option.flag) + "=" + value);
    AgentConfig from_flags = defaults;
    Status status = ApplyFlags(args, &from_flags);
    ASSERT_TRUE(status.ok()) << option.flag << ": " << status.ToString();
    AgentConfig from_yaml = defaults;
    status = ApplyConfigYaml(SampleYaml(option, values), &from_yaml);
    ASSERT_TRUE(status.ok()) << SampleYaml(option, values) << status.ToString();
    EXPECT_FALSE(SameValue(option, from_flags, defaults)) << option.flag << " did not change its field";
    for (const OptionSpec& other : AgentOptions()) {
      EXPECT_TRUE(SameValue(other, from_flags, from_yaml))
          << option.flag << " vs " << option.yaml << " on " << OptionName(other);
    }
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// The YAML block of the docs, between "```yaml\n" and "```".
std::string DocsYaml(const std::string& docs) {
  size_t begin = docs.find("```yaml\n");
  size_t end = docs.find("```\n", begin + 8);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return docs.substr(begin + 8, end - begin - 8);
}

TEST(AgentOptions, TheDocsYamlSetsEveryKeyToItsDefault) {
  const AgentConfig defaults = Defaults();
  std::string yaml = DocsYaml(ConfigDocs(defaults));
  ASSERT_FALSE(yaml.empty());
  // Start from a config in which every option and collector differs from its default.
  AgentConfig changed = defaults;
  for (const OptionSpec& option : AgentOptions()) {
    if (option.yaml.empty()) continue;
    std::string key = std::string(option.yaml);
    ASSERT_TRUE(ApplyConfigYaml(SampleYaml(option, SampleFlagValues(option, defaults)), &changed).ok())
        << key;
    ASSERT_FALSE(SameValue(option, changed, defaults)) << key;
  }
  for (auto& [name, collector] : changed.collectors) {
    collector.enabled = !collector.enabled;
    collector.interval += std::chrono::seconds(3);
  }
  Status status = ApplyConfigYaml(yaml, &changed);
  ASSERT_TRUE(status.ok()) << status.ToString() << "\n" << yaml;
  for (const OptionSpec& option : AgentOptions()) {
    if (!option.yaml.empty()) {
      EXPECT_TRUE(SameValue(option, changed, defaults)) << option.yaml;
    }
  }
  for (const auto& [name, collector] : defaults.collectors) {
    EXPECT_EQ(changed.collectors.at(name).enabled, collector.enabled) << name;
    EXPECT_EQ(changed.collectors.at(name).interval, collector.interval) << name;
  }
  EXPECT_TRUE(ValidateConfig(changed).ok()) << "the defaults are valid";
}

TEST(AgentOptions, HelpAndDocsListEveryOption) {
  const AgentConfig defaults = Defaults();
  std::string help = FlagsHelp(defaults);
  std::string docs = ConfigDocs(defaults);
  for (const OptionSpec& option : AgentOptions()) {
    if (!option.flag.empty()) {
      EXPECT_THAT(help, HasSubstr("  --" + std::string(option.flag)));
      EXPECT_THAT(docs, HasSubstr("| `--" + std::string(option.flag) + "` |"));
    }
    if (!option.yaml.empty()) {
      EXPECT_THAT(docs, HasSubstr("`" + std::string(option.yaml) + "`"));
    }
  }
  // The flags the README's hand-written table used to miss.
  for (std::string flag : {"web.max-connections", "attribution.mapping-format", "version"}) {
    EXPECT_THAT(docs, HasSubstr("`--" + flag + "`"));
  }
  EXPECT_THAT(docs, HasSubstr("| `--web.listen-address` | `web.listen_address` | string | `:9400` |"));
  EXPECT_THAT(docs, HasSubstr("| `--events.max-line-bytes` | `events.max_line_bytes` | int | `65536` |"));
  EXPECT_THAT(docs, HasSubstr("`--collector.NAME.interval`"));
  EXPECT_THAT(docs, HasSubstr("`gpu` 1s"));
  EXPECT_THAT(help, HasSubstr("--nvml.call-deadline=DURATION"));
  EXPECT_THAT(help, HasSubstr("Default: 2s."));
  EXPECT_THAT(help, HasSubstr("Default: \":9400\"."));
  EXPECT_THAT(help, HasSubstr("One of debug, info, warn, error."));
}

TEST(AgentOptions, AllowedWordsAgreeWithTheModulesThatParseThem) {
  const OptionSpec* mapping = nullptr;
  const OptionSpec* severity = nullptr;
  const OptionSpec* traces = nullptr;
  for (const OptionSpec& option : AgentOptions()) {
    if (option.flag == "attribution.mapping-format") mapping = &option;
    if (option.flag == "events.ship-severity") severity = &option;
    if (option.flag == "training.traces") traces = &option;
  }
  ASSERT_NE(mapping, nullptr);
  ASSERT_NE(severity, nullptr);
  ASSERT_NE(traces, nullptr);
  for (std::string_view word : traces->choices) EXPECT_TRUE(ParseTrainingTraces(word).has_value()) << word;
  EXPECT_EQ(traces->choices.size(), 3u);  // slow, all, off: each a mode of TrainingSpans
  for (std::string_view word : mapping->choices) {
    MappingDirOptions::Format format;
    EXPECT_TRUE(ParseMappingFormatOption(word, &format)) << word;
  }
  std::vector<std::string_view> names;
  for (EventSeverity s : {EventSeverity::kDebug, EventSeverity::kInfo, EventSeverity::kWarning,
                          EventSeverity::kError, EventSeverity::kCritical}) {
    names.push_back(EventSeverityName(s));
  }
  EXPECT_EQ(std::vector<std::string_view>(severity->choices.begin(), severity->choices.end()), names);
}

TEST(AgentOptions, ValidationNamesTheOptionByKeyAndFlag) {
  AgentConfig config = Defaults();
  EXPECT_EQ(LoadConfig({"--log.level=loud"}, &config).message(),
            "log.level (--log.level) must be one of debug, info, warn, error, got 'loud'");
  config = Defaults();
  EXPECT_EQ(LoadConfig({"--web.max-connections=0"}, &config).message(),
            "web.max_connections (--web.max-connections) must be at least 1, got 0");
  config = Defaults();
  EXPECT_EQ(LoadConfig({"--attribution.slurm.timeout=0s"}, &config).message(),
            "attribution.slurm.timeout (--attribution.slurm.timeout) must be positive");
  config = Defaults();
  EXPECT_EQ(LoadConfig({"--web.telemetry-path=metrics"}, &config).message(),
            "web.telemetry_path (--web.telemetry-path) must start with /, got 'metrics'");
}

TEST(AgentOptions, SwitchesTakeNoPrefixAndNothingElseDoes) {
  AgentConfig config = Defaults();
  ASSERT_TRUE(ApplyFlags({"--no-attribution.proc", "--no-slurm.include-user"}, &config).ok());
  EXPECT_FALSE(config.attribution_proc);
  EXPECT_FALSE(config.slurm_include_user);
  ASSERT_TRUE(ApplyFlags({"--attribution.proc"}, &config).ok());
  EXPECT_TRUE(config.attribution_proc);
  EXPECT_THAT(ApplyFlags({"--no-attribution.proc=true"}, &config).message(), HasSubstr("takes no value"));
  EXPECT_THAT(ApplyFlags({"--no-web.listen-address"}, &config).message(), HasSubstr("unknown flag"));
}

TEST(AgentOptions, ASectionWithAnEnabledKeyMayBeABareBoolean) {
  AgentConfig config = Defaults();
  ASSERT_TRUE(ApplyConfigYaml("attribution: {slurm: true}\nevents: {journal: yes}\n", &config).ok());
  EXPECT_TRUE(config.attribution_slurm);
  EXPECT_TRUE(config.events_journal);
  EXPECT_THAT(ApplyConfigYaml("events: {journal: sometimes}\n", &config).message(),
              HasSubstr("events.journal.enabled: expected true or false"));
  EXPECT_THAT(ApplyConfigYaml("web: {listen_address: {x: 1}}\n", &config).message(),
              HasSubstr("web.listen_address: expected a string"));
}

TEST(AgentOptions, ADuplicateKeyInTheFileIsAnError) {
  AgentConfig config = Defaults();
  EXPECT_THAT(ApplyConfigYaml("log:\n  level: debug\n  level: info\n", &config).message(),
              HasSubstr("log: duplicate key \"level\" (line 3)"));
}

TEST(AgentOptions, FlagOnlyOptionsHaveNoYamlKey) {
  AgentConfig config = Defaults();
  EXPECT_THAT(ApplyConfigYaml("once: true\n", &config).message(), HasSubstr("unknown key \"once\""));
  EXPECT_THAT(ApplyConfigYaml("config: /x\n", &config).message(), HasSubstr("unknown key \"config\""));
}

}  // namespace
}  // namespace gpuscope
