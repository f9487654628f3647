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

bool DisablesField(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string FromBuffer(const char* buffer, size_t size) { return std::string(buffer, strnlen(buffer, size)); }

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
  out_->push_back(
      GpuSample{family, Sample{label_cache_.With(LabelsOf(family), {{k1, v1}}), value, Subject()}});
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
  ChooseProfilingSource();
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
  ReadDcgmHealth();
  label_cache_.EndCycle();
  out_ = nullptr;
  return lost_ ? ReadOutcome::kLost : ReadOutcome::kOk;
}

}  // namespace gpuscope
