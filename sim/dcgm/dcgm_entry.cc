// The stand-in libdcgm.so.4's C API surface: every entry point of GPUSCOPE_DCGM_FUNCTIONS
// (src/platform/dcgm/dcgm_api.h) plus errorString, answering from the Simulator. Including dcgm_api.h
// makes the compiler check each definition against the agent's declarations. This file holds init and
// shutdown, the engines and their handles (embedded, host engine connections), devices, the MIG
// hierarchy, groups, field groups and profiling pause; the field values are in dcgm_fields.cc, health in
// dcgm_health.cc.
//
// Thread-safety: every entry point may be called from any thread; each takes g_mu for its whole call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/dcgm/dcgm_control.h"
#include "sim/dcgm/dcgm_state.h"

namespace gpuscope::sim::dcgm {

gpuscope::Mutex g_mu;
State g_state;

namespace {

// Handles are never reused, across init/shutdown cycles too, so a stale one is BADPARAM, never another's.
dcgmHandle_t g_next_handle GUARDED_BY(g_mu) = 0x100;

// Simulated seconds per real second, for the timestamps: GPUSCOPE_SIM_SPEED as Simulator::FromEnvironment
// reads it, else the scenario's speed; frozen time (GPUSCOPE_SIM_TIME) maps 1:1.
double SimSpeed(const Scenario& scenario) {
  if (std::getenv("GPUSCOPE_SIM_TIME") != nullptr) return 1;
  if (const char* text = std::getenv("GPUSCOPE_SIM_SPEED"); text != nullptr && *text != '\0') {
    const double speed = std::strtod(text, nullptr);
    if (speed > 0) return speed;
  }
  return scenario.speed;
}

// dcgmMigProfile_t (dcgm_structs.h) of a GPU instance or compute instance profile, by its compute
// slices; a one-slice profile with more memory than the model's smallest is the "revision 2" one
// (1g.20gb on the A100).
unsigned MigProfileId(const GpuModel& model, const MigProfile& profile, bool compute_instance) {
  constexpr unsigned kGpuInstanceSlice7 = 5, kGpuInstanceSlice1Rev2 = 10;       // Slice1..Slice4 are 1..4
  constexpr unsigned kComputeInstanceSlice1 = 30, kComputeInstanceSlice7 = 34;  // Slice1..Slice4: 30..33
  if (compute_instance)
    return profile.slices == 7 ? kComputeInstanceSlice7 : kComputeInstanceSlice1 + profile.slices - 1;
  if (profile.slices == 7) return kGpuInstanceSlice7;
  if (profile.slices == 1) {
    for (const MigProfile& p : model.mig_profiles) {
      if (p.slices == 1 && p.memory_mib < profile.memory_mib) return kGpuInstanceSlice1Rev2;
    }
  }
  return profile.slices;
}

dcgmReturn_t Uninitialized() REQUIRES(g_mu) { return g_state.sim ? DCGM_ST_OK : DCGM_ST_UNINITIALIZED; }

// A new handle for `connection`.
dcgmHandle_t AddConnection(Connection connection) REQUIRES(g_mu) {
  const dcgmHandle_t handle = g_next_handle++;
  g_state.connections.emplace(handle, std::move(connection));
  return handle;
}

// The engine behind a handle (see Lookup), for the calls that need nothing else.
dcgmReturn_t EngineOf(dcgmHandle_t handle, Engine** engine) REQUIRES(g_mu) {
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(handle, g_state.sim->Now(), &connection); r != DCGM_ST_OK) return r;
  *engine = connection->engine.get();
  return DCGM_ST_OK;
}

bool SameEntity(const dcgmGroupEntityPair_t& a, const dcgmGroupEntityPair_t& b) {
  return a.entityGroupId == b.entityGroupId && a.entityId == b.entityId;
}

// The entities of a default group type (dcgmGroupCreate), or nullopt for an unknown type.
std::optional<std::vector<dcgmGroupEntityPair_t>> DefaultEntities(const Simulator& sim,
                                                                  dcgmGroupType_t type) {
  std::vector<dcgmGroupEntityPair_t> gpus, instances, compute_instances;
  for (unsigned g = 0; g < VisibleGpus(sim); ++g) {
    gpus.push_back({DCGM_FE_GPU, g});
    for (unsigned i = 0; i < sim.scenario().gpus[g].mig.size(); ++i) {
      instances.push_back({DCGM_FE_GPU_I, g * kInstancesPerGpu + i});
      compute_instances.push_back({DCGM_FE_GPU_CI, g * kInstancesPerGpu + i});
    }
  }
  switch (type) {
    case DCGM_GROUP_EMPTY:
    case DCGM_GROUP_DEFAULT_NVSWITCHES:  // a simulated node has no NVSwitch entities
      return std::vector<dcgmGroupEntityPair_t>{};
    case DCGM_GROUP_DEFAULT:
      return gpus;
    case DCGM_GROUP_DEFAULT_INSTANCES:
      return instances;
    case DCGM_GROUP_DEFAULT_COMPUTE_INSTANCES:
      return compute_instances;
    case DCGM_GROUP_DEFAULT_EVERYTHING:
      gpus.insert(gpus.end(), instances.begin(), instances.end());
      gpus.insert(gpus.end(), compute_instances.begin(), compute_instances.end());
      return gpus;
  }
  return std::nullopt;
}

// The profiling and identity fields the stand-in knows (dcgm_api.h's DCGM_FI_*).
bool KnownField(unsigned short field) { return field == DCGM_FI_DEV_UUID || IsProfilingField(field); }

constexpr size_t kMaxGroups = 64;             // DCGM_MAX_NUM_GROUPS
constexpr size_t kMaxFieldGroups = 64;        // DCGM_MAX_NUM_FIELD_GROUPS
constexpr int kMaxFieldsPerFieldGroup = 128;  // DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP

}  // namespace

std::optional<EntityRef> ResolveEntity(const Simulator& sim, const dcgmGroupEntityPair_t& entity) {
  switch (entity.entityGroupId) {
    case DCGM_FE_GPU:
      if (entity.entityId >= VisibleGpus(sim)) return std::nullopt;
      return EntityRef{entity.entityId, -1};
    case DCGM_FE_GPU_I:
    case DCGM_FE_GPU_CI: {
      const unsigned gpu = entity.entityId / kInstancesPerGpu;
      const unsigned index = entity.entityId % kInstancesPerGpu;
      if (gpu >= VisibleGpus(sim) || index >= sim.scenario().gpus[gpu].mig.size()) return std::nullopt;
      return EntityRef{gpu, static_cast<int>(index)};
    }
    default:
      return std::nullopt;
  }
}

unsigned VisibleGpus(const Simulator& sim) {
  return std::min<unsigned>(sim.gpu_count(), DCGM_MAX_NUM_DEVICES);
}

int64_t TimestampUs(double t) REQUIRES(g_mu) {
  return g_state.wall0_us + static_cast<int64_t>((t - g_state.sim0) / g_state.speed * 1e6);
}

dcgmReturn_t Lookup(dcgmHandle_t handle, double now, Connection** connection) REQUIRES(g_mu) {
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  auto it = g_state.connections.find(handle);
  if (it == g_state.connections.end()) return DCGM_ST_BADPARAM;
  Connection& c = it->second;
  if (c.host && !c.broken) {
    const Scenario& scenario = g_state.sim->scenario();
    c.broken = HostEngineStopsBy(scenario, now) != c.stops_at_connect || HostEngineDownAt(scenario, now);
  }
  if (c.broken) return DCGM_ST_CONNECTION_NOT_VALID;
  *connection = &c;
  return DCGM_ST_OK;
}

std::vector<Engine*> RunningEngines() REQUIRES(g_mu) {
  std::vector<Engine*> engines;
  if (g_state.embedded) engines.push_back(g_state.embedded.get());
  if (g_state.host) engines.push_back(g_state.host.get());
  return engines;
}

dcgmReturn_t GroupEntities(const Engine& engine, dcgmGpuGrp_t group,
                           std::vector<dcgmGroupEntityPair_t>* entities) {
  auto it = engine.groups.find(group);
  if (it == engine.groups.end()) return DCGM_ST_NOT_CONFIGURED;
  *entities = it->second.entities;
  return DCGM_ST_OK;
}

std::optional<double> Engine::SampledUntil(double now) const {
  if (!manual) return now;
  return last_update;
}

void Engine::Forget(dcgmHandle_t owner) {
  std::erase_if(groups, [&](const auto& entry) { return entry.second.owner == owner; });
  std::erase_if(field_groups, [&](const auto& entry) { return entry.second.owner == owner; });
  for (auto it = watches.begin(); it != watches.end();) {
    it->second.update_us.erase(owner);
    it = it->second.update_us.empty() ? watches.erase(it) : std::next(it);
  }
}

}  // namespace gpuscope::sim::dcgm

using gpuscope::sim::Simulator;
using gpuscope::sim::dcgm::AddConnection;
using gpuscope::sim::dcgm::Connection;
using gpuscope::sim::dcgm::DefaultEntities;
using gpuscope::sim::dcgm::Engine;
using gpuscope::sim::dcgm::EngineOf;
using gpuscope::sim::dcgm::g_mu;
using gpuscope::sim::dcgm::g_state;
using gpuscope::sim::dcgm::kInstancesPerGpu;
using gpuscope::sim::dcgm::kMaxFieldGroups;
using gpuscope::sim::dcgm::kMaxFieldsPerFieldGroup;
using gpuscope::sim::dcgm::kMaxGroups;
using gpuscope::sim::dcgm::KnownField;
using gpuscope::sim::dcgm::MigProfileId;
using gpuscope::sim::dcgm::ResolveEntity;
using gpuscope::sim::dcgm::SameEntity;
using gpuscope::sim::dcgm::SimSpeed;
using gpuscope::sim::dcgm::State;
using gpuscope::sim::dcgm::Uninitialized;
using gpuscope::sim::dcgm::VisibleGpus;

extern "C" {

SIM_DCGM_EXPORT void gpuscopeSimDcgmSetTime(double seconds) {
  gpuscope::MutexLock lock(&g_mu);
  if (g_state.sim) g_state.sim->SetFrozenTime(seconds);
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmInit(void) {
  gpuscope::MutexLock lock(&g_mu);
  if (g_state.refs > 0) {
    ++g_state.refs;
    return DCGM_ST_OK;
  }
  auto created = Simulator::FromEnvironment();
  if (auto* error = std::get_if<std::string>(&created)) {
    std::fprintf(stderr, "gpuscope-sim-dcgm: %s\n", error->c_str());
    return DCGM_ST_INIT_ERROR;
  }
  State fresh;
  fresh.sim = std::move(std::get<std::unique_ptr<Simulator>>(created));
  fresh.refs = 1;
  fresh.sim0 = fresh.sim->Now();
  fresh.wall0_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  fresh.speed = SimSpeed(fresh.sim->scenario());
  fresh.integrals.resize(fresh.sim->gpu_count());
  g_state = std::move(fresh);
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmShutdown(void) {
  gpuscope::MutexLock lock(&g_mu);
  if (g_state.refs == 0) return DCGM_ST_UNINITIALIZED;
  if (--g_state.refs == 0) {
    g_state.sim->Shutdown();
    g_state = State{};  // every engine and handle goes with it
  }
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t* pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  if (dcgmReturn_t r = Uninitialized(); r != DCGM_ST_OK) return r;
  if (pDcgmHandle == nullptr || (opMode != DCGM_OPERATION_MODE_AUTO && opMode != DCGM_OPERATION_MODE_MANUAL))
    return DCGM_ST_BADPARAM;
  // One embedded engine per process, as in DCGM: starting it again hands out the running one.
  if (!g_state.embedded) {
    g_state.embedded = std::make_shared<Engine>();
    g_state.embedded->manual = opMode == DCGM_OPERATION_MODE_MANUAL;
    g_state.embedded_handle = AddConnection({.engine = g_state.embedded});
  }
  *pDcgmHandle = g_state.embedded_handle;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  if (dcgmReturn_t r = Uninitialized(); r != DCGM_ST_OK) return r;
  if (!g_state.embedded) return DCGM_ST_UNINITIALIZED;  // DCGM's answer when none runs
  if (pDcgmHandle != g_state.embedded_handle) return DCGM_ST_BADPARAM;
  g_state.connections.erase(pDcgmHandle);
  g_state.embedded.reset();
  g_state.embedded_handle = 0;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmConnect_v2(const char* ipAddress, dcgmConnectV2Params_t* connectParams,
                                            dcgmHandle_t* pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  if (dcgmReturn_t r = Uninitialized(); r != DCGM_ST_OK) return r;
  if (ipAddress == nullptr || connectParams == nullptr || pDcgmHandle == nullptr) return DCGM_ST_BADPARAM;
  if (connectParams->version != dcgmConnectV2Params_version) return DCGM_ST_VER_MISMATCH;
  const std::optional<gpuscope::sim::DcgmEndpoint> endpoint =
      gpuscope::sim::ParseDcgmAddress(ipAddress, connectParams->addressIsUnixSocket != 0);
  if (!endpoint) return DCGM_ST_BADPARAM;
  const gpuscope::sim::Scenario& scenario = g_state.sim->scenario();
  const double now = g_state.sim->Now();
  // Nothing listens there: no host engine on the node, another address, or nv-hostengine stopped.
  if (!scenario.dcgm.hostengine || *endpoint != scenario.dcgm.endpoint ||
      gpuscope::sim::HostEngineDownAt(scenario, now)) {
    return DCGM_ST_CONNECTION_NOT_VALID;
  }
  const unsigned stops = gpuscope::sim::HostEngineStopsBy(scenario, now);
  if (!g_state.host || g_state.host_stops != stops) {
    g_state.host = std::make_shared<Engine>();  // a fresh run: no groups, watches or pause of the last one
    g_state.host_stops = stops;
  }
  *pDcgmHandle = AddConnection({.engine = g_state.host,
                                .host = true,
                                .stops_at_connect = stops,
                                .persist = connectParams->persistAfterDisconnect != 0,
                                .broken = false});
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  if (dcgmReturn_t r = Uninitialized(); r != DCGM_ST_OK) return r;
  auto it = g_state.connections.find(pDcgmHandle);
  if (it == g_state.connections.end() || !it->second.host) return DCGM_ST_BADPARAM;
  // A broken connection is only released: the host engine it knew is gone.
  Connection& c = it->second;
  if (!c.broken && !c.persist && c.engine == g_state.host) c.engine->Forget(pDcgmHandle);
  g_state.connections.erase(it);
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t pDcgmHandle,
                                                        unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES],
                                                        int* count) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  if (gpuIdList == nullptr || count == nullptr) return DCGM_ST_BADPARAM;
  const unsigned n = VisibleGpus(*g_state.sim);
  for (unsigned g = 0; g < n; ++g) gpuIdList[g] = g;
  *count = static_cast<int>(n);
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t dcgmHandle,
                                                         dcgmMigHierarchy_v2* hierarchy) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(dcgmHandle, &engine); r != DCGM_ST_OK) return r;
  if (hierarchy == nullptr) return DCGM_ST_BADPARAM;
  if (hierarchy->version != dcgmMigHierarchy_version2) return DCGM_ST_VER_MISMATCH;
  const Simulator& sim = *g_state.sim;
  hierarchy->count = 0;
  for (unsigned g = 0; g < VisibleGpus(sim); ++g) {
    const gpuscope::sim::GpuConfig& gpu = sim.scenario().gpus[g];
    const std::string uuid = sim.Uuid(g);
    for (unsigned i = 0; i < gpu.mig.size(); ++i) {
      const gpuscope::sim::MigInstance& inst = gpu.mig[i];
      const dcgm_field_eid_t id = g * kInstancesPerGpu + i;
      for (bool compute : {false, true}) {
        dcgmMigHierarchyInfo_v2& entry = hierarchy->entityList[hierarchy->count++];
        entry = {};
        entry.entity = {compute ? DCGM_FE_GPU_CI : DCGM_FE_GPU_I, id};
        entry.parent =
            compute ? dcgmGroupEntityPair_t{DCGM_FE_GPU_I, id} : dcgmGroupEntityPair_t{DCGM_FE_GPU, g};
        std::snprintf(entry.info.gpuUuid, sizeof(entry.info.gpuUuid), "%s", uuid.c_str());
        entry.info.nvmlGpuIndex = g;
        entry.info.nvmlInstanceId = inst.gpu_instance_id;
        entry.info.nvmlComputeInstanceId = compute ? inst.compute_instance_id : 0xFFFFFFFFu;
        entry.info.nvmlMigProfileId = MigProfileId(*gpu.model, *inst.profile, compute);
        entry.info.nvmlProfileSlices = inst.profile->slices;
      }
    }
  }
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmGroupCreate(dcgmHandle_t pDcgmHandle, dcgmGroupType_t type,
                                             const char* groupName, dcgmGpuGrp_t* pDcgmGrpId) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  if (groupName == nullptr || pDcgmGrpId == nullptr || std::strlen(groupName) >= DCGM_MAX_STR_LENGTH)
    return DCGM_ST_BADPARAM;
  std::optional<std::vector<dcgmGroupEntityPair_t>> entities = DefaultEntities(*g_state.sim, type);
  if (!entities) return DCGM_ST_BADPARAM;
  if (engine->groups.size() >= kMaxGroups) return DCGM_ST_MAX_LIMIT;
  const dcgmGpuGrp_t id = engine->next_group++;
  engine->groups[id] = {
      .name = groupName, .entities = std::move(*entities), .health_systems = 0, .owner = pDcgmHandle};
  *pDcgmGrpId = id;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  // Watches set through the group stay, as in DCGM: they belong to the entities, not the group.
  return engine->groups.erase(groupId) != 0 ? DCGM_ST_OK : DCGM_ST_NOT_CONFIGURED;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                                dcgm_field_entity_group_t entityGroupId,
                                                dcgm_field_eid_t entityId) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  auto it = engine->groups.find(groupId);
  if (it == engine->groups.end()) return DCGM_ST_NOT_CONFIGURED;
  const dcgmGroupEntityPair_t entity{entityGroupId, entityId};
  if (!ResolveEntity(*g_state.sim, entity)) return DCGM_ST_BADPARAM;
  std::vector<dcgmGroupEntityPair_t>& entities = it->second.entities;
  for (const dcgmGroupEntityPair_t& e : entities) {
    if (SameEntity(e, entity)) return DCGM_ST_BADPARAM;  // already in the group
  }
  if (entities.size() >= DCGM_GROUP_MAX_ENTITIES_V2) return DCGM_ST_MAX_LIMIT;
  entities.push_back(entity);
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t dcgmHandle, int numFieldIds,
                                                  const unsigned short* fieldIds, const char* fieldGroupName,
                                                  dcgmFieldGrp_t* dcgmFieldGroupId) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(dcgmHandle, &engine); r != DCGM_ST_OK) return r;
  if (fieldIds == nullptr || fieldGroupName == nullptr || dcgmFieldGroupId == nullptr || numFieldIds <= 0 ||
      numFieldIds > kMaxFieldsPerFieldGroup || std::strlen(fieldGroupName) >= DCGM_MAX_STR_LENGTH) {
    return DCGM_ST_BADPARAM;
  }
  std::vector<unsigned short> fields(fieldIds, fieldIds + numFieldIds);
  for (unsigned short field : fields) {
    if (!KnownField(field)) return DCGM_ST_BADPARAM;
  }
  // Field group names are unique per engine in DCGM: a second one of the same name is refused.
  for (const auto& [id, group] : engine->field_groups) {
    if (group.name == fieldGroupName) return DCGM_ST_DUPLICATE_KEY;
  }
  if (engine->field_groups.size() >= kMaxFieldGroups) return DCGM_ST_MAX_LIMIT;
  const dcgmFieldGrp_t id = engine->next_field_group++;
  engine->field_groups[id] = {.name = fieldGroupName, .fields = std::move(fields), .owner = dcgmHandle};
  *dcgmFieldGroupId = id;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t dcgmHandle, dcgmFieldGrp_t dcgmFieldGroupId) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(dcgmHandle, &engine); r != DCGM_ST_OK) return r;
  return engine->field_groups.erase(dcgmFieldGroupId) != 0 ? DCGM_ST_OK : DCGM_ST_BADPARAM;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmProfPause(dcgmHandle_t pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  engine->paused = true;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmProfResume(dcgmHandle_t pDcgmHandle) {
  gpuscope::MutexLock lock(&g_mu);
  Engine* engine = nullptr;
  if (dcgmReturn_t r = EngineOf(pDcgmHandle, &engine); r != DCGM_ST_OK) return r;
  engine->paused = false;
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT const char* errorString(dcgmReturn_t result) {
  switch (result) {
    case DCGM_ST_OK:
      return "Success";
    case DCGM_ST_BADPARAM:
      return "A parameter passed to the function was not valid";
    case DCGM_ST_GENERIC_ERROR:
      return "An unspecified error occurred";
    case DCGM_ST_MEMORY:
      return "Out of memory";
    case DCGM_ST_NOT_CONFIGURED:
      return "The group or setting is not configured";
    case DCGM_ST_NOT_SUPPORTED:
      return "The operation is not supported";
    case DCGM_ST_INIT_ERROR:
      return "DCGM could not be initialized";
    case DCGM_ST_NVML_ERROR:
      return "An NVML call failed";
    case DCGM_ST_PENDING:
      return "The object is still being set up";
    case DCGM_ST_UNINITIALIZED:
      return "DCGM has not been initialized (call dcgmInit first)";
    case DCGM_ST_TIMEOUT:
      return "The request timed out";
    case DCGM_ST_VER_MISMATCH:
      return "The structure's version does not match the library's";
    case DCGM_ST_UNKNOWN_FIELD:
      return "The field id is not known";
    case DCGM_ST_NO_DATA:
      return "No data is available";
    case DCGM_ST_STALE_DATA:
      return "The data is stale";
    case DCGM_ST_NOT_WATCHED:
      return "The field is not being watched";
    case DCGM_ST_NO_PERMISSION:
      return "Permission denied";
    case DCGM_ST_GPU_IS_LOST:
      return "The GPU is lost (fallen off the bus)";
    case DCGM_ST_RESET_REQUIRED:
      return "The GPU needs a reset";
    case DCGM_ST_FUNCTION_NOT_FOUND:
      return "The function was not found in the library";
    case DCGM_ST_CONNECTION_NOT_VALID:
      return "The connection to the host engine is not valid";
    case DCGM_ST_GPU_NOT_SUPPORTED:
      return "This GPU is not supported by DCGM";
    case DCGM_ST_GROUP_INCOMPATIBLE:
      return "The GPUs of the group are not all alike";
    case DCGM_ST_MAX_LIMIT:
      return "A maximum number of objects has been reached";
    case DCGM_ST_LIBRARY_NOT_FOUND:
      return "A needed library was not found";
    case DCGM_ST_DUPLICATE_KEY:
      return "An object of that name or key exists already";
    case DCGM_ST_REQUIRES_ROOT:
      return "The operation needs root";
    case DCGM_ST_INSUFFICIENT_SIZE:
      return "The buffer is too small";
    case DCGM_ST_FIELD_UNSUPPORTED_BY_API:
      return "This call does not support that field";
    case DCGM_ST_MODULE_NOT_LOADED:
      return "A DCGM module could not be loaded";
    case DCGM_ST_IN_USE:
      return "The resource is in use";
    case DCGM_ST_GROUP_IS_EMPTY:
      return "The group has no entities";
    case DCGM_ST_PROFILING_NOT_SUPPORTED:
      return "Profiling is not supported on this GPU";
    case DCGM_ST_PROFILING_LIBRARY_ERROR:
      return "The profiling library returned an error";
    case DCGM_ST_PROFILING_MULTI_PASS:
      return "These profiling fields cannot be collected together in one pass";
    case DCGM_ST_INSUFFICIENT_DRIVER_VERSION:
      return "The driver is too old for this operation";
    case DCGM_ST_INSTANCE_NOT_FOUND:
      return "No such GPU instance";
    case DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND:
      return "No such compute instance";
    case DCGM_ST_PAUSED:
      return "The host engine is paused";
    case DCGM_ST_ALREADY_INITIALIZED:
      return "Already initialized";
    case DCGM_ST_NVML_NOT_LOADED:
      return "NVML is not loaded";
    case DCGM_ST_NVML_DRIVER_TIMEOUT:
      return "The driver timed out";
  }
  return "Unknown error";
}

}  // extern "C"
