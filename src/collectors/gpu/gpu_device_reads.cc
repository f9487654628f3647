// GpuDevice's per-cycle reads: one member per group of NVML calls (clocks and temperature, power,
// utilisation, memory, PCIe, ECC and retired pages, clock events, field values, NVLink, processes, GPM,
// MIG), each appending its samples through Emit*. Opening the device, its identity and the order of the
// reads are in gpu_device.cc.
#include <algorithm>
#include <cstring>
#include <utility>

#include "src/collectors/gpu/clock_reasons.h"
#include "src/collectors/gpu/gpu_device.h"
#include "src/core/log.h"

namespace gpuscope {
namespace {

// Per-link probes (bits of Link::disabled).
enum LinkProbe : int {
  kLinkReplay = 0,  // the first five follow nvmlNvLinkErrorCounter_t
  kLinkRecovery = 1,
  kLinkCrcFlit = 2,
  kLinkCrcData = 3,
  kLinkEccData = 4,
  kLinkThroughput = 5,
  kLinkState = 6,
};
constexpr std::string_view kLinkCounterNames[] = {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"};

}  // namespace

void GpuDevice::ReadClocksAndTemperature() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int v = 0;
  if (Enabled(GpuProbe::kSmClock) &&
      Check(GpuProbe::kSmClock, nvml.nvmlDeviceGetClockInfo(handle_, NVML_CLOCK_SM, &v))) {
    Emit(GpuFamily::kSmClock, v);
  }
  if (Enabled(GpuProbe::kMemClock) &&
      Check(GpuProbe::kMemClock, nvml.nvmlDeviceGetClockInfo(handle_, NVML_CLOCK_MEM, &v))) {
    Emit(GpuFamily::kMemClock, v);
  }
  if (Enabled(GpuProbe::kGpuTemp) &&
      Check(GpuProbe::kGpuTemp, nvml.nvmlDeviceGetTemperature(handle_, NVML_TEMPERATURE_GPU, &v))) {
    Emit(GpuFamily::kGpuTemp, v);
  }
}

void GpuDevice::ReadPower() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int mw = 0;
  if (Enabled(GpuProbe::kPowerUsage) &&
      Check(GpuProbe::kPowerUsage, nvml.nvmlDeviceGetPowerUsage(handle_, &mw))) {
    Emit(GpuFamily::kPowerUsage, MilliwattsToWatts(mw));
  }
  unsigned long long mj = 0;
  if (Enabled(GpuProbe::kEnergy) &&
      Check(GpuProbe::kEnergy, nvml.nvmlDeviceGetTotalEnergyConsumption(handle_, &mj))) {
    Emit(GpuFamily::kTotalEnergyConsumption, static_cast<double>(mj));
    Emit(GpuFamily::kEnergyJoulesTotal, MillijoulesToJoules(mj));
  }
  if (Enabled(GpuProbe::kPowerLimit) &&
      Check(GpuProbe::kPowerLimit, nvml.nvmlDeviceGetEnforcedPowerLimit(handle_, &mw))) {
    Emit(GpuFamily::kEnforcedPowerLimit, MilliwattsToWatts(mw));
  }
}

void GpuDevice::ReadUtilization() {
  const NvmlLibrary& nvml = *nvml_;
  nvmlUtilization_t util{};
  if (Enabled(GpuProbe::kUtilization) &&
      Check(GpuProbe::kUtilization, nvml.nvmlDeviceGetUtilizationRates(handle_, &util))) {
    Emit(GpuFamily::kGpuUtil, util.gpu);
    Emit(GpuFamily::kMemCopyUtil, util.memory);
  }
  unsigned int value = 0, period = 0;
  if (Enabled(GpuProbe::kEncoder) &&
      Check(GpuProbe::kEncoder, nvml.nvmlDeviceGetEncoderUtilization(handle_, &value, &period))) {
    Emit(GpuFamily::kEncUtil, value);
  }
  if (Enabled(GpuProbe::kDecoder) &&
      Check(GpuProbe::kDecoder, nvml.nvmlDeviceGetDecoderUtilization(handle_, &value, &period))) {
    Emit(GpuFamily::kDecUtil, value);
  }
}

void GpuDevice::ReadMemory() {
  // On a MIG-enabled GPU, dcgm-exporter reports frame buffer per GPU instance (ReadMig) and the whole
  // GPU as well; we do the same.
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  if (Enabled(GpuProbe::kMemory) &&
      Check(GpuProbe::kMemory, nvml_->nvmlDeviceGetMemoryInfo_v2(handle_, &memory))) {
    Emit(GpuFamily::kFbFree, BytesToWholeMiB(memory.free));
    Emit(GpuFamily::kFbUsed, BytesToWholeMiB(memory.used));
    Emit(GpuFamily::kFbReserved, BytesToWholeMiB(memory.reserved));
  }
}

void GpuDevice::ReadPcie() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int v = 0;
  if (Enabled(GpuProbe::kPcieReplay) &&
      Check(GpuProbe::kPcieReplay, nvml.nvmlDeviceGetPcieReplayCounter(handle_, &v))) {
    Emit(GpuFamily::kPcieReplayCounter, v);
  }
  if (Enabled(GpuProbe::kPcieThroughput)) {
    unsigned int tx = 0, rx = 0;
    if (Check(GpuProbe::kPcieThroughput,
              nvml.nvmlDeviceGetPcieThroughput(handle_, NVML_PCIE_UTIL_TX_BYTES, &tx)) &&
        Check(GpuProbe::kPcieThroughput,
              nvml.nvmlDeviceGetPcieThroughput(handle_, NVML_PCIE_UTIL_RX_BYTES, &rx))) {
      EmitWith(GpuFamily::kPcieBytesPerSecond, PcieKBpsToBytesPerSecond(tx), "direction", "tx");
      EmitWith(GpuFamily::kPcieBytesPerSecond, PcieKBpsToBytesPerSecond(rx), "direction", "rx");
      // DCGM_FI_PROF_PCIE_* from NVML's PCIe counters unless this cycle's profiling source has them.
      const bool from_profiler =
          (profiling_source_ == ProfilingSource::kGpm && pcie_from_gpm_) ||
          (profiling_source_ == ProfilingSource::kDcgm && dcgm_values_.Has(GpmMetric::kPcieTxPerSec));
      if (!from_profiler) {
        Emit(GpuFamily::kProfPcieTxBytes, PcieKBpsToBytesPerSecond(tx));
        Emit(GpuFamily::kProfPcieRxBytes, PcieKBpsToBytesPerSecond(rx));
      }
    }
  }
  if (Enabled(GpuProbe::kPcieLinkGen) &&
      Check(GpuProbe::kPcieLinkGen, nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle_, &v))) {
    Emit(GpuFamily::kPcieLinkGen, v);
  }
  if (Enabled(GpuProbe::kPcieLinkWidth) &&
      Check(GpuProbe::kPcieLinkWidth, nvml.nvmlDeviceGetCurrPcieLinkWidth(handle_, &v))) {
    Emit(GpuFamily::kPcieLinkWidth, v);
  }
  if (lost_) return;
  if (max_pcie_gen_ != 0) Emit(GpuFamily::kPcieLinkMaxGeneration, max_pcie_gen_);
  if (max_pcie_width_ != 0) Emit(GpuFamily::kPcieLinkMaxWidth, max_pcie_width_);
}

void GpuDevice::ReadEcc() {
  const NvmlLibrary& nvml = *nvml_;
  struct EccRead {
    GpuProbe probe;
    nvmlMemoryErrorType_t type;
    nvmlEccCounterType_t counter;
    GpuFamily family;
  };
  static constexpr EccRead kEcc[] = {
      {GpuProbe::kEccSbeVolatile, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
       GpuFamily::kEccSbeVolTotal},
      {GpuProbe::kEccDbeVolatile, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
       GpuFamily::kEccDbeVolTotal},
      {GpuProbe::kEccSbeAggregate, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC,
       GpuFamily::kEccSbeAggTotal},
      {GpuProbe::kEccDbeAggregate, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC,
       GpuFamily::kEccDbeAggTotal},
  };
  for (const EccRead& read : kEcc) {
    unsigned long long count = 0;
    if (Enabled(read.probe) &&
        Check(read.probe, nvml.nvmlDeviceGetTotalEccErrors(handle_, read.type, read.counter, &count))) {
      Emit(read.family, static_cast<double>(count));
    }
  }
  struct RetiredRead {
    GpuProbe probe;
    nvmlPageRetirementCause_t cause;
    GpuFamily family;
  };
  static constexpr RetiredRead kRetired[] = {
      {GpuProbe::kRetiredSbe, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
       GpuFamily::kRetiredSbe},
      {GpuProbe::kRetiredDbe, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, GpuFamily::kRetiredDbe},
  };
  for (const RetiredRead& read : kRetired) {
    if (!Enabled(read.probe)) continue;
    // A zero-sized buffer asks for the count only; NVML answers INSUFFICIENT_SIZE when pages exist.
    unsigned int pages = 0;
    nvmlReturn_t r = nvml.nvmlDeviceGetRetiredPages(handle_, read.cause, &pages, nullptr);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE || Check(read.probe, r)) Emit(read.family, pages);
  }
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (Enabled(GpuProbe::kRetiredPending) &&
      Check(GpuProbe::kRetiredPending, nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle_, &pending))) {
    Emit(GpuFamily::kRetiredPending, pending == NVML_FEATURE_ENABLED ? 1 : 0);
  }
  unsigned int corr = 0, unc = 0, is_pending = 0, failure = 0;
  if (Enabled(GpuProbe::kRemappedRows) &&
      Check(GpuProbe::kRemappedRows,
            nvml.nvmlDeviceGetRemappedRows(handle_, &corr, &unc, &is_pending, &failure))) {
    Emit(GpuFamily::kUncorrectableRemappedRows, unc);
    Emit(GpuFamily::kCorrectableRemappedRows, corr);
    Emit(GpuFamily::kRowRemapFailure, failure != 0 ? 1 : 0);
    Emit(GpuFamily::kRowRemapPending, is_pending != 0 ? 1 : 0);
  }
}

void GpuDevice::ReadClockEvents() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned long long mask = 0;
  if (Enabled(GpuProbe::kClockEvents) &&
      Check(GpuProbe::kClockEvents, nvml.GetClocksEventReasons(handle_, &mask))) {
    Emit(GpuFamily::kClocksEventReasons, static_cast<double>(mask));
    for (const ClockEventReason& reason : ClockEventReasons()) {
      EmitWith(GpuFamily::kClockEventActive, (mask & reason.bit) != 0 ? 1 : 0, "reason", reason.name);
    }
  }
  size_t i = 0;
  for (const ViolationPolicy& policy : ViolationPolicies()) {
    GpuProbe probe = static_cast<GpuProbe>(static_cast<int>(GpuProbe::kViolationPower) + i);
    GpuFamily family = static_cast<GpuFamily>(static_cast<size_t>(GpuFamily::kPowerViolation) + i);
    ++i;
    nvmlViolationTime_t time{};
    if (Enabled(probe) && Check(probe, nvml.nvmlDeviceGetViolationStatus(handle_, policy.policy, &time))) {
      Emit(family, ViolationValue(node_.compat, time.violationTime));
      EmitWith(GpuFamily::kClockEventSecondsTotal, NanosecondsToSeconds(time.violationTime), "reason",
               policy.reason);
    }
  }
}

void GpuDevice::ReadFieldValues() {
  // One nvmlDeviceGetFieldValues call for memory temperature and every link's TX and RX counters.
  if (!Enabled(GpuProbe::kFieldValues)) return;
  field_values_.clear();
  auto add = [this](unsigned int field, unsigned int scope) {
    nvmlFieldValue_t fv{};
    fv.fieldId = field;
    fv.scopeId = scope;
    fv.nvmlReturn = NVML_ERROR_UNKNOWN;
    field_values_.push_back(fv);
  };
  const bool memory_temp = Enabled(GpuProbe::kMemoryTemp);
  if (memory_temp) add(NVML_FI_DEV_MEMORY_TEMP, 0);
  for (const Link& link : links_) {
    if (link.disabled & (1u << kLinkThroughput)) continue;
    add(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, link.id);
    add(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, link.id);
  }
  if (field_values_.empty()) return;
  if (!Check(GpuProbe::kFieldValues,
             nvml_->nvmlDeviceGetFieldValues(handle_, static_cast<int>(field_values_.size()),
                                             field_values_.data()))) {
    return;
  }
  size_t at = 0;
  if (memory_temp) {
    const nvmlFieldValue_t& fv = field_values_[at++];
    if (Check(GpuProbe::kMemoryTemp, fv.nvmlReturn)) Emit(GpuFamily::kMemoryTemp, FieldValueAsDouble(fv));
  }
  double total_kib = 0;
  bool any_link = false;
  for (Link& link : links_) {
    if (link.disabled & (1u << kLinkThroughput)) continue;
    const nvmlFieldValue_t& tx = field_values_[at++];
    const nvmlFieldValue_t& rx = field_values_[at++];
    if (!CheckLink(link, kLinkThroughput, tx.nvmlReturn) || !CheckLink(link, kLinkThroughput, rx.nvmlReturn))
      continue;
    uint64_t tx_kib = FieldValueAsU64(tx), rx_kib = FieldValueAsU64(rx);
    EmitWith(GpuFamily::kNvlinkDataBytesTotal, KiBToBytes(tx_kib), "link", link.label, "direction", "tx");
    EmitWith(GpuFamily::kNvlinkDataBytesTotal, KiBToBytes(rx_kib), "link", link.label, "direction", "rx");
    total_kib += static_cast<double>(tx_kib) + static_cast<double>(rx_kib);
    any_link = true;
  }
  // DCGM sums the links' data throughput counters and reports NVML's unit (KiB) unchanged.
  if (any_link) Emit(GpuFamily::kNvlinkBandwidthTotal, total_kib);
}

void GpuDevice::ReadNvlinks() {
  if (links_.empty() || lost_) return;
  const NvmlLibrary& nvml = *nvml_;
  constexpr GpuFamily kTotals[] = {
      GpuFamily::kNvlinkReplayErrorCountTotal, GpuFamily::kNvlinkRecoveryErrorCountTotal,
      GpuFamily::kNvlinkCrcFlitErrorCountTotal, GpuFamily::kNvlinkCrcDataErrorCountTotal};
  double totals[4] = {0, 0, 0, 0};
  bool have[4] = {false, false, false, false};
  for (Link& link : links_) {
    if (lost_) return;
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (!(link.disabled & (1u << kLinkState)) &&
        CheckLink(link, kLinkState, nvml.nvmlDeviceGetNvLinkState(handle_, link.id, &active))) {
      EmitWith(GpuFamily::kNvlinkUp, active == NVML_FEATURE_ENABLED ? 1 : 0, "link", link.label);
    }
    for (int counter = kLinkReplay; counter <= kLinkEccData; ++counter) {
      if (link.disabled & (1u << counter)) continue;
      unsigned long long value = 0;
      if (!CheckLink(link, counter,
                     nvml.nvmlDeviceGetNvLinkErrorCounter(
                         handle_, link.id, static_cast<nvmlNvLinkErrorCounter_t>(counter), &value))) {
        continue;
      }
      EmitWith(GpuFamily::kNvlinkErrorsTotal, static_cast<double>(value), "link", link.label, "counter",
               kLinkCounterNames[counter]);
      if (counter < 4) {
        totals[counter] += static_cast<double>(value);
        have[counter] = true;
      }
    }
  }
  for (int i = 0; i < 4; ++i) {
    if (have[i]) Emit(kTotals[i], totals[i]);
  }
}

void GpuDevice::ReadProcesses() {
  const NvmlLibrary& nvml = *nvml_;
  processes_.clear();
  bool any = false;
  auto read = [&](GpuProbe probe, auto call) {
    if (!Enabled(probe)) return;
    if (process_infos_.empty()) process_infos_.resize(64);
    unsigned int count = static_cast<unsigned int>(process_infos_.size());
    nvmlReturn_t r = call(&count, process_infos_.data());
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      process_infos_.resize(count + 16);
      count = static_cast<unsigned int>(process_infos_.size());
      r = call(&count, process_infos_.data());
    }
    if (!Check(probe, r)) return;
    any = true;
    for (unsigned int i = 0; i < count && i < process_infos_.size(); ++i) {
      const nvmlProcessInfo_t& info = process_infos_[i];
      auto it = std::find_if(processes_.begin(), processes_.end(),
                             [&](const GpuProcessEntry& p) { return p.pid == info.pid; });
      // A process in both lists shows the same memory twice; keep one.
      unsigned long long bytes =
          info.usedGpuMemory == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)
              ? 0
              : info.usedGpuMemory;
      if (it == processes_.end())
        processes_.push_back({info.pid, bytes, info.gpuInstanceId});
      else
        it->bytes = std::max(it->bytes, bytes);
    }
  };
  read(GpuProbe::kComputeProcesses, [&](unsigned int* count, nvmlProcessInfo_t* infos) {
    return nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle_, count, infos);
  });
  read(GpuProbe::kGraphicsProcesses, [&](unsigned int* count, nvmlProcessInfo_t* infos) {
    return nvml.nvmlDeviceGetGraphicsRunningProcesses_v3(handle_, count, infos);
  });
  if (!any || lost_) return;
  Emit(GpuFamily::kProcesses, static_cast<double>(processes_.size()));
  for (const GpuProcessEntry& p : processes_) {
    // GPU_I_ID ties a process to its MIG instance (attribution keys "<gpu>.<GPU_I_ID>"); empty without MIG.
    std::string instance = p.gpu_instance_id == kNoGpuInstance ? "" : std::to_string(p.gpu_instance_id);
    EmitWith(GpuFamily::kProcessMemoryBytes, static_cast<double>(p.bytes), "pid", std::to_string(p.pid),
             "GPU_I_ID", instance);
    SampleSubject& subject = out_->back().sample.subject;
    subject.pid = p.pid;
    if (p.gpu_instance_id != kNoGpuInstance) subject.gpu_instance = static_cast<int32_t>(p.gpu_instance_id);
  }
}

void GpuDevice::EmitGpm(const GpmValues& v, const MigInstance* mig, bool whole_gpu) {
  struct Map {
    GpmMetric metric;
    GpuFamily family;
  };
  static constexpr Map kPerInstance[] = {
      {GpmMetric::kGraphicsUtil, GpuFamily::kProfGrEngineActive},
      {GpmMetric::kSmUtil, GpuFamily::kProfSmActive},
      {GpmMetric::kSmOccupancy, GpuFamily::kProfSmOccupancy},
      {GpmMetric::kAnyTensorUtil, GpuFamily::kProfPipeTensorActive},
      {GpmMetric::kDramBwUtil, GpuFamily::kProfDramActive},
      {GpmMetric::kFp64Util, GpuFamily::kProfPipeFp64Active},
      {GpmMetric::kFp32Util, GpuFamily::kProfPipeFp32Active},
      {GpmMetric::kFp16Util, GpuFamily::kProfPipeFp16Active},
  };
  static constexpr Map kWholeGpu[] = {
      {GpmMetric::kPcieTxPerSec, GpuFamily::kProfPcieTxBytes},
      {GpmMetric::kPcieRxPerSec, GpuFamily::kProfPcieRxBytes},
      {GpmMetric::kNvlinkTxPerSec, GpuFamily::kProfNvlinkTxBytes},
      {GpmMetric::kNvlinkRxPerSec, GpuFamily::kProfNvlinkRxBytes},
  };
  for (const Map& m : kPerInstance) {
    if (!v.Has(m.metric)) continue;
    if (mig != nullptr)
      EmitMig(m.family, v.Get(m.metric), *mig);
    else
      Emit(m.family, v.Get(m.metric));
  }
  if (!whole_gpu) return;
  for (const Map& m : kWholeGpu) {
    if (v.Has(m.metric)) Emit(m.family, v.Get(m.metric));
  }
}

void GpuDevice::ChooseProfilingSource() {
  profiling_source_ = ProfilingSource::kNone;
  if (node_.pause != nullptr && node_.pause->Paused()) {
    // The counters belong to the user's profiler: no samples, and the next interval starts afresh.
    if (gpm_ != nullptr) gpm_->Reset();
    for (MigInstance& instance : mig_instances_) {
      if (instance.gpm != nullptr) instance.gpm->Reset();
    }
    return;
  }
  const bool gpm = gpm_ != nullptr && Enabled(GpuProbe::kGpm);
  if (node_.dcgm != nullptr && (!gpm || node_.prefer_dcgm_profiling) &&
      node_.dcgm->Profiling(identity_.uuid, std::nullopt, &dcgm_values_)) {
    profiling_source_ = ProfilingSource::kDcgm;
  } else if (gpm) {
    profiling_source_ = ProfilingSource::kGpm;
  }
}

void GpuDevice::ReadGpm() {
  if (profiling_source_ == ProfilingSource::kDcgm) {
    EmitGpm(dcgm_values_, nullptr, true);
    EmitWith(GpuFamily::kGpuProfilingInfo, 1, "source", "dcgm");
    return;
  }
  if (profiling_source_ != ProfilingSource::kGpm || !Enabled(GpuProbe::kGpm)) return;
  if (!Check(GpuProbe::kGpm, gpm_->Take(&gpm_values_))) {
    if (Disabled(GpuProbe::kGpm)) pcie_from_gpm_ = false;
    return;
  }
  EmitGpm(gpm_values_, nullptr, true);
  EmitWith(GpuFamily::kGpuProfilingInfo, 1, "source", "gpm");
}

void GpuDevice::ReadDcgmHealth() {
  if (node_.dcgm == nullptr || lost_ || !node_.dcgm->Health(identity_.uuid, &dcgm_health_)) return;
  for (size_t k = 0; k < kDcgmHealthSystemCount; ++k) {
    if (dcgm_health_.result[k] < 0) continue;
    const std::string_view system = DcgmHealthSystemName(static_cast<DcgmHealthSystem>(k));
    EmitWith(GpuFamily::kDcgmHealth, dcgm_health_.result[k], "system", system);
    EmitWith(GpuFamily::kDcgmHealthIncidentsTotal, static_cast<double>(dcgm_health_.warnings_total[k]),
             "system", system, "result", "warn");
    EmitWith(GpuFamily::kDcgmHealthIncidentsTotal, static_cast<double>(dcgm_health_.failures_total[k]),
             "system", system, "result", "fail");
  }
}

void GpuDevice::ReadMig() {
  if (mig_instances_.empty() || lost_) return;
  const NvmlLibrary& nvml = *nvml_;
  for (MigInstance& instance : mig_instances_) {
    if (lost_) return;
    EmitMig(GpuFamily::kMigInstanceInfo, 1, instance, instance.info_labels);
    nvmlMemory_v2_t memory{};
    memory.version = nvmlMemory_v2;
    if (Enabled(GpuProbe::kMigMemory) &&
        Check(GpuProbe::kMigMemory, nvml.nvmlDeviceGetMemoryInfo_v2(instance.handle, &memory))) {
      EmitMig(GpuFamily::kFbFree, BytesToWholeMiB(memory.free), instance);
      EmitMig(GpuFamily::kFbUsed, BytesToWholeMiB(memory.used), instance);
      EmitMig(GpuFamily::kFbReserved, BytesToWholeMiB(memory.reserved), instance);
    }
    if (profiling_source_ == ProfilingSource::kDcgm) {
      if (node_.dcgm->Profiling(identity_.uuid, instance.mig.gpu_instance_id, &gpm_values_)) {
        EmitGpm(gpm_values_, &instance, false);
      }
    } else if (profiling_source_ == ProfilingSource::kGpm && instance.gpm != nullptr &&
               Enabled(GpuProbe::kMigGpm) && Check(GpuProbe::kMigGpm, instance.gpm->Take(&gpm_values_))) {
      EmitGpm(gpm_values_, &instance, false);
    }
  }
}

}  // namespace gpuscope
