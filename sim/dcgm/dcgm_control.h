// Test control of the stand-in libdcgm.so.4, exported beside the DCGM entry points (as sim/control.h's
// gpuscopeSimSetTime is from libnvidia-ml.so.1).
//
// With GPUSCOPE_SIM_TIME set when dcgmInit runs, simulated time is frozen at that value; a test moves it
// with gpuscopeSimDcgmSetTime instead of changing the environment. A process that dlopens the library
// finds it with dlsym(handle, kSimDcgmSetTimeSymbol).
//
// Thread-safety: gpuscopeSimDcgmSetTime may be called from any thread.
#pragma once

extern "C" {
// Moves frozen simulated time to `seconds`; does nothing before dcgmInit or when time runs.
void gpuscopeSimDcgmSetTime(double seconds);
}

namespace gpuscope::sim {
inline constexpr const char* kSimDcgmSetTimeSymbol = "gpuscopeSimDcgmSetTime";
}  // namespace gpuscope::sim
