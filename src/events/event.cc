#include "src/events/event.h"

namespace gpuscope {

std::string_view EventSeverityName(EventSeverity severity) {
  switch (severity) {
    case EventSeverity::kDebug:
      return "debug";
    case EventSeverity::kInfo:
      return "info";
    case EventSeverity::kWarning:
      return "warning";
    case EventSeverity::kError:
      return "error";
    case EventSeverity::kCritical:
      return "critical";
  }
  return "info";
}

std::optional<EventSeverity> ParseEventSeverity(std::string_view name) {
  for (EventSeverity s : {EventSeverity::kDebug, EventSeverity::kInfo, EventSeverity::kWarning,
                          EventSeverity::kError, EventSeverity::kCritical}) {
    if (EventSeverityName(s) == name) return s;
  }
  return std::nullopt;
}

}  // namespace gpuscope
