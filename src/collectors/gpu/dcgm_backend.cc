#include "src/collectors/gpu/dcgm_backend.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "src/core/log.h"
#include "src/node/profiling_pause.h"
#include "src/platform/dcgm/dcgm_library.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

// The profiling fields, in the order values_ holds them, with the GpmMetric each fills.
struct ProfilingField {
  unsigned short id;
  GpmMetric metric;
};
constexpr ProfilingField kProfilingFields[] = {
    {DCGM_FI_PROF_GR_ENGINE_ACTIVE, GpmMetric::kGraphicsUtil},
    {DCGM_FI_PROF_SM_ACTIVE, GpmMetric::kSmUtil},
    {DCGM_FI_PROF_SM_OCCUPANCY, GpmMetric::kSmOccupancy},
    {DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, GpmMetric::kAnyTensorUtil},
    {DCGM_FI_PROF_DRAM_ACTIVE, GpmMetric::kDramBwUtil},
    {DCGM_FI_PROF_PIPE_FP64_ACTIVE, GpmMetric::kFp64Util},
    {DCGM_FI_PROF_PIPE_FP32_ACTIVE, GpmMetric::kFp32Util},
    {DCGM_FI_PROF_PIPE_FP16_ACTIVE, GpmMetric::kFp16Util},
    {DCGM_FI_PROF_PCIE_TX_BYTES, GpmMetric::kPcieTxPerSec},
    {DCGM_FI_PROF_PCIE_RX_BYTES, GpmMetric::kPcieRxPerSec},
    {DCGM_FI_PROF_NVLINK_TX_BYTES, GpmMetric::kNvlinkTxPerSec},
    {DCGM_FI_PROF_NVLINK_RX_BYTES, GpmMetric::kNvlinkRxPerSec},
};
constexpr size_t kFieldCount = std::size(kProfilingFields);

constexpr DcgmHealthSystem kSystems[] = {DcgmHealthSystem::kPcie,    DcgmHealthSystem::kMemory,
                                         DcgmHealthSystem::kInforom, DcgmHealthSystem::kThermal,
                                         DcgmHealthSystem::kPower,   DcgmHealthSystem::kNvlink};
static_assert(std::size(kSystems) == kDcgmHealthSystemCount);

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A value DCGM has (status OK, not one of the blank markers), as a double.
bool ValueOf(const dcgmFieldValue_v2& v, double* out) {
  if (v.status != DCGM_ST_OK) return false;
  if (v.fieldType == DCGM_FT_DOUBLE) {
    if (v.value.dbl >= DCGM_FP64_BLANK || v.value.dbl < 0) return false;
    *out = v.value.dbl;
    return true;
  }
  if (v.fieldType == DCGM_FT_INT64) {
    if (v.value.i64 >= DCGM_INT64_BLANK || v.value.i64 < 0) return false;
    *out = static_cast<double>(v.value.i64);
    return true;
  }
  return false;
}

std::string StringOf(const dcgmFieldValue_v2& v) {
  if (v.status != DCGM_ST_OK || v.fieldType != DCGM_FT_STRING) return "";
  return std::string(v.value.str, strnlen(v.value.str, sizeof(v.value.str)));
}

std::string_view ModeName(DcgmMode mode) {
  switch (mode) {
    case DcgmMode::kEmbedded:
      return "embedded";
    case DcgmMode::kHostengine:
      return "hostengine";
    case DcgmMode::kAuto:
      break;
  }
  return "auto";
}

}  // namespace

std::string_view DcgmHealthSystemName(DcgmHealthSystem system) {
  switch (system) {
    case DcgmHealthSystem::kPcie:
      return "pcie";
    case DcgmHealthSystem::kMemory:
      return "memory";
    case DcgmHealthSystem::kInforom:
      return "inforom";
    case DcgmHealthSystem::kThermal:
      return "thermal";
    case DcgmHealthSystem::kPower:
      return "power";
    case DcgmHealthSystem::kNvlink:
      return "nvlink";
    case DcgmHealthSystem::kCount:
      break;
  }
  return "";
}

std::optional<DcgmHealthSystem> ParseDcgmHealthSystem(std::string_view word) {
  for (const DcgmHealthSystem system : kSystems) {
    if (word == DcgmHealthSystemName(system)) return system;
  }
  return std::nullopt;
}

dcgmHealthSystems_t DcgmHealthSystemBit(DcgmHealthSystem system) {
  switch (system) {
    case DcgmHealthSystem::kPcie:
      return DCGM_HEALTH_WATCH_PCIE;
    case DcgmHealthSystem::kMemory:
      return DCGM_HEALTH_WATCH_MEM;
    case DcgmHealthSystem::kInforom:
      return DCGM_HEALTH_WATCH_INFOROM;
    case DcgmHealthSystem::kThermal:
      return DCGM_HEALTH_WATCH_THERMAL;
    case DcgmHealthSystem::kPower:
      return DCGM_HEALTH_WATCH_POWER;
    case DcgmHealthSystem::kNvlink:
      return DCGM_HEALTH_WATCH_NVLINK;
    case DcgmHealthSystem::kCount:
      break;
  }
  return static_cast<dcgmHealthSystems_t>(0);
}

DcgmBackend::DcgmBackend(DcgmBackendOptions options, IncidentObserver on_incident)
    : options_(std::move(options)), on_incident_(std::move(on_incident)) {
  for (const ProfilingField& field : kProfilingFields) field_ids_.push_back(field.id);
  MutexLock lock(&mu_);
  status_.mode = std::string(ModeName(options_.mode));
}

DcgmBackend::~DcgmBackend() { Stop(); }

void DcgmBackend::Start() {
  MutexLock lifecycle(&lifecycle_mu_);
  if (thread_.joinable() || stopped_) return;
  if (options_.pause != nullptr) {
    options_.pause->AttachDcgm([this] { stop_cv_.NotifyAll(); });
  }
  thread_ = std::thread([this] { Run(); });
}

void DcgmBackend::Stop() {
  MutexLock lifecycle(&lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (options_.pause != nullptr) options_.pause->AttachDcgm(nullptr);
  {
    MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  stop_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  // The thread has ended: its members are this thread's now.
  if (connected_) Disconnect("the agent stops");
  if (initialized_) dcgm_->dcgmShutdown();
  initialized_ = false;
}

void DcgmBackend::Run() {
  while (true) {
    const Clock::time_point now = Clock::now();
    Cycle(now);
    MutexLock lock(&stop_mu_);
    if (stopping_) return;
    stop_cv_.WaitUntil(&stop_mu_, now + options_.interval);
    if (stopping_) return;
  }
}

void DcgmBackend::Cycle(Clock::time_point now) {
  if (dcgm_ == nullptr) {
    if (now < next_attempt_) return;
    next_attempt_ = now + std::chrono::seconds(60);  // a library is rarely installed under a running agent
    std::shared_ptr<DcgmLibrary> library;
    const Status status = DcgmLibrary::Open(options_.libraries, &library);
    if (!status.ok()) {
      if (!logged_missing_) {
        Log(LogLevel::kInfo,
            "DCGM is not installed: its profiling fields and health watches are not reported",
            {{"collector", "gpu"}, {"error", status.message()}});
        logged_missing_ = true;
      }
      return;
    }
    dcgm_ = std::move(library);
    next_attempt_ = now;
    MutexLock lock(&mu_);
    status_.library_loaded = true;
    status_.library = dcgm_->path();
  }
  if (!initialized_) {
    const dcgmReturn_t r = dcgm_->dcgmInit();
    if (r != DCGM_ST_OK) {
      Log(LogLevel::kWarn, "dcgmInit failed", {{"collector", "gpu"}, {"error", dcgm_->ErrorString(r)}});
      next_attempt_ = now + options_.retry_interval;
      return;
    }
    initialized_ = true;
  }
  if (!connected_) {
    if (now < next_attempt_) {
      ApplyPause();  // reports "not connected" for a pause asked meanwhile
      return;
    }
    next_attempt_ = now + options_.retry_interval;
    if (!Connect()) {
      ApplyPause();
      return;
    }
    next_health_ = now;
  }
  ApplyPause();
  if (connected_) ReadProfiling();
  if (connected_ && health_set_ && now >= next_health_) {
    next_health_ = now + options_.health_interval;
    CheckHealth();
  }
}

bool DcgmBackend::Connect() {
  const DcgmMode mode = decided_.value_or(options_.mode);
  dcgmReturn_t r = DCGM_ST_CONNECTION_NOT_VALID;
  bool embedded = false;
  std::string error;
  if (mode == DcgmMode::kHostengine || mode == DcgmMode::kAuto) {
    dcgmConnectV2Params_t params{};
    params.version = dcgmConnectV2Params_version;
    params.persistAfterDisconnect = 0;  // the host engine drops our watches and groups when we go
    params.timeoutMs = static_cast<unsigned int>(options_.connect_timeout.count());
    std::string address = options_.address;
    if (address.starts_with("unix:")) address = address.substr(5);
    params.addressIsUnixSocket = address.starts_with('/') ? 1 : 0;
    r = dcgm_->dcgmConnect_v2(address.c_str(), &params, &handle_);
    if (r != DCGM_ST_OK) error = "nv-hostengine at " + options_.address + ": " + dcgm_->ErrorString(r);
  }
  if (r != DCGM_ST_OK && mode != DcgmMode::kHostengine) {
    r = dcgm_->dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &handle_);
    embedded = true;
    if (r != DCGM_ST_OK)
      error += (error.empty() ? "" : "; ") + std::string("embedded: ") + dcgm_->ErrorString(r);
  }
  if (r != DCGM_ST_OK) {
    Log(LogLevel::kWarn, "cannot reach DCGM; retrying", {{"collector", "gpu"}, {"error", error}});
    return false;
  }
  connected_ = true;
  embedded_ = embedded;
  if (mode == DcgmMode::kAuto) decided_ = embedded ? DcgmMode::kEmbedded : DcgmMode::kHostengine;
  pause_applied_ = false;  // a new host engine (or a restarted one) is not paused
  if (!Setup()) {
    if (connected_) Disconnect("setting up DCGM failed");
    return false;
  }
  {
    MutexLock lock(&mu_);
    status_.connected = true;
    status_.mode = std::string(ModeName(embedded ? DcgmMode::kEmbedded : DcgmMode::kHostengine));
    ++status_.connects_total;
  }
  Log(LogLevel::kInfo, "DCGM connected",
      {{"collector", "gpu"},
       {"mode", embedded ? "embedded" : "hostengine"},
       {"address", embedded ? "" : options_.address},
       {"profiling", profiling_watched_ ? "watched" : "unavailable"},
       {"health", health_set_ ? "watched" : "off"}});
  return true;
}

bool DcgmBackend::Setup() {
  unsigned int ids[DCGM_MAX_NUM_DEVICES] = {};
  int count = 0;
  if (!Ok(dcgm_->dcgmGetAllSupportedDevices(handle_, ids, &count), "dcgmGetAllSupportedDevices"))
    return false;
  count = std::min(count, DCGM_MAX_NUM_DEVICES);

  // GPU UUIDs (live: nothing needs to be watched for them).
  std::vector<dcgmGroupEntityPair_t> gpus(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) gpus[static_cast<size_t>(i)] = {DCGM_FE_GPU, ids[i]};
  std::vector<dcgmFieldValue_v2> uuid_values(gpus.size());
  unsigned short uuid_field = DCGM_FI_DEV_UUID;
  if (!gpus.empty() &&
      !Ok(dcgm_->dcgmEntitiesGetLatestValues(handle_, gpus.data(), static_cast<unsigned int>(gpus.size()),
                                             &uuid_field, 1, DCGM_FV_FLAG_LIVE_DATA, uuid_values.data()),
          "dcgmEntitiesGetLatestValues(DCGM_FI_DEV_UUID)")) {
    return false;
  }
  std::vector<Entity> entities;
  std::vector<GpuHealthSlot> health;
  for (size_t i = 0; i < gpus.size(); ++i) {
    Entity e;
    e.pair = gpus[i];
    e.uuid = StringOf(uuid_values[i]);
    if (e.uuid.empty()) continue;
    GpuHealthSlot slot;
    slot.gpu_id = gpus[i].entityId;
    slot.uuid = e.uuid;
    health.push_back(std::move(slot));
    entities.push_back(std::move(e));
  }
  // MIG GPU instances: dcgm-exporter reports the profiling fields per GPU instance.
  auto hierarchy = std::make_unique<dcgmMigHierarchy_v2>();
  hierarchy->version = dcgmMigHierarchy_version2;
  if (dcgm_->dcgmGetGpuInstanceHierarchy(handle_, hierarchy.get()) == DCGM_ST_OK) {
    for (unsigned int i = 0; i < hierarchy->count && i < DCGM_MAX_HIERARCHY_INFO; ++i) {
      const dcgmMigHierarchyInfo_v2& info = hierarchy->entityList[i];
      if (info.entity.entityGroupId != DCGM_FE_GPU_I) continue;
      Entity e;
      e.pair = info.entity;
      e.uuid = std::string(info.info.gpuUuid, strnlen(info.info.gpuUuid, sizeof(info.info.gpuUuid)));
      e.gpu_instance_id = info.info.nvmlInstanceId;
      entities.push_back(std::move(e));
    }
  }

  if (!Ok(dcgm_->dcgmGroupCreate(handle_, DCGM_GROUP_EMPTY, "gpuscope", &group_), "dcgmGroupCreate")) {
    return false;
  }
  pairs_.clear();
  for (const Entity& e : entities) {
    if (!Ok(dcgm_->dcgmGroupAddEntity(handle_, group_, e.pair.entityGroupId, e.pair.entityId),
            "dcgmGroupAddEntity")) {
      return false;
    }
    pairs_.push_back(e.pair);
  }
  if (!Ok(dcgm_->dcgmFieldGroupCreate(handle_, static_cast<int>(kFieldCount), field_ids_.data(),
                                      "gpuscope_profiling", &field_group_),
          "dcgmFieldGroupCreate")) {
    return false;
  }
  const long long period_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.interval).count();
  const double keep_s = std::max(10.0, 5 * std::chrono::duration<double>(options_.interval).count());
  const dcgmReturn_t watch = dcgm_->dcgmWatchFields(handle_, group_, field_group_, period_us, keep_s, 0);
  if (!connected_) return false;
  profiling_watched_ = watch == DCGM_ST_OK;
  if (!profiling_watched_ && !logged_profiling_) {
    Log(LogLevel::kWarn, "DCGM cannot watch the profiling fields: DCGM_FI_PROF_* come from GPM only",
        {{"collector", "gpu"}, {"error", dcgm_->ErrorString(watch)}});
    logged_profiling_ = true;
  }
  if (watch == DCGM_ST_CONNECTION_NOT_VALID) return Ok(watch, "dcgmWatchFields");
  values_.assign(pairs_.size() * kFieldCount, dcgmFieldValue_v2{});

  uint32_t systems = 0;
  for (const DcgmHealthSystem s : kSystems) {
    if (options_.health[static_cast<size_t>(s)]) systems |= DcgmHealthSystemBit(s);
  }
  health_set_ = false;
  if (systems != 0 && !health.empty()) {
    if (!Ok(dcgm_->dcgmGroupCreate(handle_, DCGM_GROUP_EMPTY, "gpuscope_health", &health_group_),
            "dcgmGroupCreate")) {
      return false;
    }
    for (const GpuHealthSlot& slot : health) {
      if (!Ok(dcgm_->dcgmGroupAddEntity(handle_, health_group_, DCGM_FE_GPU, slot.gpu_id),
              "dcgmGroupAddEntity"))
        return false;
    }
    const dcgmReturn_t r =
        dcgm_->dcgmHealthSet(handle_, health_group_, static_cast<dcgmHealthSystems_t>(systems));
    if (!connected_) return false;
    health_set_ = r == DCGM_ST_OK;
    if (!health_set_) {
      Log(LogLevel::kWarn, "dcgmHealthSet failed: no DCGM health watches",
          {{"collector", "gpu"}, {"error", dcgm_->ErrorString(r)}});
    }
    if (health_response_ == nullptr) health_response_ = std::make_unique<dcgmHealthResponse_t>();
  }
  MutexLock lock(&mu_);
  // Counts of incidents survive a reconnection (they are counters); results start afresh. So do the
  // incidents the last check before it reported: a restarted host engine reports them again, and they
  // are not new (counting them again would repeat their dcgm_health events).
  for (GpuHealthSlot& slot : health) {
    for (const GpuHealthSlot& old : health_) {
      if (old.uuid != slot.uuid) continue;
      slot.health.warnings_total = old.health.warnings_total;
      slot.health.failures_total = old.health.failures_total;
      slot.open = old.open;
    }
  }
  entities_ = std::move(entities);
  health_ = std::move(health);
  return true;
}

void DcgmBackend::Disconnect(const std::string& why) {
  if (!embedded_ && why != "the agent stops") {
    Log(LogLevel::kWarn, "lost the connection to nv-hostengine; reconnecting",
        {{"collector", "gpu"}, {"address", options_.address}, {"why", why}});
  }
  // Groups and watches go with the connection (persistAfterDisconnect 0) or the embedded engine.
  if (embedded_)
    dcgm_->dcgmStopEmbedded(handle_);
  else
    dcgm_->dcgmDisconnect(handle_);
  connected_ = false;
  profiling_watched_ = false;
  health_set_ = false;
  pause_applied_ = false;
  handle_ = 0;
  MutexLock lock(&mu_);
  status_.connected = false;
  for (Entity& e : entities_) e.values = GpmValues{};
  for (GpuHealthSlot& slot : health_) slot.checked = false;
}

bool DcgmBackend::Ok(dcgmReturn_t r, std::string_view call) {
  if (r == DCGM_ST_OK) return true;
  if (r == DCGM_ST_CONNECTION_NOT_VALID && connected_) {
    Disconnect(std::string(call) + ": " + dcgm_->ErrorString(r));
  } else {
    Log(LogLevel::kDebug, "DCGM call failed",
        {{"collector", "gpu"}, {"call", call}, {"error", dcgm_->ErrorString(r)}});
  }
  return false;
}

void DcgmBackend::ApplyPause() {
  if (options_.pause == nullptr) return;
  const ProfilingPauseState state = options_.pause->State();
  if (!connected_) {
    options_.pause->SetDcgmStatus(
        state.paused ? "not connected: the pause is applied when DCGM is back" : "not connected",
        state.generation);
    return;
  }
  if (state.paused == pause_applied_) {
    options_.pause->SetDcgmStatus(state.paused ? "paused" : "resumed", state.generation);
    return;
  }
  const dcgmReturn_t r = state.paused ? dcgm_->dcgmProfPause(handle_) : dcgm_->dcgmProfResume(handle_);
  if (r == DCGM_ST_OK) {
    pause_applied_ = state.paused;
    Log(LogLevel::kInfo, state.paused ? "DCGM profiling paused" : "DCGM profiling resumed",
        {{"collector", "gpu"}, {"reason", state.reason}});
    options_.pause->SetDcgmStatus(state.paused ? "paused" : "resumed", state.generation);
    return;
  }
  const std::string error =
      std::string(state.paused ? "dcgmProfPause" : "dcgmProfResume") + ": " + dcgm_->ErrorString(r);
  options_.pause->SetDcgmStatus(error, state.generation);
  Ok(r, state.paused ? "dcgmProfPause" : "dcgmProfResume");
}

void DcgmBackend::ReadProfiling() {
  if (!profiling_watched_ || pairs_.empty()) return;
  const dcgmReturn_t r =
      dcgm_->dcgmEntitiesGetLatestValues(handle_, pairs_.data(), static_cast<unsigned int>(pairs_.size()),
                                         field_ids_.data(), kFieldCount, 0, values_.data());
  if (!Ok(r, "dcgmEntitiesGetLatestValues")) return;
  // A value older than three intervals (at least 5 s) is stale: DCGM stopped updating it.
  const int64_t oldest =
      NowMicros() -
      std::max<int64_t>(5'000'000,
                        3 * std::chrono::duration_cast<std::chrono::microseconds>(options_.interval).count());
  MutexLock lock(&mu_);
  for (size_t e = 0; e < entities_.size() && e < pairs_.size(); ++e) {
    Entity& entity = entities_[e];
    GpmValues values;
    int64_t newest = 0;
    bool any = false;
    for (size_t f = 0; f < kFieldCount; ++f) {
      const dcgmFieldValue_v2& v = values_[e * kFieldCount + f];
      double value = 0;
      if (v.ts < oldest || !ValueOf(v, &value)) continue;
      const size_t m = static_cast<size_t>(kProfilingFields[f].metric);
      values.value[m] = value;
      values.present[m] = true;
      newest = std::max(newest, v.ts);
      any = true;
    }
    values.valid = any;
    entity.values = values;
    entity.ts_us = newest;
  }
}

void DcgmBackend::CheckHealth() {
  dcgmHealthResponse_t& response = *health_response_;
  response.version = dcgmHealthResponse_version;
  response.incidentCount = 0;
  if (!Ok(dcgm_->dcgmHealthCheck(handle_, health_group_, &response), "dcgmHealthCheck")) return;
  std::vector<DcgmIncident> fresh;
  {
    MutexLock lock(&mu_);
    for (GpuHealthSlot& slot : health_) {
      for (const DcgmHealthSystem s : kSystems) {
        slot.health.result[static_cast<size_t>(s)] = options_.health[static_cast<size_t>(s)] ? 0 : -1;
      }
      std::vector<std::pair<int, unsigned int>> open;
      for (unsigned int i = 0; i < response.incidentCount && i < DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2; ++i) {
        const dcgmIncidentInfo_t& incident = response.incidents[i];
        if (incident.entityInfo.entityGroupId != DCGM_FE_GPU || incident.entityInfo.entityId != slot.gpu_id)
          continue;
        for (const DcgmHealthSystem s : kSystems) {
          if (incident.system != DcgmHealthSystemBit(s) || !options_.health[static_cast<size_t>(s)]) continue;
          const size_t k = static_cast<size_t>(s);
          const bool failure = incident.health == DCGM_HEALTH_RESULT_FAIL;
          const int8_t result = failure ? 2 : (incident.health == DCGM_HEALTH_RESULT_WARN ? 1 : 0);
          if (result == 0) continue;
          slot.health.result[k] = std::max(slot.health.result[k], result);
          const std::pair<int, unsigned int> key{static_cast<int>(k) * 2 + (failure ? 1 : 0),
                                                 incident.error.code};
          open.push_back(key);
          bool seen = false;
          for (const auto& o : slot.open) seen = seen || o == key;
          if (seen) continue;
          (failure ? slot.health.failures_total : slot.health.warnings_total)[k]++;
          DcgmIncident out;
          out.uuid = slot.uuid;
          out.gpu_id = slot.gpu_id;
          out.system = s;
          out.failure = failure;
          out.code = incident.error.code;
          out.message =
              std::string(incident.error.msg, strnlen(incident.error.msg, sizeof(incident.error.msg)));
          fresh.push_back(std::move(out));
        }
      }
      slot.open = std::move(open);
      slot.checked = true;
    }
  }
  if (on_incident_) {
    for (const DcgmIncident& incident : fresh) on_incident_(incident);
  }
}

bool DcgmBackend::Profiling(std::string_view uuid, std::optional<unsigned int> gpu_instance_id,
                            GpmValues* out) const {
  MutexLock lock(&mu_);
  if (!status_.connected) return false;
  for (const Entity& e : entities_) {
    if (e.uuid != uuid || e.gpu_instance_id != gpu_instance_id) continue;
    if (!e.values.valid) return false;
    *out = e.values;
    return true;
  }
  return false;
}

bool DcgmBackend::Health(std::string_view uuid, DcgmGpuHealth* out) const {
  MutexLock lock(&mu_);
  for (const GpuHealthSlot& slot : health_) {
    if (slot.uuid != uuid) continue;
    if (!slot.checked) return false;
    *out = slot.health;
    return true;
  }
  return false;
}

DcgmStatus DcgmBackend::status() const {
  MutexLock lock(&mu_);
  return status_;
}

}  // namespace gpuscope
