// Test control of the simulator, exported from libnvidia-ml.so.1 beside the NVML entry points.
//
// With GPUSCOPE_SIM_TIME set when nvmlInit runs, simulated time is frozen at that value; a test moves it
// with gpuscopeSimSetTime instead of changing the environment, which would race with the agent's threads
// (setenv and getenv are not thread-safe). A process that dlopens the library finds it with
// dlsym(handle, kSimSetTimeSymbol).
//
// Thread-safety: gpuscopeSimSetTime may be called from any thread.
#pragma once

//
// Many simulated nodes in one process (the fleet runner, sim/fleet/): each node is a gpuscopeSimNode with
// its own scenario, seed and clock. A thread bound to a node with gpuscopeSimBindThread has every NVML
// call it makes afterwards answered by that node (nvmlInit_v2 and nvmlShutdown count references per
// node, as they do for the process's own simulator); an unbound thread gets the process's simulator from
// GPUSCOPE_SIM_SCENARIO. The agent's NVML binding re-binds before each call of a library opened for a node
// (NvmlLibrary::OpenBound), so the agent's threads need no knowledge of nodes.

extern "C" {
// Moves frozen simulated time to `seconds`; does nothing before nvmlInit or when time runs.
void gpuscopeSimSetTime(double seconds);

struct gpuscopeSimNode;
// A node answering from the scenario `scenario_yaml` (the text of a scenario file), with `seed`,
// `start_offset` (simulated seconds at its nvmlInit_v2) and, when `speed` > 0, `speed` (simulated seconds
// per real second) in place of the file's; no kernel log and no real processes. Null when the scenario is
// invalid, with the reason copied into `error` (NUL-terminated, truncated to `error_size` bytes; `error` may
// be null).
gpuscopeSimNode* gpuscopeSimNodeCreate(const char* scenario_yaml, unsigned long long seed,
                                       double start_offset, double speed, char* error, unsigned error_size);
// Frees a node; no thread may use it any more (its agent's collectors have stopped).
void gpuscopeSimNodeDestroy(gpuscopeSimNode* node);
// Binds the calling thread to `node` (a gpuscopeSimNode*; null: the process's own simulator).
void gpuscopeSimBindThread(void* node);
}

namespace gpuscope::sim {
inline constexpr const char* kSimSetTimeSymbol = "gpuscopeSimSetTime";
inline constexpr const char* kSimNodeCreateSymbol = "gpuscopeSimNodeCreate";
inline constexpr const char* kSimNodeDestroySymbol = "gpuscopeSimNodeDestroy";
inline constexpr const char* kSimBindThreadSymbol = "gpuscopeSimBindThread";
}  // namespace gpuscope::sim
