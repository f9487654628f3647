// The profiling pause's HTTP API on the metrics listener (docs/design/dcgm.md):
//   POST /api/v1/profiling/pause   {"duration_seconds": 600, "reason": "ncu by alice"}
//   POST /api/v1/profiling/resume
//   GET  /api/v1/profiling         the state
// Pausing and resuming need credentials, always: the web config's basic auth when it has users (the server
// checks them on every path), else the bearer token of --profiling.token-file. An agent with neither
// answers 403, so the endpoint is never open. Answers are JSON: {"paused", "until_unix", "reason", "dcgm",
// "pauses_total"}, or {"error"}.
//
// Thread-safety: the handlers may run on any server worker concurrently.
#pragma once

#include <string>

#include "src/core/status.h"

namespace gpuscope {

class PrometheusEndpoint;
class ProfilingPause;

struct ProfilingPauseRequest {
  double seconds = 0;
  std::string reason;
};

// Parses a pause request body: a JSON object with a number "duration_seconds" and an optional string
// "reason"; unknown members are ignored. InvalidArgument with a message otherwise (limits are checked by
// ProfilingPause::Pause).
Status ParseProfilingPauseRequest(std::string_view body, ProfilingPauseRequest* out);

// Registers the three routes. `token_file` is read at each request (a rotated token takes effect at
// once); `pause` must outlive the endpoint.
void RegisterProfilingApi(PrometheusEndpoint* endpoint, ProfilingPause* pause, const std::string& token_file);

}  // namespace gpuscope
