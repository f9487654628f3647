// What the files of the stand-in libdcgm.so.4 share (dcgm_entry.cc, dcgm_fields.cc, dcgm_health.cc): the
// engines (the embedded one and the node's nv-hostengine) with their groups, field groups, watches and
// pause state, the handles that reach them, the Simulator, and the entity numbering. Internal to the
// library: nothing here is exported (exports.map lists the entry points, GPUSCOPE_DCGM_FUNCTIONS in
// src/platform/dcgm/dcgm_api.h declares them).
//
// Thread-safety: everything below is guarded by the one mutex g_mu; every function that touches it
// REQUIRES(g_mu). The Simulator's own per-GPU locks are taken inside it (order: g_mu, then the GPU's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/simulator.h"
#include "src/core/mutex.h"
#include "src/platform/dcgm/dcgm_api.h"

#define SIM_DCGM_EXPORT __attribute__((visibility("default")))

namespace gpuscope::sim::dcgm {

// DCGM numbers a GPU's instances gpuId * DCGM_MAX_INSTANCES_PER_GPU + index; the stand-in does the same
// with the instance's position in the scenario's `mig` list, for GPU instances (DCGM_FE_GPU_I) and for
// their compute instances (DCGM_FE_GPU_CI, one per GPU instance in a scenario).
inline constexpr unsigned kInstancesPerGpu = 8;

// DCGM's blank string (dcgm_structs.h's DCGM_STR_BLANK).
inline constexpr const char* kStringBlank = "<<<NULL>>>";

// DCGM_FI_PROF_GR_ENGINE_ACTIVE .. DCGM_FI_PROF_NVLINK_RX_BYTES.
inline bool IsProfilingField(unsigned short field) {
  return field >= DCGM_FI_PROF_GR_ENGINE_ACTIVE && field <= DCGM_FI_PROF_NVLINK_RX_BYTES;
}

// One entity resolved against the scenario: a GPU (mig -1) or one of its MIG instances.
struct EntityRef {
  unsigned gpu = 0;
  int mig = -1;
};

// The GPU, GPU instance or compute instance an entity names; nullopt when the scenario has none such
// (or the entity group is another).
std::optional<EntityRef> ResolveEntity(const Simulator& sim, const dcgmGroupEntityPair_t& entity);

// The GPUs DCGM sees: the scenario's, up to DCGM_MAX_NUM_DEVICES.
unsigned VisibleGpus(const Simulator& sim);

// One (entity, field) watch of an engine: each watcher's update interval, and since when it is watched.
struct Watch {
  std::map<dcgmHandle_t, long long> update_us;  // watcher -> updateFreq
  double since = 0;                             // simulated seconds of the first watch
  // The interval the samples are taken at: the shortest any watcher asked for, at least one physics tick.
  double IntervalS() const;
};
using WatchKey = std::tuple<unsigned /*entity group*/, unsigned /*entity id*/, unsigned short /*field*/>;

struct Group {
  std::string name;
  std::vector<dcgmGroupEntityPair_t> entities;
  uint32_t health_systems = 0;  // dcgmHealthSet's systems
  dcgmHandle_t owner = 0;
};

struct FieldGroup {
  std::string name;
  std::vector<unsigned short> fields;
  dcgmHandle_t owner = 0;
};

// One engine: the embedded one (dcgmStartEmbedded) or one run of the node's nv-hostengine.
struct Engine {
  bool manual = false;                // DCGM_OPERATION_MODE_MANUAL: samples only on dcgmUpdateAllFields
  std::optional<double> last_update;  // manual: simulated time of the last dcgmUpdateAllFields
  bool paused = false;                // dcgmProfPause
  uintptr_t next_group = 1;
  uintptr_t next_field_group = 1;
  std::map<dcgmGpuGrp_t, Group> groups;
  std::map<dcgmFieldGrp_t, FieldGroup> field_groups;
  std::map<WatchKey, Watch> watches;

  // The simulated time the engine has sampled up to at `now`: now (AUTO), the last update (MANUAL).
  std::optional<double> SampledUntil(double now) const;
  // Removes everything `owner` created or watched (a connection that ends without persistAfterDisconnect).
  void Forget(dcgmHandle_t owner);
};

// A handle: the embedded engine, or a connection to the host engine.
struct Connection {
  std::shared_ptr<Engine> engine;
  bool host = false;
  unsigned stops_at_connect = 0;  // host: HostEngineStopsBy when it connected
  bool persist = false;           // host: persistAfterDisconnect
  bool broken = false;            // host: the host engine has stopped since (for good)
};

// The library's state between dcgmInit and the last dcgmShutdown.
struct State {
  std::shared_ptr<Simulator> sim;
  int refs = 0;
  // Timestamps: simulated time t is wall0_us + (t - sim0) / speed seconds after the epoch.
  int64_t wall0_us = 0;
  double sim0 = 0;
  double speed = 1;
  std::map<dcgmHandle_t, Connection> connections;
  std::shared_ptr<Engine> embedded;  // while started
  dcgmHandle_t embedded_handle = 0;
  std::shared_ptr<Engine> host;  // the current run of nv-hostengine, made at the first connection to it
  unsigned host_stops = 0;       // HostEngineStopsBy when `host` was made
  // Per GPU: activity integrals at the ticks the profiling fields need (asking the Simulator for a tick
  // before its latest one replays the GPU from t = 0, so they are asked in time order and kept).
  std::vector<std::map<int64_t, ActivityIntegrals>> integrals;
};

extern gpuscope::Mutex g_mu;
extern State g_state GUARDED_BY(g_mu);

// Microseconds since the epoch for simulated time t.
int64_t TimestampUs(double t) REQUIRES(g_mu);

// The connection behind a handle, checked: UNINITIALIZED before dcgmInit, BADPARAM for a handle never
// issued or already released, CONNECTION_NOT_VALID for a host engine connection the host engine's stop
// has broken. `now` is the simulated time of the call.
dcgmReturn_t Lookup(dcgmHandle_t handle, double now, Connection** connection) REQUIRES(g_mu);

// Every engine that is running (the embedded one, the current host engine run).
std::vector<Engine*> RunningEngines() REQUIRES(g_mu);

// The group's entities; NOT_CONFIGURED when the engine has no such group.
dcgmReturn_t GroupEntities(const Engine& engine, dcgmGpuGrp_t group,
                           std::vector<dcgmGroupEntityPair_t>* entities);

// The GPU's activity integrals at physics tick `tick` (cached; see State::integrals).
ActivityIntegrals IntegralsAt(unsigned gpu, int64_t tick) REQUIRES(g_mu);

// Computes, in time order, the integrals every running engine's watches on `gpu` need up to `now`, so
// that later reads are cache hits and the Simulator only ever steps forward. Call it before asking the
// Simulator for the GPU's state at `now`.
void Prefetch(unsigned gpu, double now) REQUIRES(g_mu);

// The GPU's state at `now`, after Prefetch.
GpuState StateNow(unsigned gpu, double now) REQUIRES(g_mu);

}  // namespace gpuscope::sim::dcgm
