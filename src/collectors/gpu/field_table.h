// The GPU collector's field table: every family it can emit, with dcgm-exporter's exact name, type and
// help for the fields dcgm-exporter has, and gpuscope_* names in base units for the rest. Describe()
// and docs/metrics.md come from here; collection code refers to families by GpuFamily.
//
// Thread-safety: the tables are immutable after construction; FamilySpecs() is safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/collectors/gpu/compat.h"
#include "src/core/metric.h"

namespace gpuscope {

enum class GpuFamily : uint16_t {
  // dcgm-exporter default counters.
  kSmClock,
  kMemClock,
  kMemoryTemp,
  kGpuTemp,
  kPowerUsage,
  kTotalEnergyConsumption,
  kPcieReplayCounter,
  kGpuUtil,
  kMemCopyUtil,
  kEncUtil,
  kDecUtil,
  kXidErrors,
  kFbFree,
  kFbUsed,
  kFbReserved,
  kNvlinkBandwidthTotal,
  kUncorrectableRemappedRows,
  kCorrectableRemappedRows,
  kRowRemapFailure,
  kProfGrEngineActive,
  kProfPipeTensorActive,
  kProfDramActive,
  kProfPcieTxBytes,
  kProfPcieRxBytes,
  // DCGM fields dcgm-exporter leaves off by default.
  kEccSbeVolTotal,
  kEccDbeVolTotal,
  kEccSbeAggTotal,
  kEccDbeAggTotal,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kRowRemapPending,
  kNvlinkCrcFlitErrorCountTotal,
  kNvlinkCrcDataErrorCountTotal,
  kNvlinkReplayErrorCountTotal,
  kNvlinkRecoveryErrorCountTotal,
  kProfSmActive,
  kProfSmOccupancy,
  kProfPipeFp64Active,
  kProfPipeFp32Active,
  kProfPipeFp16Active,
  kProfNvlinkTxBytes,
  kProfNvlinkRxBytes,
  kClocksEventReasons,
  kPowerViolation,  // the six *_VIOLATION families follow ViolationPolicies() order
  kThermalViolation,
  kSyncBoostViolation,
  kBoardLimitViolation,
  kLowUtilViolation,
  kReliabilityViolation,
  kPcieLinkGen,
  kPcieLinkWidth,
  kEnforcedPowerLimit,
  // gpuscope's own.
  kGpuUp,
  kGpuInfo,
  kPcieLinkMaxGeneration,
  kPcieLinkMaxWidth,
  kPcieBytesPerSecond,
  kEnergyJoulesTotal,
  kClockEventActive,
  kClockEventSecondsTotal,
  kNvlinkUp,
  kNvlinkErrorsTotal,
  kNvlinkDataBytesTotal,
  kProcessMemoryBytes,
  kProcesses,
  kMigInstanceInfo,
  kXidErrorsTotal,
  kXidLastSeenTimestampSeconds,
  kGpuProfilingInfo,
  kDcgmHealth,
  kDcgmHealthIncidentsTotal,
  // Node-wide (Hostname only).
  kDcgmUp,
  kDcgmConnectsTotal,
  kProfilingPaused,
  kProfilingPauseExpiry,
  kProfilingPausesTotal,
  kCount
};

constexpr size_t kGpuFamilyCount = static_cast<size_t>(GpuFamily::kCount);

struct GpuFamilySpec {
  MetricDescription description;  // labels: the family's labels beyond the common GPU labels
  // The family carries GPU_I_PROFILE and GPU_I_ID (set on MIG instance series, empty on whole-GPU ones).
  bool mig_labels = false;
};

// The table for `compat`, indexed by GpuFamily.
const std::vector<GpuFamilySpec>& FamilySpecs(DcgmCompat compat);

inline const GpuFamilySpec& Spec(const std::vector<GpuFamilySpec>& specs, GpuFamily family) {
  return specs[static_cast<size_t>(family)];
}

}  // namespace gpuscope
