// Agent: turns an AgentConfig into running components — collectors on the scheduler, the snapshot
// store, the Prometheus endpoint — and runs them until SIGTERM or SIGINT. Wiring only: every piece of
// logic lives in the component it belongs to.
//
// Thread-safety: Run() is called once, from main.
#pragma once

#include "src/agent/config.h"

namespace gpuscope {

// Returns the process exit code. Blocks until a termination signal (unless config.once or
// config.print_metrics_docs). SIGTERM/SIGINT must be blocked in the calling thread before any other
// thread starts (main does this) so that they are taken with sigwait.
int RunAgent(const AgentConfig& config);

}  // namespace gpuscope
