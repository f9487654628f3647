// Event: one classified line from a kernel log, a job's output or a daemon log (XID, ECC, OOM, NCCL,
// CUDA, Slurm interruptions). Classifiers are pure functions from a line to an optional Event; sources
// (kmsg, files, journal) and sinks (Loki, OTLP) are built around this type.
//
// Thread-safety: a value type.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

enum class EventSeverity { kDebug, kInfo, kWarning, kError, kCritical };
std::string_view EventSeverityName(
    EventSeverity severity);  // "debug", "info", "warning", "error", "critical"
// The severity EventSeverityName gives `name`; nullopt for any other word.
std::optional<EventSeverity> ParseEventSeverity(std::string_view name);

struct Event {
  std::string event_class;  // low-cardinality class: "xid", "sxid", "oom", "cuda", "cuda_oom", "nccl",
                            // "ib_completion", "nccl_watchdog", "slurm_interruption", ...
  EventSeverity severity = EventSeverity::kInfo;
  std::string summary;  // one human line, e.g. "XID 79: GPU has fallen off the bus"
  // Typed fields as key/value pairs in a fixed order per class (e.g. pci_bus_id, xid, action, pid).
  std::vector<std::pair<std::string, std::string>> fields;

  std::string_view Field(std::string_view key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    return {};
  }
};

}  // namespace gpuscope
