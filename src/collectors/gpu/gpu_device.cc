#include "src/collectors/gpu/gpu_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/collectors/gpu/clock_reasons.h"
#include "src/core/log.h"

namespace gpuscope {
namespace {

constexpr std::string_view kProbeNames[] = {
    "sm_clock",
    "mem_clock",
    "gpu_temperature",
    "memory_temperature",
    "power_usage",
    "energy",
    "power_limit",
    "utilization",
    "encoder_utilization",
    "decoder_utilization",
    "memory_info",
    "pcie_replay_counter",
    "pcie_throughput",
    "pcie_link_generation",
    "pcie_link_width",
    "ecc_sbe_volatile",
    "ecc_dbe_volatile",
    "ecc_sbe_aggregate",
    "ecc_dbe_aggregate",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "retired_pages_pending",
    "remapped_rows",
    "clock_event_reasons",
    "violation_power",
    "violation_thermal",
    "violation_sync_boost",
    "violation_board_limit",
    "violation_low_util",
    "violation_reliability",
    "compute_processes",
    "graphics_processes",
    "field_values",
    "gpm",
    "mig_memory",
    "mig_gpm",
};
static_assert(std::size(kProbeNames) == static_cast<size_t>(GpuProbe::kCount));

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

bool DisablesField(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string FromBuffer(const char* buffer, size_t size) { return std::string(buffer, strnlen(buffer, size)); }

double FieldValueAsDouble(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      return fv.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return fv.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(fv.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(fv.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(fv.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return fv.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return fv.value.usVal;
  }
  return 0;
}

uint64_t FieldValueAsU64(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return fv.value.ullVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return fv.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return fv.value.uiVal;
    default: {
      double d = FieldValueAsDouble(fv);
      return d > 0 ? static_cast<uint64_t>(d) : 0;
    }
  }
}

}  // namespace

std::string_view GpuProbeName(GpuProbe probe) { return kProbeNames[static_cast<size_t>(probe)]; }

std::unique_ptr<GpuDevice> GpuDevice::Open(std::shared_ptr<const NvmlLibrary> nvml, unsigned int index,
                                           const GpuNodeContext& node, Status* status) {
  nvmlDevice_t handle = nullptr;
  nvmlReturn_t r = nvml->nvmlDeviceGetHandleByIndex_v2(index, &handle);
  if (r != NVML_SUCCESS) {
    *status = Status::Unavailable("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) +
                                  "): " + nvml->ErrorString(r));
    return nullptr;
  }
  std::unique_ptr<GpuDevice> device(new GpuDevice(std::move(nvml), handle, node));
  device->ReadIdentity(index);
  device->DiscoverLinks();
  device->DiscoverMig();
  *status = Status::Ok();
  return device;
}

GpuDevice::GpuDevice(std::shared_ptr<const NvmlLibrary> nvml, nvmlDevice_t handle, const GpuNodeContext& node)
    : nvml_(std::move(nvml)), handle_(handle), node_(node), specs_(FamilySpecs(node.compat)) {}

GpuDevice::~GpuDevice() = default;

void GpuDevice::ReadIdentity(unsigned int index) {
  const NvmlLibrary& nvml = *nvml_;
  identity_.index = index;
  identity_.driver_version = node_.driver_version;
  char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (nvml.nvmlDeviceGetUUID(handle_, buffer, sizeof(buffer)) == NVML_SUCCESS) {
    identity_.uuid = FromBuffer(buffer, sizeof(buffer));
  }
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (nvml.nvmlDeviceGetName(handle_, name, sizeof(name)) == NVML_SUCCESS) {
    identity_.model_name = FromBuffer(name, sizeof(name));
  }
  nvmlPciInfo_t pci{};
  if (nvml.nvmlDeviceGetPciInfo_v3(handle_, &pci) == NVML_SUCCESS) {
    identity_.pci_bus_id = FromBuffer(pci.busId, sizeof(pci.busId));
  }
  unsigned int minor = index;
  if (nvml.nvmlDeviceGetMinorNumber(handle_, &minor) == NVML_SUCCESS)
    identity_.minor = minor;
  else
    identity_.minor = index;
  char serial[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (nvml.nvmlDeviceGetSerial(handle_, serial, sizeof(serial)) == NVML_SUCCESS) {
    identity_.serial = FromBuffer(serial, sizeof(serial));
  }
  unsigned int value = 0;
  if (nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle_, &value) == NVML_SUCCESS) max_pcie_gen_ = value;
  if (nvml.nvmlDeviceGetMaxPcieLinkWidth(handle_, &value) == NVML_SUCCESS) max_pcie_width_ = value;

  labels_ = BuildGpuLabels(identity_, node_.host, nullptr, false);
  labels_mig_slots_ = BuildGpuLabels(identity_, node_.host, nullptr, true);

  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t r = nvml.nvmlGpmQueryDeviceSupport(handle_, &support);
  if (r == NVML_SUCCESS && support.isSupportedDevice != 0) {
    gpm_ = std::make_unique<GpmSampler>(nvml_, handle_, std::nullopt);
    pcie_from_gpm_ = true;
  } else {
    disabled_.set(static_cast<size_t>(GpuProbe::kGpm));
    const std::string gpu = std::to_string(index);
    const std::string error = r == NVML_SUCCESS ? std::string("device not supported") : nvml.ErrorString(r);
    Log(LogLevel::kDebug, "GPM unavailable: DCGM_FI_PROF_* other than PCIe are not reported on this GPU",
        {{"collector", "gpu"}, {"gpu", gpu}, {"uuid", identity_.uuid}, {"error", error}});
  }
}

void GpuDevice::DiscoverLinks() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int count = NVML_NVLINK_MAX_LINKS;
  nvmlFieldValue_t fv{};
  fv.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
  bool counted =
      nvml.nvmlDeviceGetFieldValues(handle_, 1, &fv) == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS;
  if (counted)
    count = std::min<unsigned int>(static_cast<unsigned int>(FieldValueAsU64(fv)), NVML_NVLINK_MAX_LINKS);
  for (unsigned int link = 0; link < count; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t r = nvml.nvmlDeviceGetNvLinkState(handle_, link, &active);
    // Without the count field, probing stops at the first link NVML does not know.
    if (r != NVML_SUCCESS && !counted) break;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT ||
        r == NVML_ERROR_FUNCTION_NOT_FOUND) {
      continue;
    }
    links_.push_back(Link{link, std::to_string(link), 0});
  }
  field_values_.reserve(1 + 2 * links_.size());
}

void GpuDevice::DiscoverMig() {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int current = NVML_DEVICE_MIG_DISABLE, pending = NVML_DEVICE_MIG_DISABLE;
  if (nvml.nvmlDeviceGetMigMode(handle_, &current, &pending) != NVML_SUCCESS ||
      current != NVML_DEVICE_MIG_ENABLE) {
    return;
  }
  mig_enabled_ = true;
  unsigned int max_count = 0;
  if (nvml.nvmlDeviceGetMaxMigDeviceCount(handle_, &max_count) != NVML_SUCCESS) return;
  for (unsigned int i = 0; i < max_count; ++i) {
    nvmlDevice_t mig_handle = nullptr;
    if (nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle_, i, &mig_handle) != NVML_SUCCESS) continue;
    unsigned int gi = 0;
    if (nvml.nvmlDeviceGetGpuInstanceId(mig_handle, &gi) != NVML_SUCCESS) continue;
    // Each MIG device (compute instance) has its own UUID, the name CUDA_VISIBLE_DEVICES and jobstats'
    // mapping files use.
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    std::string mig_uuid;
    if (nvml.nvmlDeviceGetUUID(mig_handle, uuid, sizeof(uuid)) == NVML_SUCCESS)
      mig_uuid = FromBuffer(uuid, sizeof(uuid));
    // Several compute instances share a GPU instance; series are per GPU instance, as dcgm-exporter's.
    auto seen = std::find_if(mig_instances_.begin(), mig_instances_.end(),
                             [gi](const MigInstance& m) { return m.mig.gpu_instance_id == gi; });
    if (seen != mig_instances_.end()) {
      if (!mig_uuid.empty()) seen->uuids.push_back(std::move(mig_uuid));
      continue;
    }
    MigInstance instance;
    if (!mig_uuid.empty()) instance.uuids.push_back(std::move(mig_uuid));
    instance.handle = mig_handle;
    instance.mig.gpu_instance_id = gi;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (nvml.nvmlDeviceGetName(mig_handle, name, sizeof(name)) == NVML_SUCCESS) {
      instance.mig.profile = MigProfileFromDeviceName(FromBuffer(name, sizeof(name)));
    }
    instance.labels = BuildGpuLabels(identity_, node_.host, &instance.mig, true);
    if (nvml.Has(NvmlFunction::nvmlGpmMigSampleGet)) {
      instance.gpm = std::make_unique<GpmSampler>(nvml_, handle_, gi);
    }
    mig_instances_.push_back(std::move(instance));
  }
  for (MigInstance& instance : mig_instances_) {
    std::string uuids;
    for (const std::string& uuid : instance.uuids) uuids += (uuids.empty() ? "" : ",") + uuid;
    instance.info_labels = instance.labels;
    instance.info_labels.emplace_back("mig_uuid", std::move(uuids));
    mig_identities_.push_back({instance.mig.gpu_instance_id, instance.mig.profile, instance.uuids});
  }
}

bool GpuDevice::Check(GpuProbe probe, nvmlReturn_t result) {
  if (result == NVML_SUCCESS) return true;
  if (result == NVML_ERROR_GPU_IS_LOST) {
    lost_ = true;
  } else if (DisablesField(result)) {
    disabled_.set(static_cast<size_t>(probe));
    const std::string gpu = std::to_string(identity_.index);
    const std::string error = nvml_->ErrorString(result);
    Log(LogLevel::kDebug, "field disabled on this GPU",
        {{"collector", "gpu"},
         {"gpu", gpu},
         {"uuid", identity_.uuid},
         {"field", GpuProbeName(probe)},
         {"error", error}});
  }
  return false;
}

bool GpuDevice::CheckLink(Link& link, int link_probe, nvmlReturn_t result) {
  if (result == NVML_SUCCESS) return true;
  if (result == NVML_ERROR_GPU_IS_LOST) {
    lost_ = true;
  } else if (DisablesField(result)) {
    link.disabled |= static_cast<uint8_t>(1u << link_probe);
  }
  return false;
}

const Labels& GpuDevice::LabelsOf(GpuFamily family) const {
  return Spec(specs_, family).mig_labels ? labels_mig_slots_ : labels_;
}

void GpuDevice::Emit(GpuFamily family, double value) {
  out_->push_back(GpuSample{family, Sample{LabelsOf(family), value, Subject()}});
}

void GpuDevice::EmitWith(GpuFamily family, double value, std::string_view k1, std::string_view v1) {
  out_->push_back(GpuSample{family, Sample{label_cache_.With(LabelsOf(family), {{k1, v1}}), value, Subject()}});
}

void GpuDevice::EmitWith(GpuFamily family, double value, std::string_view k1, std::string_view v1,
                         std::string_view k2, std::string_view v2) {
  out_->push_back(
      GpuSample{family, Sample{label_cache_.With(LabelsOf(family), {{k1, v1}, {k2, v2}}), value, Subject()}});
}

void GpuDevice::EmitMig(GpuFamily family, double value, const MigInstance& instance) {
  EmitMig(family, value, instance, instance.labels);
}

void GpuDevice::EmitMig(GpuFamily family, double value, const MigInstance& instance, const Labels& labels) {
  SampleSubject subject = Subject();
  subject.gpu_instance = static_cast<int32_t>(instance.mig.gpu_instance_id);
  out_->push_back(GpuSample{family, Sample{labels, value, subject}});
}

GpuDevice::ReadOutcome GpuDevice::Read(GpuSampleBuffer* out) {
  out_ = out;
  lost_ = false;
  // Cheap calls first: a lost GPU shows on the first one and the rest are skipped.
  ReadClocksAndTemperature();
  ReadPower();
  ReadUtilization();
  ReadMemory();
  ReadPcie();
  ReadEcc();
  ReadClockEvents();
  ReadFieldValues();
  ReadNvlinks();
  ReadProcesses();
  ReadGpm();
  ReadMig();
  label_cache_.EndCycle();
  out_ = nullptr;
  return lost_ ? ReadOutcome::kLost : ReadOutcome::kOk;
}

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
      if (!pcie_from_gpm_) {
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

void GpuDevice::ReadGpm() {
  if (gpm_ == nullptr || !Enabled(GpuProbe::kGpm)) return;
  if (!Check(GpuProbe::kGpm, gpm_->Take(&gpm_values_))) {
    if (Disabled(GpuProbe::kGpm)) pcie_from_gpm_ = false;
    return;
  }
  EmitGpm(gpm_values_, nullptr, true);
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
    if (instance.gpm != nullptr && Enabled(GpuProbe::kMigGpm) &&
        Check(GpuProbe::kMigGpm, instance.gpm->Take(&gpm_values_))) {
      EmitGpm(gpm_values_, &instance, false);
    }
  }
}

}  // namespace gpuscope
