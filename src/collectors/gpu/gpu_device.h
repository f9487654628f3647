// GpuDevice: one GPU as the collector sees it: the identity read once at init (labels built once), the
// fields found unsupported on this GPU (disabled for good), GPM and MIG state, and Read(), which makes
// every NVML call of one collection cycle and appends the samples to a buffer.
//
// A missing symbol (old driver) or NVML_ERROR_NOT_SUPPORTED disables that field for this GPU only and is
// logged once (debug level, core logger); any other error skips the field for this cycle;
// NVML_ERROR_GPU_IS_LOST ends the cycle for the GPU (ReadOutcome::kLost).
//
// Thread-safety: Read() is called by one thread at a time (the GPU's worker); identity() and the label
// accessors are immutable after Open() and safe from any thread.
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/collectors/gpu/compat.h"
#include "src/collectors/gpu/dcgm_backend.h"
#include "src/collectors/gpu/field_table.h"
#include "src/collectors/gpu/gpm.h"
#include "src/collectors/gpu/labels.h"
#include "src/core/label_cache.h"
#include "src/core/metric.h"
#include "src/core/status.h"
#include "src/node/profiling_pause.h"
#include "src/platform/nvml/nvml_library.h"

namespace gpuscope {

// One sample of one family, as a worker produces it; the collector groups them into families. The
// sample's subject names the GPU (and MIG instance, process) it is about.
struct GpuSample {
  GpuFamily family;
  Sample sample;
};
using GpuSampleBuffer = std::vector<GpuSample>;

// What every GPU of the node shares.
struct GpuNodeContext {
  DcgmCompat compat = DcgmCompat::kDcgm3;
  HostLabel host;
  std::string driver_version;
  std::string nvml_version;
  // DCGM, when --dcgm is not off: the profiling fields of GPUs without GPM (or of all with
  // prefer_dcgm_profiling) and the health watches. Null: NVML only.
  std::shared_ptr<const DcgmBackend> dcgm;
  bool prefer_dcgm_profiling = false;
  // While paused the device takes no profiling samples (GPM or DCGM). Null: never paused.
  const ProfilingPause* pause = nullptr;
};

// NVML calls (or groups of calls) that can be disabled per GPU.
enum class GpuProbe : int {
  kSmClock,
  kMemClock,
  kGpuTemp,
  kMemoryTemp,
  kPowerUsage,
  kEnergy,
  kPowerLimit,
  kUtilization,
  kEncoder,
  kDecoder,
  kMemory,
  kPcieReplay,
  kPcieThroughput,
  kPcieLinkGen,
  kPcieLinkWidth,
  kEccSbeVolatile,
  kEccDbeVolatile,
  kEccSbeAggregate,
  kEccDbeAggregate,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kRemappedRows,
  kClockEvents,
  kViolationPower,
  kViolationThermal,
  kViolationSyncBoost,
  kViolationBoardLimit,
  kViolationLowUtil,
  kViolationReliability,
  kComputeProcesses,
  kGraphicsProcesses,
  kFieldValues,
  kGpm,
  kMigMemory,
  kMigGpm,
  kCount
};
std::string_view GpuProbeName(GpuProbe probe);

class GpuDevice {
 public:
  // Reads the static identity of GPU `index`. Returns the device, or null with `*status` set when NVML
  // gives no handle for it. `node` must outlive the device.
  static std::unique_ptr<GpuDevice> Open(std::shared_ptr<const NvmlLibrary> nvml, unsigned int index,
                                         const GpuNodeContext& node, Status* status);
  ~GpuDevice();

  enum class ReadOutcome { kOk, kLost };
  // Makes this cycle's NVML calls and appends their samples to `out`. kLost when NVML reported
  // GPU_IS_LOST (the samples appended before that are still valid).
  ReadOutcome Read(GpuSampleBuffer* out);

  const GpuIdentity& identity() const { return identity_; }
  nvmlDevice_t handle() const { return handle_; }
  // Common labels without and with the (empty) MIG slots.
  const Labels& labels() const { return labels_; }
  const Labels& labels_with_mig_slots() const { return labels_mig_slots_; }
  bool mig_enabled() const { return mig_enabled_; }
  // The MIG GPU instances found at open (immutable after Open()).
  struct MigIdentity {
    unsigned int gpu_instance_id = 0;
    std::string profile;
    std::vector<std::string> uuids;  // of its MIG devices, one per compute instance ("MIG-...")
  };
  const std::vector<MigIdentity>& mig_identities() const { return mig_identities_; }
  // Whether `probe` has been disabled on this GPU (unsupported or missing). Racy when read while the
  // worker runs Read(); meant for logs and tests after a cycle.
  bool Disabled(GpuProbe probe) const { return disabled_.test(static_cast<size_t>(probe)); }

 private:
  struct MigInstance {
    nvmlDevice_t handle = nullptr;
    MigInstanceLabels mig;
    Labels labels;
    std::vector<std::string> uuids;  // of the instance's MIG devices (one per compute instance)
    Labels info_labels;              // labels + mig_uuid, for gpuscope_gpu_mig_instance_info
    std::unique_ptr<GpmSampler> gpm;
  };
  struct Link {
    unsigned int id = 0;
    std::string label;     // "0".."17"
    uint8_t disabled = 0;  // bit per LinkProbe
  };

  GpuDevice(std::shared_ptr<const NvmlLibrary> nvml, nvmlDevice_t handle, const GpuNodeContext& node);
  void ReadIdentity(unsigned int index);
  void DiscoverLinks();
  void DiscoverMig();

  // Success: true. NOT_SUPPORTED / FUNCTION_NOT_FOUND: disables `probe` (logged once, debug), false.
  // GPU_IS_LOST: marks the cycle lost, false. Other errors: false (skipped this cycle).
  bool Check(GpuProbe probe, nvmlReturn_t result);
  bool Enabled(GpuProbe probe) const { return !lost_ && !disabled_.test(static_cast<size_t>(probe)); }
  bool CheckLink(Link& link, int link_probe, nvmlReturn_t result);

  // The device's labels for `family` (with the empty MIG slots where the family has them).
  const Labels& LabelsOf(GpuFamily family) const;
  void Emit(GpuFamily family, double value);
  void EmitWith(GpuFamily family, double value, std::string_view k1, std::string_view v1);
  void EmitWith(GpuFamily family, double value, std::string_view k1, std::string_view v1, std::string_view k2,
                std::string_view v2);
  void EmitMig(GpuFamily family, double value, const MigInstance& instance);
  void EmitMig(GpuFamily family, double value, const MigInstance& instance, const Labels& labels);

  void ReadClocksAndTemperature();
  void ReadPower();
  void ReadUtilization();
  void ReadMemory();
  void ReadPcie();
  void ReadEcc();
  void ReadClockEvents();
  void ReadFieldValues();
  void ReadNvlinks();
  void ReadProcesses();
  // Picks this cycle's source of the profiling fields (none while paused) and reads DCGM's values.
  void ChooseProfilingSource();
  void ReadGpm();
  void ReadMig();
  void ReadDcgmHealth();
  void EmitGpm(const GpmValues& values, const MigInstance* mig, bool whole_gpu);
  SampleSubject Subject() const { return {static_cast<int32_t>(identity_.index), SampleSubject::kNone, 0}; }

  std::shared_ptr<const NvmlLibrary> nvml_;
  nvmlDevice_t handle_;
  const GpuNodeContext& node_;
  const std::vector<GpuFamilySpec>& specs_;
  GpuIdentity identity_;
  Labels labels_;
  Labels labels_mig_slots_;
  std::bitset<static_cast<size_t>(GpuProbe::kCount)> disabled_;
  bool lost_ = false;
  GpuSampleBuffer* out_ = nullptr;
  LabelSetCache label_cache_;  // the device's labels + a link, reason, direction or process

  unsigned int max_pcie_gen_ = 0;  // 0: unknown
  unsigned int max_pcie_width_ = 0;
  bool mig_enabled_ = false;
  std::vector<Link> links_;
  std::vector<MigInstance> mig_instances_;
  std::vector<MigIdentity> mig_identities_;
  std::unique_ptr<GpmSampler> gpm_;  // null when GPM is unsupported
  GpmValues gpm_values_;

  // Reused buffers (no allocation per cycle once grown).
  std::vector<nvmlFieldValue_t> field_values_;
  std::vector<nvmlProcessInfo_t> process_infos_;
  struct GpuProcessEntry {
    unsigned int pid = 0;
    unsigned long long bytes = 0;
    unsigned int gpu_instance_id = 0;
  };
  static constexpr unsigned int kNoGpuInstance = 0xFFFFFFFFu;  // NVML's value when MIG is off
  std::vector<GpuProcessEntry> processes_;
  bool pcie_from_gpm_ = false;  // DCGM_FI_PROF_PCIE_* from GPM (Hopper+) rather than PCIe throughput
  enum class ProfilingSource { kNone, kGpm, kDcgm };
  ProfilingSource profiling_source_ = ProfilingSource::kNone;  // this cycle's
  GpmValues dcgm_values_;                                      // this cycle's, with kDcgm
  DcgmGpuHealth dcgm_health_;
};

}  // namespace gpuscope
