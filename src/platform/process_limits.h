// Process resource limits the agent sets for itself at start.
//
// Thread-safety: call from main() before threads start.
#pragma once

#include <cstdint>

namespace gpuscope {

struct OpenFileLimit {
  uint64_t soft = 0;  // in effect after the call; 0 when getrlimit failed
  uint64_t hard = 0;
};

// Raises the soft limit on open file descriptors (RLIMIT_NOFILE) to the hard limit, as Go programs such
// as Prometheus and node_exporter do at start: the metrics endpoint holds one descriptor per connection
// (--web.max-connections), the event sources and push sinks more, and many distributions start services
// with a soft limit of 1024. Leaves the limit unchanged when it cannot be raised; never lowers it.
OpenFileLimit RaiseOpenFileLimit();

}  // namespace gpuscope
