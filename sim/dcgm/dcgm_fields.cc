// The stand-in libdcgm.so.4's watches and field values: dcgmWatchFields, dcgmUnwatchFields,
// dcgmUpdateAllFields and dcgmEntitiesGetLatestValues. A profiling field's value is the average over the
// watch's last completed interval (the watch's start plus whole multiples of its update interval), from
// the GPU's activity integrals at the interval's two ends, scaled to the entity's view (the GPU's or one
// MIG instance's, ActivityViewScale), as the NVML stand-in's GPM metrics are.
//
// Thread-safety: every entry point takes g_mu for its whole call.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "sim/dcgm/dcgm_state.h"

namespace gpuscope::sim::dcgm {
namespace {

constexpr size_t kIntegralsKept = 1024;  // per GPU; each watch needs its last two interval ends

int64_t TickOf(double t) { return static_cast<int64_t>(std::floor(std::max(0.0, t) / kTickS + 1e-9)); }

// The last completed interval of a watch by `until`: its two ends in simulated seconds.
struct Interval {
  double start = 0;
  double end = 0;
};
std::optional<Interval> LastInterval(const Watch& watch, double until) {
  const double step = watch.IntervalS();
  const double k = std::floor((until - watch.since) / step + 1e-9);
  if (k < 1) return std::nullopt;  // the first interval has not ended
  const double end = watch.since + k * step;
  return Interval{end - step, end};
}

unsigned short FieldType(unsigned short field) {
  if (field == DCGM_FI_DEV_UUID) return DCGM_FT_STRING;
  if (field >= DCGM_FI_PROF_GR_ENGINE_ACTIVE && field <= DCGM_FI_PROF_PIPE_FP16_ACTIVE) return DCGM_FT_DOUBLE;
  return DCGM_FT_INT64;
}

// DCGM profiles Volta and newer data-centre GPUs; every model of sim/gpu_models.cc is one. A model whose
// name is none of these families (a consumer card, say) would answer PROFILING_NOT_SUPPORTED.
bool ProfilingSupported(const GpuModel& model) {
  for (const char* family : {"V100", "A100", "A800", "A30", "A40", "H100", "H800", "H200", "H20", "GH200",
                             "B100", "B200", "GB200", "L40", "L4", "T4"}) {
    if (model.name.find(family) != std::string::npos) return true;
  }
  return false;
}

// The value of one profiling field from the average rates over an interval (ratios clamped to 0..1).
void SetProfilingValue(unsigned short field, const ActivityIntegrals& rates, dcgmFieldValue_v2& v) {
  auto ratio = [&](double x) { v.value.dbl = std::clamp(x, 0.0, 1.0); };
  auto bytes = [&](double x) { v.value.i64 = static_cast<int64_t>(std::llround(std::max(0.0, x))); };
  switch (field) {
    case DCGM_FI_PROF_GR_ENGINE_ACTIVE:
      return ratio(rates.util);
    case DCGM_FI_PROF_SM_ACTIVE:
      return ratio(rates.sm_active);
    case DCGM_FI_PROF_SM_OCCUPANCY:
      return ratio(rates.occupancy);
    case DCGM_FI_PROF_PIPE_TENSOR_ACTIVE:
      return ratio(rates.tensor);
    case DCGM_FI_PROF_DRAM_ACTIVE:
      return ratio(rates.dram);
    case DCGM_FI_PROF_PIPE_FP64_ACTIVE:
      return ratio(rates.fp64);
    case DCGM_FI_PROF_PIPE_FP32_ACTIVE:
      return ratio(rates.fp32);
    case DCGM_FI_PROF_PIPE_FP16_ACTIVE:
      return ratio(rates.fp16);
    case DCGM_FI_PROF_PCIE_TX_BYTES:
      return bytes(rates.pcie_tx_bytes);
    case DCGM_FI_PROF_PCIE_RX_BYTES:
      return bytes(rates.pcie_rx_bytes);
    case DCGM_FI_PROF_NVLINK_TX_BYTES:
      return bytes(rates.nvlink_tx_bytes);
    case DCGM_FI_PROF_NVLINK_RX_BYTES:
      return bytes(rates.nvlink_rx_bytes);
    default:
      return;
  }
}

void SetBlank(dcgmFieldValue_v2& v) {
  switch (v.fieldType) {
    case DCGM_FT_DOUBLE:
      v.value.dbl = DCGM_FP64_BLANK;
      break;
    case DCGM_FT_STRING:
      std::snprintf(v.value.str, sizeof(v.value.str), "%s", kStringBlank);
      break;
    default:
      v.value.i64 = DCGM_INT64_BLANK;
      break;
  }
}

// One value of dcgmEntitiesGetLatestValues: the entity's field as `engine` has it at simulated time `now`.
void FillValue(const Engine& engine, const dcgmGroupEntityPair_t& entity, unsigned short field,
               unsigned flags, double now, dcgmFieldValue_v2& v) REQUIRES(g_mu) {
  std::memset(&v, 0, sizeof(v));
  v.version = dcgmFieldValue_version2;
  v.entityGroupId = entity.entityGroupId;
  v.entityId = entity.entityId;
  v.fieldId = field;
  v.fieldType = FieldType(field);
  v.ts = TimestampUs(now);
  SetBlank(v);
  Simulator& sim = *g_state.sim;
  const std::optional<EntityRef> ref = ResolveEntity(sim, entity);
  if (!ref) {
    v.status = DCGM_ST_BADPARAM;
    return;
  }
  if (field != DCGM_FI_DEV_UUID && !IsProfilingField(field)) {
    v.status = DCGM_ST_UNKNOWN_FIELD;
    return;
  }
  auto watch = engine.watches.find({entity.entityGroupId, entity.entityId, field});
  const bool watched = watch != engine.watches.end();
  if (field == DCGM_FI_DEV_UUID) {
    // Read at start-up and kept: a GPU instance or compute instance has its GPU's UUID.
    if (!watched && (flags & DCGM_FV_FLAG_LIVE_DATA) == 0) {
      v.status = DCGM_ST_NOT_WATCHED;
      return;
    }
    std::snprintf(v.value.str, sizeof(v.value.str), "%s", sim.Uuid(ref->gpu).c_str());
    v.status = DCGM_ST_OK;
    return;
  }
  // Profiling fields come from the watch's samples only (live data does not apply to them).
  if (!watched) {
    v.status = DCGM_ST_NOT_WATCHED;
    return;
  }
  if (EffectsAt(sim.scenario(), ref->gpu, now).lost) {
    v.status = DCGM_ST_GPU_IS_LOST;
    return;
  }
  v.status = DCGM_ST_OK;  // blank but OK: paused, or no interval has completed yet
  if (engine.paused) return;
  const std::optional<double> until = engine.SampledUntil(now);
  if (!until) return;
  const std::optional<Interval> interval = LastInterval(watch->second, std::min(*until, now));
  if (!interval) return;
  const int64_t first = TickOf(interval->start);
  const int64_t last = TickOf(interval->end);
  if (last <= first) return;
  const ActivityIntegrals from = IntegralsAt(ref->gpu, first);
  const ActivityIntegrals to = IntegralsAt(ref->gpu, last);
  const double scale = ActivityViewScale(sim.scenario().gpus[ref->gpu], ref->mig);
  SetProfilingValue(
      field, ScaledIntegrals(IntervalRates(from, to, static_cast<double>(last - first) * kTickS), scale), v);
  v.ts = TimestampUs(interval->end);
}

// Checks a watch request and collects its (entity, field) pairs: NOT_CONFIGURED for an unknown group,
// BADPARAM for an unknown field group.
dcgmReturn_t WatchTargets(const Engine& engine, dcgmGpuGrp_t group, dcgmFieldGrp_t field_group,
                          std::vector<WatchKey>* targets) {
  std::vector<dcgmGroupEntityPair_t> entities;
  if (dcgmReturn_t r = GroupEntities(engine, group, &entities); r != DCGM_ST_OK) return r;
  auto fields = engine.field_groups.find(field_group);
  if (fields == engine.field_groups.end()) return DCGM_ST_BADPARAM;
  for (const dcgmGroupEntityPair_t& e : entities) {
    for (unsigned short field : fields->second.fields)
      targets->emplace_back(e.entityGroupId, e.entityId, field);
  }
  return DCGM_ST_OK;
}

}  // namespace

double Watch::IntervalS() const {
  long long shortest = update_us.begin()->second;
  for (const auto& [watcher, us] : update_us) shortest = std::min(shortest, us);
  return std::max(static_cast<double>(shortest) / 1e6, kTickS);
}

ActivityIntegrals IntegralsAt(unsigned gpu, int64_t tick) REQUIRES(g_mu) {
  std::map<int64_t, ActivityIntegrals>& cache = g_state.integrals[gpu];
  if (auto it = cache.find(tick); it != cache.end()) return it->second;
  const GpuState state = g_state.sim->StateAt(gpu, static_cast<double>(tick) * kTickS);
  cache[tick] = state.integrals;
  while (cache.size() > kIntegralsKept) cache.erase(cache.begin());
  return state.integrals;
}

void Prefetch(unsigned gpu, double now) REQUIRES(g_mu) {
  std::set<int64_t> ticks;
  for (Engine* engine : RunningEngines()) {
    for (const auto& [key, watch] : engine->watches) {
      const std::optional<EntityRef> ref = ResolveEntity(
          *g_state.sim, {static_cast<dcgm_field_entity_group_t>(std::get<0>(key)), std::get<1>(key)});
      if (!ref || ref->gpu != gpu || !IsProfilingField(std::get<2>(key))) continue;
      // The latest interval by now, whatever the engine's mode: a MANUAL engine's later update reads it.
      if (const std::optional<Interval> interval = LastInterval(watch, now)) {
        ticks.insert(TickOf(interval->start));
        ticks.insert(TickOf(interval->end));
      }
    }
  }
  for (int64_t tick : ticks) IntegralsAt(gpu, tick);
}

GpuState StateNow(unsigned gpu, double now) REQUIRES(g_mu) {
  Prefetch(gpu, now);
  return g_state.sim->StateAt(gpu, now);
}

}  // namespace gpuscope::sim::dcgm

using gpuscope::sim::dcgm::Connection;
using gpuscope::sim::dcgm::Engine;
using gpuscope::sim::dcgm::EntityRef;
using gpuscope::sim::dcgm::FillValue;
using gpuscope::sim::dcgm::g_mu;
using gpuscope::sim::dcgm::g_state;
using gpuscope::sim::dcgm::IsProfilingField;
using gpuscope::sim::dcgm::Lookup;
using gpuscope::sim::dcgm::Prefetch;
using gpuscope::sim::dcgm::ProfilingSupported;
using gpuscope::sim::dcgm::ResolveEntity;
using gpuscope::sim::dcgm::VisibleGpus;
using gpuscope::sim::dcgm::WatchKey;
using gpuscope::sim::dcgm::WatchTargets;

extern "C" {

SIM_DCGM_EXPORT dcgmReturn_t dcgmWatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                             dcgmFieldGrp_t fieldGroupId, long long updateFreq,
                                             double maxKeepAge, int maxKeepSamples) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  const double now = g_state.sim->Now();
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, now, &connection); r != DCGM_ST_OK) return r;
  Engine& engine = *connection->engine;
  std::vector<WatchKey> targets;
  if (dcgmReturn_t r = WatchTargets(engine, groupId, fieldGroupId, &targets); r != DCGM_ST_OK) return r;
  if (updateFreq <= 0 || maxKeepAge < 0 || maxKeepSamples < 0) return DCGM_ST_BADPARAM;
  // All or nothing: a GPU that cannot be profiled refuses the whole request.
  for (const WatchKey& key : targets) {
    if (!IsProfilingField(std::get<2>(key))) continue;
    const std::optional<EntityRef> ref = ResolveEntity(
        *g_state.sim, {static_cast<dcgm_field_entity_group_t>(std::get<0>(key)), std::get<1>(key)});
    if (ref && !ProfilingSupported(*g_state.sim->scenario().gpus[ref->gpu].model))
      return DCGM_ST_PROFILING_NOT_SUPPORTED;
  }
  for (const WatchKey& key : targets) {
    auto [it, inserted] = engine.watches.try_emplace(key);
    if (inserted) it->second.since = now;
    it->second.update_us[pDcgmHandle] = updateFreq;
  }
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                               dcgmFieldGrp_t fieldGroupId) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, g_state.sim->Now(), &connection); r != DCGM_ST_OK) return r;
  Engine& engine = *connection->engine;
  std::vector<WatchKey> targets;
  if (dcgmReturn_t r = WatchTargets(engine, groupId, fieldGroupId, &targets); r != DCGM_ST_OK) return r;
  for (const WatchKey& key : targets) {
    auto it = engine.watches.find(key);
    if (it == engine.watches.end()) continue;
    it->second.update_us.erase(pDcgmHandle);
    if (it->second.update_us.empty()) engine.watches.erase(it);
  }
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t pDcgmHandle, int waitForUpdate) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  const double now = g_state.sim->Now();
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, now, &connection); r != DCGM_ST_OK) return r;
  // AUTO engines sample on their own; a MANUAL one takes its samples now (read later, so kept now).
  if (connection->engine->manual) {
    connection->engine->last_update = now;
    for (unsigned gpu = 0; gpu < VisibleGpus(*g_state.sim); ++gpu) Prefetch(gpu, now);
  }
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t pDcgmHandle,
                                                         dcgmGroupEntityPair_t entities[],
                                                         unsigned int entityCount, unsigned short fields[],
                                                         unsigned int fieldCount, unsigned int flags,
                                                         dcgmFieldValue_v2 values[]) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  const double now = g_state.sim->Now();
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, now, &connection); r != DCGM_ST_OK) return r;
  if (entities == nullptr || fields == nullptr || values == nullptr || entityCount == 0 || fieldCount == 0)
    return DCGM_ST_BADPARAM;
  std::set<unsigned> gpus;
  for (unsigned e = 0; e < entityCount; ++e) {
    if (const std::optional<EntityRef> ref = ResolveEntity(*g_state.sim, entities[e])) gpus.insert(ref->gpu);
  }
  for (unsigned gpu : gpus) Prefetch(gpu, now);
  // Entity-major: values[e * fieldCount + f] is entities[e]'s fields[f].
  for (unsigned e = 0; e < entityCount; ++e) {
    for (unsigned f = 0; f < fieldCount; ++f) {
      FillValue(*connection->engine, entities[e], fields[f], flags, now, values[e * fieldCount + f]);
    }
  }
  return DCGM_ST_OK;
}

}  // extern "C"
