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

}  // namespace gpuscope
