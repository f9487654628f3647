// Fuzz target: the profiling pause request parser must turn any body into a request or a clear error, and
// whatever it accepts, the pause must take or refuse with a message (never crash, never pause forever).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/agent/profiling_api.h"
#include "src/node/profiling_pause.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::ProfilingPauseRequest request;
  const gpuscope::Status status = gpuscope::ParseProfilingPauseRequest(
      std::string_view(reinterpret_cast<const char*>(data), size), &request);
  if (!status.ok()) {
    if (status.message().empty()) __builtin_trap();
    return 0;
  }
  gpuscope::ProfilingPause pause([] { return 1000.0; });
  if (pause.Pause(request.seconds, request.reason).ok() &&
      pause.State().until_unix > 1000.0 + gpuscope::ProfilingPause::kMaxSeconds) {
    __builtin_trap();
  }
  return 0;
}
