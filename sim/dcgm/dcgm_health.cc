// The stand-in libdcgm.so.4's health watches: dcgmHealthSet stores a group's watched systems,
// dcgmHealthCheck reports an incident per fault of the scenario that is active at the simulated time of
// the call, on the group's GPUs and for watched systems only. Error codes are dcgmError_t numbers
// (NVIDIA's dcgm_errors.h); the messages are the stand-in's own, each naming its GPU as DCGM's do.
//
// Thread-safety: every entry point takes g_mu for its whole call.
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/dcgm/dcgm_state.h"

namespace gpuscope::sim::dcgm {
namespace {

// dcgmError_t values (dcgm_errors.h) of the incidents below.
constexpr unsigned kFrPciReplayRate = 3;          // DCGM_FR_PCI_REPLAY_RATE
constexpr unsigned kFrVolatileDbeDetected = 4;    // DCGM_FR_VOLATILE_DBE_DETECTED
constexpr unsigned kFrCorruptInforom = 9;         // DCGM_FR_CORRUPT_INFOROM
constexpr unsigned kFrClocksEventPower = 12;      // DCGM_FR_CLOCKS_EVENT_POWER
constexpr unsigned kFrNvlinkErrorThreshold = 13;  // DCGM_FR_NVLINK_ERROR_THRESHOLD
constexpr unsigned kFrTempViolation = 42;         // DCGM_FR_TEMP_VIOLATION
constexpr unsigned kFrPcieGeneration = 45;        // DCGM_FR_PCIE_GENERATION
constexpr unsigned kFrPcieWidth = 46;             // DCGM_FR_PCIE_WIDTH
constexpr unsigned kFrRowRemapFailure = 80;       // DCGM_FR_ROW_REMAP_FAILURE
constexpr unsigned kFrXidError = 101;             // DCGM_FR_XID_ERROR

// PCIe replays per minute above which DCGM's PCIe watch warns.
constexpr uint64_t kPcieReplaysPerMinute = 8;
constexpr double kMinute = 60;

struct Incident {
  dcgmHealthSystems_t system;
  dcgmHealthWatchResults_t health;
  unsigned code;
  std::string message;
};

std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* format, ...) {
  char buf[sizeof(dcgmDiagErrorDetail_t::msg)];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

// What the scenario's faults mean for DCGM's health watches on GPU `gpu` at `now`.
std::vector<Incident> IncidentsAt(unsigned gpu, double now, uint32_t systems) REQUIRES(g_mu) {
  const Scenario& scenario = g_state.sim->scenario();
  const GpuModel& model = *scenario.gpus[gpu].model;
  const FaultEffects effects = EffectsAt(scenario, gpu, now);
  const ErrorCounters counters = CountersAt(scenario, gpu, now);
  const ErrorCounters minute_ago = CountersAt(scenario, gpu, std::max(0.0, now - kMinute));
  std::vector<Incident> incidents;
  auto add = [&](dcgmHealthSystems_t system, dcgmHealthWatchResults_t health, unsigned code,
                 std::string message) {
    if ((systems & system) != 0) incidents.push_back({system, health, code, std::move(message)});
  };
  if (counters.dbe_volatile > 0) {
    add(DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, kFrVolatileDbeDetected,
        Format("Detected %llu volatile double-bit ECC error(s) in GPU %u.",
               static_cast<unsigned long long>(counters.dbe_volatile), gpu));
  }
  if (counters.remap_failure) {
    add(DCGM_HEALTH_WATCH_MEM, DCGM_HEALTH_RESULT_FAIL, kFrRowRemapFailure,
        Format("GPU %u failed to remap a row of its memory; drain it and have it checked.", gpu));
  }
  if (effects.lost) {
    add(DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_FAIL, kFrXidError,
        Format("GPU %u has fallen off the bus (XID 79) and no longer answers.", gpu));
  } else {
    const uint64_t replays = counters.pcie_replays - minute_ago.pcie_replays;
    if (replays > kPcieReplaysPerMinute) {
      add(DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, kFrPciReplayRate,
          Format("Detected %llu PCIe replays in the last minute on GPU %u (more than %llu per minute).",
                 static_cast<unsigned long long>(replays), gpu,
                 static_cast<unsigned long long>(kPcieReplaysPerMinute)));
    }
    if (effects.pcie_gen != 0 && effects.pcie_gen < model.pcie_gen) {
      add(DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, kFrPcieGeneration,
          Format("GPU %u's PCIe link runs at Gen%u, below its Gen%u.", gpu, effects.pcie_gen,
                 model.pcie_gen));
    }
    if (effects.pcie_width != 0 && effects.pcie_width < model.pcie_width) {
      add(DCGM_HEALTH_WATCH_PCIE, DCGM_HEALTH_RESULT_WARN, kFrPcieWidth,
          Format("GPU %u's PCIe link runs at x%u, below its x%u.", gpu, effects.pcie_width,
                 model.pcie_width));
    }
  }
  for (unsigned link = 0; link < model.nvlinks && link < kMaxLinks; ++link) {
    const uint64_t errors = counters.crc_flit[link] - minute_ago.crc_flit[link];
    if (errors > 0) {
      add(DCGM_HEALTH_WATCH_NVLINK, DCGM_HEALTH_RESULT_WARN, kFrNvlinkErrorThreshold,
          Format("Detected %llu NVLink CRC flit errors in the last minute on GPU %u's link %u.",
                 static_cast<unsigned long long>(errors), gpu, link));
    }
  }
  if (effects.power_brake) {
    add(DCGM_HEALTH_WATCH_POWER, DCGM_HEALTH_RESULT_WARN, kFrClocksEventPower,
        Format("GPU %u's clocks are held down by the hardware power brake.", gpu));
  }
  if (effects.inforom_corrupt) {
    add(DCGM_HEALTH_WATCH_INFOROM, DCGM_HEALTH_RESULT_WARN, kFrCorruptInforom,
        Format("A corrupt InfoROM was detected on GPU %u.", gpu));
  }
  // The temperature needs the GPU's state: only read it when the thermal watch asks and the GPU answers.
  if ((systems & DCGM_HEALTH_WATCH_THERMAL) != 0 && !effects.lost && model.slowdown_temp_c > 0) {
    const double temp_c = std::round(StateNow(gpu, now).temp_c);
    if (temp_c >= model.slowdown_temp_c) {
      add(DCGM_HEALTH_WATCH_THERMAL, DCGM_HEALTH_RESULT_WARN, kFrTempViolation,
          Format("GPU %u's temperature of %.0f C is at or above its slowdown threshold of %.0f C.", gpu,
                 temp_c, model.slowdown_temp_c));
    }
  }
  return incidents;
}

}  // namespace
}  // namespace gpuscope::sim::dcgm

using gpuscope::sim::dcgm::Connection;
using gpuscope::sim::dcgm::g_mu;
using gpuscope::sim::dcgm::g_state;
using gpuscope::sim::dcgm::Incident;
using gpuscope::sim::dcgm::IncidentsAt;
using gpuscope::sim::dcgm::Lookup;
using gpuscope::sim::dcgm::ResolveEntity;

extern "C" {

SIM_DCGM_EXPORT dcgmReturn_t dcgmHealthSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                           dcgmHealthSystems_t systems) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, g_state.sim->Now(), &connection); r != DCGM_ST_OK) return r;
  auto it = connection->engine->groups.find(groupId);
  if (it == connection->engine->groups.end()) return DCGM_ST_NOT_CONFIGURED;
  it->second.health_systems = static_cast<uint32_t>(systems);
  return DCGM_ST_OK;
}

SIM_DCGM_EXPORT dcgmReturn_t dcgmHealthCheck(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                             dcgmHealthResponse_t* results) {
  gpuscope::MutexLock lock(&g_mu);
  if (!g_state.sim) return DCGM_ST_UNINITIALIZED;
  const double now = g_state.sim->Now();
  Connection* connection = nullptr;
  if (dcgmReturn_t r = Lookup(pDcgmHandle, now, &connection); r != DCGM_ST_OK) return r;
  if (results == nullptr) return DCGM_ST_BADPARAM;
  if (results->version != dcgmHealthResponse_version) return DCGM_ST_VER_MISMATCH;
  auto it = connection->engine->groups.find(groupId);
  if (it == connection->engine->groups.end()) return DCGM_ST_NOT_CONFIGURED;
  results->overallHealth = DCGM_HEALTH_RESULT_PASS;
  results->incidentCount = 0;
  // The health watches are GPU watches: a group's GPU instances and compute instances add nothing.
  for (const dcgmGroupEntityPair_t& entity : it->second.entities) {
    if (entity.entityGroupId != DCGM_FE_GPU || !ResolveEntity(*g_state.sim, entity)) continue;
    for (Incident& incident : IncidentsAt(entity.entityId, now, it->second.health_systems)) {
      if (results->incidentCount >= DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2) break;
      dcgmIncidentInfo_t& out = results->incidents[results->incidentCount++];
      out = {};
      out.system = incident.system;
      out.health = incident.health;
      std::snprintf(out.error.msg, sizeof(out.error.msg), "%s", incident.message.c_str());
      out.error.code = incident.code;
      out.entityInfo = entity;
      if (incident.health > results->overallHealth) results->overallHealth = incident.health;
    }
  }
  return DCGM_ST_OK;
}

}  // extern "C"
