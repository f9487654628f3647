// Strict reading of gpuscope's YAML configuration files (the agent's --config file, the exporter-toolkit
// web config): one set of helpers over yaml-cpp that return a Status instead of throwing, so that each
// file's parser reads as a walk over its keys and every error names the key path and its line.
//
// Conventions, those of the Go YAML decoder the Prometheus tools use for the same files:
// - a null value (`key:` with nothing after it) reads as an empty string, an empty mapping or an empty
//   list; a null boolean, integer or duration is an error (there is no sensible empty one);
// - mapping keys are strings, each at most once (a duplicate key is an error, not "last one wins").
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

// Parses `text` and calls `walk` on the root node (a null node for an empty document). A syntax error
// is InvalidArgument "<what> is not valid YAML: <yaml-cpp's message with line and column>"; otherwise
// returns what `walk` returns.
Status WalkYamlDocument(std::string_view text, std::string_view what,
                        const std::function<Status(const YAML::Node& root)>& walk);

// " (line N)" for a node that came from a document, "" for one that did not.
std::string YamlLine(const YAML::Node& node);

// InvalidArgument "<section>: unknown key "<key>" (line N)"; `node` is the key's value, for its line.
Status UnknownYamlKey(std::string_view section, std::string_view key, const YAML::Node& node);

// Calls `visit(key, value)` for each entry of the mapping `node`, stopping at the first error, which it
// returns. `path` names the mapping in errors. A null node is an empty mapping; any other non-mapping,
// a key that is not a string and a key that appears twice are InvalidArgument.
Status ForEachYamlEntry(const YAML::Node& node, std::string_view path,
                        const std::function<Status(const std::string& key, const YAML::Node& value)>& visit);

// Each Read* sets *out and returns Ok, or returns InvalidArgument naming `path` (and the line) and
// leaves *out unchanged.
Status ReadYamlString(const YAML::Node& node, std::string_view path, std::string* out);
// YAML's booleans: true/false, yes/no, on/off in any of their usual spellings.
Status ReadYamlBool(const YAML::Node& node, std::string_view path, bool* out);
Status ReadYamlInt(const YAML::Node& node, std::string_view path, int* out);
// A Prometheus-style duration (500ms, 1s, 1m30s), as ParseDuration reads it.
Status ReadYamlDuration(const YAML::Node& node, std::string_view path, std::chrono::milliseconds* out);
// A list of strings; a single string is a list of one. Replaces *out.
Status ReadYamlStringList(const YAML::Node& node, std::string_view path, std::vector<std::string>* out);

}  // namespace gpuscope
