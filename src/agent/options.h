// The agent's options, each described once: its key in the YAML file, its flag, its type (that of the
// AgentConfig field it sets), its help, its default (the field's initial value, or words where the
// default is worked out at start-up) and its validation. The YAML parser, the flag parser, --help,
// ValidateConfig and the README's configuration section (--print-config-docs) all walk this one table;
// none keeps a list of its own. The collectors' switches are not in it: they come from the collector
// registry (--collector.NAME, --no-collector.NAME, --collector.NAME.interval; collectors.NAME.*).
//
// Thread-safety: constant data.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/agent/config.h"

namespace gpuscope {

// The AgentConfig field an option sets; its type is the option's type. A bool is a switch (--x,
// --x=false, --no-x); a string list is a repeatable flag (each occurrence adds one value to the file's
// list) and a YAML list (or a single string); a list of endpoints is YAML only: a list of mappings.
using OptionField =
    std::variant<std::string AgentConfig::*, bool AgentConfig::*, int AgentConfig::*,
                 std::chrono::milliseconds AgentConfig::*, std::vector<std::string> AgentConfig::*,
                 std::vector<RemoteWriteEndpointConfig> AgentConfig::*>;

// Visits an OptionField with one lambda per type: std::visit(Overloaded{...}, option.field).
template <typename... Fns>
struct Overloaded : Fns... {
  using Fns::operator()...;
};
template <typename... Fns>
Overloaded(Fns...) -> Overloaded<Fns...>;  // clang 14 does not deduce aggregates' arguments yet

struct OptionSpec {
  std::string_view yaml;  // dotted key path in the config file ("web.listen_address"); empty: flag only
  std::string_view flag;  // without the leading "--" ("web.listen-address"); empty: config file only
  OptionField field;
  std::string_view help;  // one sentence or two, without the default (shown from the field)
  // The default in words, for options whose empty initial value stands for something worked out at
  // start-up ("this host's name"); empty: the field's initial value is shown.
  std::string_view default_text = {};
  // Validation, checked by ValidateConfig after the file and the flags have been applied:
  std::span<const std::string_view> choices = {};  // a string option's allowed values; empty: any
  int min = 0;                                     // an integer option's lowest allowed value (0 unless set)
  // Further checks of a string option (of each element of a list): returns what is wrong ("must start with
  // /"), "" when the value is fine. Durations are always checked to be positive.
  std::string_view (*check)(std::string_view value) = nullptr;
};

// Every option, in the order --help and the docs list them.
std::span<const OptionSpec> AgentOptions();

// The table's checks of single values, for the values inside a list of endpoints (ValidateConfig):
// what is wrong, "" when the value is fine.
std::string_view CheckHttpUrl(std::string_view value);
std::string_view CheckHeaderPair(std::string_view value);  // Name=value of an extra request header
std::span<const std::string_view> RemoteWriteProtocolChoices();

// How an option is named in messages: its YAML key and flag, e.g. "web.listen_address
// (--web.listen-address)", or whichever of the two it has.
std::string OptionName(const OptionSpec& option);

}  // namespace gpuscope
