// Falco's and Tetragon's JSON events, one line at a time, into one struct the event path turns into an Event
// (src/events/sources/security_source.h). Pure: a line in, a SecurityEvent or an error out, no I/O.
//
// Falco (json_output: true; the same object file_output writes one a line and http_output POSTs):
//   {"time": RFC 3339, "rule", "priority" (Emergency .. Debug), "output", "source" ("syscall", "k8s_audit",
//    a plugin's), "tags": [..], "hostname", "output_fields": {"proc.pid", "proc.name", "proc.cmdline",
//    "user.name", "container.id", "k8s.pod.name", "k8s.ns.name", "fd.name", ..}}
//   output_fields values are strings, numbers or null (a field the event lacks).
// Tetragon (its JSON export, --export-filename: the GetEventsResponse protobuf as JSON, one a line): one
//   top-level member named after the event kind (process_exec, process_exit, process_kprobe,
//   process_tracepoint, process_uprobe, process_lsm, ..) beside node_name and time; the kind's object holds
//   process {pid, uid, binary, arguments, cwd, docker, pod {namespace, name, container {id, name}}}, parent,
//   and for the policy kinds policy_name, function_name (kprobes, uprobes, LSM hooks) or subsys/event
//   (tracepoints), action ("KPROBE_ACTION_SIGKILL", ..). Protobuf's JSON writes 32-bit integers as numbers
//   and 64-bit ones as strings; both are taken.
//
// Severity (EventSeverityName's words):
//   Falco: emergency, alert, critical -> critical; error -> error; warning -> warning; notice,
//     informational (also "info") -> info; debug -> debug. Another priority is an error.
//   Tetragon: an enforcing action (KPROBE_ACTION_SIGKILL, _OVERRIDE, _SIGNAL, _NOTIFYENFORCER) -> critical;
//     a policy kind (process_kprobe, process_tracepoint, process_uprobe, process_lsm, process_usdt) raised
//     by a named policy -> warning, without one -> info; process_exec, process_exit -> info; Tetragon's own
//     bookkeeping (process_loader, process_throttle, rate_limit_info) -> debug; another kind -> info.
//
// Hostile input is an error, never a crash: a line over kMaxSecurityLineBytes, invalid UTF-8, JSON nested
// deeper than kMaxSecurityJsonDepth, members of the wrong type, a missing rule or kind. Strings copied out
// are capped (control characters become spaces).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

inline constexpr size_t kMaxSecurityLineBytes = 1 << 20;
inline constexpr int kMaxSecurityJsonDepth = 32;

enum class SecurityTool { kFalco, kTetragon };

struct SecurityEvent {
  SecurityTool tool = SecurityTool::kFalco;
  std::string rule;          // Falco's rule; Tetragon's policy_name, else the event kind
  std::string priority;      // Falco's priority in lower case; Tetragon: the severity word below
  std::string severity;      // "debug", "info", "warning", "error" or "critical"
  std::string summary;       // Falco's output; for Tetragon one line made of kind, process and hook
  int64_t time_unix_ns = 0;  // the event's time; 0 when absent or not RFC 3339
  std::string pid;           // digits; empty when the event names no process
  std::string process;       // Falco proc.name (else proc.exepath); Tetragon process.binary
  std::string user;          // Falco user.name; Tetragon process.uid (digits)
  std::string container_id;  // Falco container.id ("host" outside one); Tetragon pod.container.id or docker
  std::string pod;
  std::string namespace_name;
  // What else each tool says, in a fixed order per tool (empty values kept, so the order never changes):
  // Falco: falco_source (its "source"; not "source", the pipeline's label), cmdline, fd_name, hostname,
  // tags (comma-separated);
  // Tetragon: kind, action, function_name, arguments, cwd, node_name, parent_process.
  std::vector<std::pair<std::string, std::string>> extra;
};

// One line of Falco's JSON output. InvalidArgument saying why when it is not one.
Status ParseFalcoEvent(std::string_view line, SecurityEvent* out);

// One line of Tetragon's JSON export. InvalidArgument saying why when it is not one.
Status ParseTetragonEvent(std::string_view line, SecurityEvent* out);

// "2024-05-02T10:20:05.408091526Z" (or a +hh:mm offset; fraction optional) as nanoseconds since the epoch;
// false when `text` is not such a time.
bool ParseRfc3339Nanos(std::string_view text, int64_t* unix_ns);

}  // namespace gpuscope
