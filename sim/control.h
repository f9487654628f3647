// Test control of the simulator, exported from libnvidia-ml.so.1 beside the NVML entry points.
//
// With GPUSCOPE_SIM_TIME set when nvmlInit runs, simulated time is frozen at that value; a test moves it
// with gpuscopeSimSetTime instead of changing the environment, which would race with the agent's threads
// (setenv and getenv are not thread-safe). A process that dlopens the library finds it with
// dlsym(handle, kSimSetTimeSymbol).
//
// Thread-safety: gpuscopeSimSetTime may be called from any thread.
#pragma once

extern "C" {
// Moves frozen simulated time to `seconds`; does nothing before nvmlInit or when time runs.
void gpuscopeSimSetTime(double seconds);
}

namespace gpuscope::sim {
inline constexpr const char* kSimSetTimeSymbol = "gpuscopeSimSetTime";
}  // namespace gpuscope::sim
