#include "src/parsers/security_events.h"

#include <array>
#include <nlohmann/json.hpp>
#include <optional>

#include "src/core/utf8.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxFieldBytes = 256;       // names, ids, paths
constexpr size_t kMaxLongFieldBytes = 1024;  // Falco's output, command lines, arguments

// At most `max` bytes of `s` (valid UTF-8: the parser checked it), cut at a character boundary, with
// control characters as spaces, so that one field is one line of a log.
std::string Cap(std::string_view s, size_t max) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = ValidUtf8Length(s, i);
    if (n == 0) n = 1;  // not reached for parsed JSON strings; keeps the loop finite anyway
    if (out.size() + n > max) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 1 && (c < 0x20 || c == 0x7f)) {
      out.push_back(' ');
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

// Parses one line into an object; the depth guard discards deeper values and reports them.
Status ParseObject(std::string_view line, std::string_view what, Json* out) {
  if (line.size() > kMaxSecurityLineBytes) {
    return Status::InvalidArgument(std::string(what) + ": line longer than " +
                                   std::to_string(kMaxSecurityLineBytes) + " bytes");
  }
  if (!IsValidUtf8(line)) return Status::InvalidArgument(std::string(what) + ": not valid UTF-8");
  bool too_deep = false;
  // The parser itself keeps its nesting on the heap; what is deeper than the limit is dropped as it is
  // read, so neither the tree nor its destructor ever gets deep.
  Json::parser_callback_t guard = [&too_deep](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxSecurityJsonDepth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  *out = Json::parse(line.begin(), line.end(), guard, /*allow_exceptions=*/false);
  if (too_deep) {
    return Status::InvalidArgument(std::string(what) + ": nested deeper than " +
                                   std::to_string(kMaxSecurityJsonDepth));
  }
  if (out->is_discarded()) return Status::InvalidArgument(std::string(what) + ": not JSON");
  if (!out->is_object()) return Status::InvalidArgument(std::string(what) + ": not a JSON object");
  return Status::Ok();
}

// The member `key` of `object` as text: a string as is, a number in decimal, a boolean as true/false, null
// or absent as "". nullopt when it is an object or an array (or `object` is not an object).
std::optional<std::string> Scalar(const Json& object, std::string_view key, size_t max = kMaxFieldBytes) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (it->is_string()) return Cap(it->get_ref<const std::string&>(), max);
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number_float()) return Cap(it->dump(), max);
  if (it->is_boolean()) return std::string(it->get<bool>() ? "true" : "false");
  return std::nullopt;
}

// The member `key` of `object` as an object; null when absent or null; sets *wrong when another type.
const Json* Object(const Json& object, std::string_view key, bool* wrong) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  if (!it->is_object()) {
    *wrong = true;
    return nullptr;
  }
  return &*it;
}

// A process id as digits (a string of digits or a non-negative integer); "" for anything else.
std::string Pid(std::string_view text) {
  if (text.empty() || text.size() > 10 || !text::ParseWhole<uint32_t>(text)) return "";
  return std::string(text);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Falco's priority (any case) as its lower-case name and the severity it maps to; nullopt for another word.
std::optional<std::pair<std::string_view, std::string_view>> FalcoPriority(std::string_view priority) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kPriorities = {{
      {"emergency", "critical"},
      {"alert", "critical"},
      {"critical", "critical"},
      {"error", "error"},
      {"warning", "warning"},
      {"notice", "info"},
      {"informational", "info"},
      {"info", "info"},  // falco.yaml's priority option takes this spelling too
      {"debug", "debug"},
  }};
  const std::string lower = Lower(priority);
  for (const auto& entry : kPriorities) {
    if (entry.first == lower) return entry;
  }
  return std::nullopt;
}

Status Wrong(std::string_view what, std::string_view member, std::string_view expected) {
  return Status::InvalidArgument(std::string(what) + ": " + std::string(member) + " is not " +
                                 std::string(expected));
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

bool ParseRfc3339Nanos(std::string_view s, int64_t* unix_ns) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      s[13] != ':' || s[16] != ':') {
    return false;
  }
  auto number = [&](size_t at, size_t n) { return text::ParseWhole<unsigned>(s.substr(at, n)); };
  const auto year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const auto hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 || *day < 1 ||
      *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return false;
  }
  size_t i = 19;
  int64_t nanos = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t digits = 0;
    while (i < s.size() && text::IsDigit(s[i])) {
      if (digits < 9) nanos = nanos * 10 + (s[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) return false;
    for (size_t k = digits; k < 9; ++k) nanos *= 10;
  }
  int64_t offset_seconds = 0;
  const std::string_view zone = s.substr(i);
  if (zone == "Z" || zone == "z") {
    offset_seconds = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const auto oh = text::ParseWhole<unsigned>(zone.substr(1, 2));
    const auto om = text::ParseWhole<unsigned>(zone.substr(4, 2));
    if (!oh || !om || *oh > 23 || *om > 59) return false;
    offset_seconds = (zone[0] == '+' ? 1 : -1) * static_cast<int64_t>(*oh * 3600 + *om * 60);
  } else {
    return false;
  }
  const int64_t days = DaysFromCivil(*year, *month, *day);
  const int64_t seconds = days * 86400 + *hour * 3600 + *minute * 60 + *second - offset_seconds;
  *unix_ns = seconds * 1000000000 + nanos;
  return true;
}

Status ParseFalcoEvent(std::string_view line, SecurityEvent* out) {
  constexpr std::string_view kWhat = "falco event";
  *out = SecurityEvent();
  out->tool = SecurityTool::kFalco;
  Json json;
  if (Status status = ParseObject(text::Trim(line), kWhat, &json); !status.ok()) return status;

  std::optional<std::string> rule = Scalar(json, "rule");
  if (!rule || rule->empty()) return Status::InvalidArgument(std::string(kWhat) + ": no rule");
  auto priority_it = json.find("priority");
  if (priority_it == json.end() || !priority_it->is_string()) return Wrong(kWhat, "priority", "a string");
  auto priority = FalcoPriority(priority_it->get_ref<const std::string&>());
  if (!priority) {
    return Status::InvalidArgument(std::string(kWhat) + ": unknown priority '" +
                                   Cap(priority_it->get_ref<const std::string&>(), 32) + "'");
  }
  out->rule = std::move(*rule);
  out->priority = std::string(priority->first);
  out->severity = std::string(priority->second);

  std::optional<std::string> output = Scalar(json, "output", kMaxLongFieldBytes);
  std::optional<std::string> time = Scalar(json, "time");
  std::optional<std::string> source = Scalar(json, "source");
  std::optional<std::string> hostname = Scalar(json, "hostname");
  if (!output || !time || !source || !hostname)
    return Wrong(kWhat, "output, time, source or hostname", "text");
  out->summary = output->empty() ? out->rule : std::move(*output);
  if (!time->empty()) ParseRfc3339Nanos(*time, &out->time_unix_ns);

  std::string tags;
  if (auto it = json.find("tags"); it != json.end() && !it->is_null()) {
    if (!it->is_array()) return Wrong(kWhat, "tags", "an array");
    for (const Json& tag : *it) {
      if (!tag.is_string()) return Wrong(kWhat, "a tag", "a string");
      if (!tags.empty()) tags.push_back(',');
      tags += tag.get_ref<const std::string&>();
      if (tags.size() > kMaxFieldBytes) break;
    }
    tags = Cap(tags, kMaxFieldBytes);
  }

  bool wrong = false;
  const Json* fields = Object(json, "output_fields", &wrong);
  if (wrong) return Wrong(kWhat, "output_fields", "an object");
  static const Json kNone = Json::object();
  const Json& f = fields != nullptr ? *fields : kNone;
  struct Named {
    std::string_view key;
    std::string* into;
    size_t max;
  };
  std::string exepath, cmdline, fd_name;
  const Named named[] = {
      {"proc.name", &out->process, kMaxFieldBytes},          {"proc.exepath", &exepath, kMaxFieldBytes},
      {"proc.cmdline", &cmdline, kMaxLongFieldBytes},        {"user.name", &out->user, kMaxFieldBytes},
      {"container.id", &out->container_id, kMaxFieldBytes},  {"k8s.pod.name", &out->pod, kMaxFieldBytes},
      {"k8s.ns.name", &out->namespace_name, kMaxFieldBytes}, {"fd.name", &fd_name, kMaxFieldBytes},
  };
  for (const Named& n : named) {
    std::optional<std::string> value = Scalar(f, n.key, n.max);
    if (!value) return Wrong(kWhat, "output_fields." + std::string(n.key), "a scalar");
    *n.into = std::move(*value);
  }
  std::optional<std::string> pid = Scalar(f, "proc.pid");
  if (!pid) return Wrong(kWhat, "output_fields.proc.pid", "a scalar");
  out->pid = Pid(*pid);
  if (out->process.empty()) out->process = std::move(exepath);

  out->extra = {{"falco_source", std::move(*source)},
                {"cmdline", std::move(cmdline)},
                {"fd_name", std::move(fd_name)},
                {"hostname", std::move(*hostname)},
                {"tags", std::move(tags)}};
  return Status::Ok();
}

namespace {

// Members of an export line beside the event kind's.
bool IsEnvelopeMember(std::string_view key) {
  return key == "node_name" || key == "time" || key == "cluster_name" || key == "aggregation_info" ||
         key == "node_labels";
}

bool IsPolicyKind(std::string_view kind) {
  return kind == "process_kprobe" || kind == "process_tracepoint" || kind == "process_uprobe" ||
         kind == "process_lsm" || kind == "process_usdt";
}

// See the header: Tetragon's severity from the kind, its policy and its action.
std::string_view TetragonSeverity(std::string_view kind, std::string_view policy, std::string_view action) {
  for (std::string_view enforcing : {"SIGKILL", "OVERRIDE", "SIGNAL", "NOTIFYENFORCER"}) {
    if (action == "KPROBE_ACTION_" + std::string(enforcing)) return "critical";
  }
  if (IsPolicyKind(kind)) return policy.empty() ? "info" : "warning";
  if (kind == "process_loader" || kind == "process_throttle" || kind == "rate_limit_info") return "debug";
  return "info";
}

}  // namespace

Status ParseTetragonEvent(std::string_view line, SecurityEvent* out) {
  constexpr std::string_view kWhat = "tetragon event";
  *out = SecurityEvent();
  out->tool = SecurityTool::kTetragon;
  Json json;
  if (Status status = ParseObject(text::Trim(line), kWhat, &json); !status.ok()) return status;

  const Json* body = nullptr;
  std::string kind;
  for (const auto& [key, value] : json.items()) {
    if (IsEnvelopeMember(key)) continue;
    if (body != nullptr) return Status::InvalidArgument(std::string(kWhat) + ": more than one event kind");
    if (!value.is_object()) return Wrong(kWhat, Cap(key, 64), "an object");
    body = &value;
    kind = Cap(key, 64);
  }
  if (body == nullptr || kind.empty()) return Status::InvalidArgument(std::string(kWhat) + ": no event kind");

  std::optional<std::string> node = Scalar(json, "node_name");
  std::optional<std::string> time = Scalar(json, "time");
  if (!node || !time) return Wrong(kWhat, "node_name or time", "text");
  if (!time->empty()) ParseRfc3339Nanos(*time, &out->time_unix_ns);

  bool wrong = false;
  const Json* process = Object(*body, "process", &wrong);
  const Json* parent = Object(*body, "parent", &wrong);
  if (wrong) return Wrong(kWhat, kind + ".process or .parent", "an object");
  static const Json kNone = Json::object();
  const Json& p = process != nullptr ? *process : kNone;
  const Json* pod = Object(p, "pod", &wrong);
  if (wrong) return Wrong(kWhat, "process.pod", "an object");
  const Json& pd = pod != nullptr ? *pod : kNone;
  const Json* container = Object(pd, "container", &wrong);
  if (wrong) return Wrong(kWhat, "process.pod.container", "an object");

  auto pid = Scalar(p, "pid");
  auto binary = Scalar(p, "binary");
  auto uid = Scalar(p, "uid");
  auto arguments = Scalar(p, "arguments", kMaxLongFieldBytes);
  auto cwd = Scalar(p, "cwd");
  auto docker = Scalar(p, "docker");
  auto pod_name = Scalar(pd, "name");
  auto pod_namespace = Scalar(pd, "namespace");
  auto container_id = Scalar(container != nullptr ? *container : kNone, "id");
  auto parent_binary = Scalar(parent != nullptr ? *parent : kNone, "binary");
  auto policy = Scalar(*body, "policy_name");
  auto action = Scalar(*body, "action");
  auto function = Scalar(*body, "function_name");
  auto subsys = Scalar(*body, "subsys");
  auto event = Scalar(*body, "event");
  for (const auto* v : {&pid, &binary, &uid, &arguments, &cwd, &docker, &pod_name, &pod_namespace,
                        &container_id, &parent_binary, &policy, &action, &function, &subsys, &event}) {
    if (!v->has_value()) return Wrong(kWhat, "a member of " + kind, "a scalar where one is expected");
  }

  out->pid = Pid(*pid);
  out->process = std::move(*binary);
  out->user = Pid(*uid);  // a uid has a pid's shape: digits within 32 bits
  out->container_id = !container_id->empty() ? std::move(*container_id) : std::move(*docker);
  out->pod = std::move(*pod_name);
  out->namespace_name = std::move(*pod_namespace);
  out->rule = !policy->empty() ? *policy : kind;
  out->severity = std::string(TetragonSeverity(kind, *policy, *action));
  out->priority = out->severity;
  // Tracepoints name their hook as subsys/event.
  std::string hook = !function->empty() ? *function
                     : !event->empty()  ? (subsys->empty() ? *event : *subsys + "/" + *event)
                                        : std::string();

  std::string summary = kind;
  if (!hook.empty()) summary += " " + hook;
  if (!out->process.empty()) summary += " " + out->process;
  if (!arguments->empty()) summary += " " + *arguments;
  if (!policy->empty()) summary += " (policy " + *policy + ")";
  if (!action->empty()) summary += " action " + *action;
  out->summary = Cap(summary, kMaxLongFieldBytes);

  out->extra = {{"kind", std::move(kind)},
                {"action", std::move(*action)},
                {"function_name", std::move(hook)},
                {"arguments", std::move(*arguments)},
                {"cwd", std::move(*cwd)},
                {"node_name", std::move(*node)},
                {"parent_process", std::move(*parent_binary)}};
  return Status::Ok();
}

}  // namespace gpuscope
