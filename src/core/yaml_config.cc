#include "src/core/yaml_config.h"

#include <set>

#include "src/core/duration.h"

namespace gpuscope {
namespace {

Status Invalid(std::string_view path, std::string_view problem, const YAML::Node& node) {
  return Status::InvalidArgument(std::string(path) + ": " + std::string(problem) + YamlLine(node));
}

}  // namespace

Status WalkYamlDocument(std::string_view text, std::string_view what,
                        const std::function<Status(const YAML::Node& root)>& walk) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(what) + " is not valid YAML: " + e.what());
  }
  // The helpers below do not throw on a parsed document; this catch keeps a yaml-cpp surprise (a new
  // node kind, an allocation failure inside it) a clear error instead of a crash.
  try {
    return walk(root);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(what) + ": " + e.what());
  }
}

std::string YamlLine(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

Status UnknownYamlKey(std::string_view section, std::string_view key, const YAML::Node& node) {
  return Invalid(section, "unknown key \"" + std::string(key) + "\"", node);
}

Status ForEachYamlEntry(const YAML::Node& node, std::string_view path,
                        const std::function<Status(const std::string& key, const YAML::Node& value)>& visit) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap()) return Invalid(path, "expected a mapping", node);
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) return Invalid(path, "keys must be strings", entry.first);
    const std::string& key = entry.first.Scalar();
    if (!seen.insert(key).second) return Invalid(path, "duplicate key \"" + key + "\"", entry.first);
    Status status = visit(key, entry.second);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

Status ReadYamlString(const YAML::Node& node, std::string_view path, std::string* out) {
  if (node.IsNull()) {
    out->clear();
    return Status::Ok();
  }
  if (!node.IsScalar()) return Invalid(path, "expected a string", node);
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadYamlBool(const YAML::Node& node, std::string_view path, bool* out) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return Invalid(path, "expected true or false", node);
  }
  *out = value;
  return Status::Ok();
}

Status ReadYamlInt(const YAML::Node& node, std::string_view path, int* out) {
  int value = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
    return Invalid(path, "expected an integer", node);
  }
  *out = value;
  return Status::Ok();
}

Status ReadYamlDuration(const YAML::Node& node, std::string_view path, std::chrono::milliseconds* out) {
  if (!node.IsScalar()) return Invalid(path, "expected a duration (e.g. 500ms, 1s, 1m30s)", node);
  Status status = ParseDurationSetting(node.Scalar(), path, out);
  if (!status.ok()) return Status::InvalidArgument(status.message() + YamlLine(node));
  return status;
}

Status ReadYamlStringList(const YAML::Node& node, std::string_view path, std::vector<std::string>* out) {
  if (node.IsNull()) {
    out->clear();
    return Status::Ok();
  }
  if (node.IsScalar()) {
    out->assign(1, node.Scalar());
    return Status::Ok();
  }
  if (!node.IsSequence()) return Invalid(path, "expected a list of strings", node);
  std::vector<std::string> values;
  for (const auto& item : node) {
    if (!item.IsScalar()) return Invalid(path, "expected a list of strings", item);
    values.push_back(item.Scalar());
  }
  *out = std::move(values);
  return Status::Ok();
}

}  // namespace gpuscope
