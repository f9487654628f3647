// HealthReport: what /healthz and /readyz answer. Produced by the scheduler from the collectors'
// Healthy() and from how long ago each completed a cycle.
//
// Thread-safety: a value type.
#pragma once

#include <functional>
#include <string>

namespace gpuscope {

struct HealthReport {
  bool healthy = true;  // false when a source is gone (NVML unloadable/lost) or collection has stalled
  bool ready = false;   // true once every enabled collector completed its first cycle
  std::string detail;   // one line per problem, for the response body and logs
};

using HealthProvider = std::function<HealthReport()>;

}  // namespace gpuscope
