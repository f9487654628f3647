#include "src/collectors/gpu/field_table.h"

#include <string_view>

#include "src/collectors/gpu/clock_reasons.h"

namespace gpuscope {
namespace {

struct Builder {
  std::vector<GpuFamilySpec> specs = std::vector<GpuFamilySpec>(kGpuFamilyCount);

  GpuFamilySpec& Add(GpuFamily family, std::string name, MetricType type, std::string help,
                     std::string source, std::vector<std::string> labels = {}, std::string unit = "") {
    GpuFamilySpec& spec = specs[static_cast<size_t>(family)];
    spec.description.name = std::move(name);
    spec.description.type = type;
    spec.description.help = std::move(help);
    spec.description.unit = std::move(unit);
    spec.description.labels = std::move(labels);
    spec.description.source = std::move(source);
    return spec;
  }
  void Mig(GpuFamily family) {
    GpuFamilySpec& spec = specs[static_cast<size_t>(family)];
    spec.mig_labels = true;
    spec.description.labels.insert(spec.description.labels.begin(), {"GPU_I_PROFILE", "GPU_I_ID"});
  }
};

std::vector<GpuFamilySpec> Build(DcgmCompat compat) {
  using F = GpuFamily;
  constexpr MetricType G = MetricType::kGauge;
  constexpr MetricType C = MetricType::kCounter;
  Builder b;
  // dcgm-exporter default counters: name, type and help exactly as etc/default-counters.csv.
  b.Add(F::kSmClock, "DCGM_FI_DEV_SM_CLOCK", G, "SM clock frequency (in MHz).",
        "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)");
  b.Add(F::kMemClock, "DCGM_FI_DEV_MEM_CLOCK", G, "Memory clock frequency (in MHz).",
        "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)");
  b.Add(F::kMemoryTemp, "DCGM_FI_DEV_MEMORY_TEMP", G, "Memory temperature (in C).",
        "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)");
  b.Add(F::kGpuTemp, "DCGM_FI_DEV_GPU_TEMP", G, "GPU temperature (in C).",
        "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)");
  b.Add(F::kPowerUsage, "DCGM_FI_DEV_POWER_USAGE", G, "Power draw (in W).",
        "nvmlDeviceGetPowerUsage (mW / 1000)");
  b.Add(F::kTotalEnergyConsumption, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", C,
        "Total energy consumption since boot (in mJ).", "nvmlDeviceGetTotalEnergyConsumption");
  b.Add(F::kPcieReplayCounter, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", C, "Total number of PCIe retries.",
        "nvmlDeviceGetPcieReplayCounter");
  b.Add(F::kGpuUtil, "DCGM_FI_DEV_GPU_UTIL", G, "GPU utilization (in %).",
        "nvmlDeviceGetUtilizationRates().gpu");
  b.Add(F::kMemCopyUtil, "DCGM_FI_DEV_MEM_COPY_UTIL", G, "Memory utilization (in %).",
        "nvmlDeviceGetUtilizationRates().memory");
  b.Add(F::kEncUtil, "DCGM_FI_DEV_ENC_UTIL", G, "Encoder utilization (in %).",
        "nvmlDeviceGetEncoderUtilization");
  b.Add(F::kDecUtil, "DCGM_FI_DEV_DEC_UTIL", G, "Decoder utilization (in %).",
        "nvmlDeviceGetDecoderUtilization");
  b.Add(F::kXidErrors, "DCGM_FI_DEV_XID_ERRORS", G, "Value of the last XID error encountered.",
        "nvmlEventSetWait_v2 (nvmlEventTypeXidCriticalError); 0 before any. Kept for drop-in dashboards: "
        "alert on gpuscope_xid_errors_total instead");
  const bool v4 = compat == DcgmCompat::kDcgm49;
  b.Add(F::kFbFree, "DCGM_FI_DEV_FB_FREE", G,
        v4 ? "Framebuffer memory free (in MiB)." : "Frame buffer memory free (in MB).",
        "nvmlDeviceGetMemoryInfo_v2().free (whole MiB); per MIG instance on the MIG device handle");
  b.Mig(F::kFbFree);
  b.Add(F::kFbUsed, "DCGM_FI_DEV_FB_USED", G,
        v4 ? "Framebuffer memory used (in MiB)." : "Frame buffer memory used (in MB).",
        "nvmlDeviceGetMemoryInfo_v2().used (whole MiB); per MIG instance on the MIG device handle");
  b.Mig(F::kFbUsed);
  // In dcgm-exporter's current default counters; 3.x shipped it in its DCP list with the 3.x wording.
  b.Add(F::kFbReserved, "DCGM_FI_DEV_FB_RESERVED", G,
        v4 ? "Framebuffer memory reserved (in MiB)." : "Frame buffer memory reserved (in MB).",
        "nvmlDeviceGetMemoryInfo_v2().reserved (whole MiB); per MIG instance on the MIG device handle");
  b.Mig(F::kFbReserved);
  b.Add(F::kNvlinkBandwidthTotal, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", C,
        "Total number of NVLink bandwidth counters for all lanes.",
        "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX + _RX), summed over links; the "
        "unit is NVML's KiB, as DCGM reports it (gpuscope_nvlink_data_bytes_total has bytes)");
  b.Add(F::kUncorrectableRemappedRows, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", C,
        "Number of remapped rows for uncorrectable errors", "nvmlDeviceGetRemappedRows");
  b.Add(F::kCorrectableRemappedRows, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", C,
        "Number of remapped rows for correctable errors", "nvmlDeviceGetRemappedRows");
  b.Add(F::kRowRemapFailure, "DCGM_FI_DEV_ROW_REMAP_FAILURE", G, "Whether remapping of rows has failed",
        "nvmlDeviceGetRemappedRows");
  b.Add(
      F::kProfGrEngineActive, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", G,
      "Ratio of time the graphics engine is active.",
      "GPM NVML_GPM_METRIC_GRAPHICS_UTIL / 100 (Hopper and newer), else DCGM (--dcgm); per MIG instance too");
  b.Mig(F::kProfGrEngineActive);
  b.Add(F::kProfPipeTensorActive, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", G,
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        "GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL / 100 (Hopper and newer), else DCGM (--dcgm); per MIG instance "
        "too");
  b.Mig(F::kProfPipeTensorActive);
  b.Add(
      F::kProfDramActive, "DCGM_FI_PROF_DRAM_ACTIVE", G,
      "Ratio of cycles the device memory interface is active sending or receiving data.",
      "GPM NVML_GPM_METRIC_DRAM_BW_UTIL / 100 (Hopper and newer), else DCGM (--dcgm); per MIG instance too");
  b.Mig(F::kProfDramActive);
  b.Add(F::kProfPcieTxBytes, "DCGM_FI_PROF_PCIE_TX_BYTES", G,
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
        "GPM NVML_GPM_METRIC_PCIE_TX_PER_SEC (MiB/s * 1048576) on Hopper and newer; else DCGM (--dcgm); else "
        "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_TX_BYTES) (KB/s * 1024, a 20 ms sample)");
  b.Add(F::kProfPcieRxBytes, "DCGM_FI_PROF_PCIE_RX_BYTES", G,
        "The rate of data received over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
        "GPM NVML_GPM_METRIC_PCIE_RX_PER_SEC (MiB/s * 1048576) on Hopper and newer; else DCGM (--dcgm); else "
        "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_RX_BYTES) (KB/s * 1024, a 20 ms sample)");

  // DCGM fields that dcgm-exporter ships commented out; help as in its CSV.
  b.Add(F::kEccSbeVolTotal, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", C,
        "Total number of single-bit volatile ECC errors.",
        "nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE)");
  b.Add(F::kEccDbeVolTotal, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", C,
        "Total number of double-bit volatile ECC errors.",
        "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)");
  b.Add(F::kEccSbeAggTotal, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", C,
        "Total number of single-bit persistent ECC errors.",
        "nvmlDeviceGetTotalEccErrors(CORRECTED, AGGREGATE)");
  b.Add(F::kEccDbeAggTotal, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", C,
        "Total number of double-bit persistent ECC errors.",
        "nvmlDeviceGetTotalEccErrors(UNCORRECTED, AGGREGATE)");
  b.Add(F::kRetiredSbe, "DCGM_FI_DEV_RETIRED_SBE", C,
        "Total number of retired pages due to single-bit errors.",
        "nvmlDeviceGetRetiredPages(MULTIPLE_SINGLE_BIT_ECC_ERRORS) page count");
  b.Add(F::kRetiredDbe, "DCGM_FI_DEV_RETIRED_DBE", C,
        "Total number of retired pages due to double-bit errors.",
        "nvmlDeviceGetRetiredPages(DOUBLE_BIT_ECC_ERROR) page count");
  b.Add(F::kRetiredPending, "DCGM_FI_DEV_RETIRED_PENDING", C, "Total number of pages pending retirement.",
        "nvmlDeviceGetRetiredPagesPendingStatus (1 when a retirement waits for a GPU reset)");
  b.Add(F::kRowRemapPending, "DCGM_FI_DEV_ROW_REMAP_PENDING", G,
        "Whether remapping of rows is pending (1: reset the GPU to apply it).", "nvmlDeviceGetRemappedRows");
  b.Add(F::kNvlinkCrcFlitErrorCountTotal, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", C,
        "Total number of NVLink flow-control CRC errors.",
        "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_CRC_FLIT), summed over links");
  b.Add(F::kNvlinkCrcDataErrorCountTotal, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", C,
        "Total number of NVLink data CRC errors.",
        "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_CRC_DATA), summed over links");
  b.Add(F::kNvlinkReplayErrorCountTotal, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", C,
        "Total number of NVLink retries.",
        "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_REPLAY), summed over links");
  b.Add(F::kNvlinkRecoveryErrorCountTotal, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", C,
        "Total number of NVLink recovery errors.",
        "nvmlDeviceGetNvLinkErrorCounter(NVML_NVLINK_ERROR_DL_RECOVERY), summed over links");
  b.Add(F::kProfSmActive, "DCGM_FI_PROF_SM_ACTIVE", G,
        "The ratio of cycles an SM has at least 1 warp assigned.",
        "GPM NVML_GPM_METRIC_SM_UTIL / 100, else DCGM (--dcgm)");
  b.Mig(F::kProfSmActive);
  b.Add(F::kProfSmOccupancy, "DCGM_FI_PROF_SM_OCCUPANCY", G,
        "The ratio of number of warps resident on an SM.",
        "GPM NVML_GPM_METRIC_SM_OCCUPANCY / 100, else DCGM (--dcgm)");
  b.Mig(F::kProfSmOccupancy);
  b.Add(F::kProfPipeFp64Active, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", G,
        "Ratio of cycles the fp64 pipes are active.",
        "GPM NVML_GPM_METRIC_FP64_UTIL / 100, else DCGM (--dcgm)");
  b.Mig(F::kProfPipeFp64Active);
  b.Add(F::kProfPipeFp32Active, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", G,
        "Ratio of cycles the fp32 pipes are active.",
        "GPM NVML_GPM_METRIC_FP32_UTIL / 100, else DCGM (--dcgm)");
  b.Mig(F::kProfPipeFp32Active);
  b.Add(F::kProfPipeFp16Active, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", G,
        "Ratio of cycles the fp16 pipes are active.",
        "GPM NVML_GPM_METRIC_FP16_UTIL / 100, else DCGM (--dcgm)");
  b.Mig(F::kProfPipeFp16Active);
  b.Add(F::kProfNvlinkTxBytes, "DCGM_FI_PROF_NVLINK_TX_BYTES", G,
        "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second.",
        "GPM NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC (MiB/s * 1048576), else DCGM (--dcgm)");
  b.Add(F::kProfNvlinkRxBytes, "DCGM_FI_PROF_NVLINK_RX_BYTES", G,
        "The rate of data received over NVLink, not including protocol headers, in bytes per second.",
        "GPM NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC (MiB/s * 1048576), else DCGM (--dcgm)");
  b.Add(F::kClocksEventReasons, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", G,
        "Current clock event (throttle) reasons as NVML's bitmask; see gpuscope_gpu_clock_event_active for "
        "one series per reason.",
        "nvmlDeviceGetCurrentClocksEventReasons (or ...ThrottleReasons on older drivers)");
  const std::string unit(ViolationUnit(compat));
  size_t i = 0;
  for (const ViolationPolicy& policy : ViolationPolicies()) {
    b.Add(static_cast<GpuFamily>(static_cast<size_t>(F::kPowerViolation) + i++),
          std::string(policy.dcgm_name), C,
          "Throttling duration due to " + std::string(policy.what) + " (in " + unit + ").",
          "nvmlDeviceGetViolationStatus().violationTime (ns" + std::string(unit == "us" ? " / 1000)" : ")"));
  }
  b.Add(F::kPcieLinkGen, "DCGM_FI_DEV_PCIE_LINK_GEN", G, "PCIe link generation currently negotiated.",
        "nvmlDeviceGetCurrPcieLinkGeneration");
  b.Add(F::kPcieLinkWidth, "DCGM_FI_DEV_PCIE_LINK_WIDTH", G, "PCIe link width (lanes) currently negotiated.",
        "nvmlDeviceGetCurrPcieLinkWidth");
  b.Add(F::kEnforcedPowerLimit, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", G,
        "Effective power limit the driver enforces (in W).", "nvmlDeviceGetEnforcedPowerLimit (mW / 1000)");

  // gpuscope's own families: base units, _total counters.
  b.Add(F::kGpuUp, "gpuscope_gpu_up", G,
        "1 when the GPU answered this cycle; 0 when it is lost (fell off the bus) or an NVML call did not "
        "return within the call deadline.",
        "every NVML call of the cycle");
  b.Add(F::kGpuInfo, "gpuscope_gpu_info", G, "GPU identity; always 1.",
        "nvmlDeviceGetSerial, nvmlSystemGetNVMLVersion, nvmlDeviceGetMigMode (read at init)",
        {"serial", "nvml_version", "mig_mode"});
  b.Add(F::kPcieLinkMaxGeneration, "gpuscope_gpu_pcie_link_max_generation", G,
        "Highest PCIe generation the GPU and its slot support; compare with DCGM_FI_DEV_PCIE_LINK_GEN.",
        "nvmlDeviceGetMaxPcieLinkGeneration");
  b.Add(F::kPcieLinkMaxWidth, "gpuscope_gpu_pcie_link_max_width", G,
        "Widest PCIe link (lanes) the GPU and its slot support; compare with DCGM_FI_DEV_PCIE_LINK_WIDTH.",
        "nvmlDeviceGetMaxPcieLinkWidth");
  b.Add(F::kPcieBytesPerSecond, "gpuscope_gpu_pcie_bytes_per_second", G,
        "PCIe throughput over NVML's last 20 ms sample, by direction (tx: GPU to host, rx: host to GPU).",
        "nvmlDeviceGetPcieThroughput (KB/s * 1024)", {"direction"});
  b.Add(F::kEnergyJoulesTotal, "gpuscope_gpu_energy_joules_total", C,
        "Energy the GPU consumed since the driver loaded.", "nvmlDeviceGetTotalEnergyConsumption (mJ / 1000)",
        {}, "joules");
  b.Add(F::kClockEventActive, "gpuscope_gpu_clock_event_active", G,
        "1 while the reason holds GPU clocks down (or, for gpu_idle, the GPU is idle), else 0.",
        "nvmlDeviceGetCurrentClocksEventReasons bits", {"reason"});
  b.Add(F::kClockEventSecondsTotal, "gpuscope_gpu_clock_event_seconds_total", C,
        "Time clocks were held below target by the policy (power, thermal, sync_boost, board_limit, "
        "low_utilization, reliability).",
        "nvmlDeviceGetViolationStatus().violationTime (ns / 1e9)", {"reason"}, "seconds");
  b.Add(F::kNvlinkUp, "gpuscope_nvlink_up", G, "1 when the NVLink link is active, else 0.",
        "nvmlDeviceGetNvLinkState", {"link"});
  b.Add(F::kNvlinkErrorsTotal, "gpuscope_nvlink_errors_total", C,
        "NVLink data-link errors per link: crc_flit (flow-control CRC), crc_data (data CRC), replay "
        "(retransmissions), recovery (link retraining), ecc_data.",
        "nvmlDeviceGetNvLinkErrorCounter", {"link", "counter"});
  b.Add(F::kNvlinkDataBytesTotal, "gpuscope_nvlink_data_bytes_total", C,
        "NVLink payload bytes per link and direction (tx, rx), without protocol overhead.",
        "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/_RX, scopeId=link) (KiB * 1024)",
        {"link", "direction"}, "bytes");
  b.Add(F::kProcessMemoryBytes, "gpuscope_gpu_process_memory_bytes", G,
        "GPU memory used by each process running on the GPU (compute and graphics).",
        "nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetGraphicsRunningProcesses_v3",
        {"pid", "GPU_I_ID"}, "bytes");
  b.Add(F::kProcesses, "gpuscope_gpu_processes", G, "Number of processes running on the GPU.",
        "nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetGraphicsRunningProcesses_v3");
  b.Add(F::kMigInstanceInfo, "gpuscope_gpu_mig_instance_info", G,
        "One series per MIG GPU instance, with the UUIDs of its MIG devices (comma-separated when several "
        "compute instances share it), the names CUDA_VISIBLE_DEVICES uses; always 1.",
        "nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetGpuInstanceId, nvmlDeviceGetName, "
        "nvmlDeviceGetUUID (read at init)",
        {"mig_uuid"});
  b.Mig(F::kMigInstanceInfo);
  b.Add(F::kXidErrorsTotal, "gpuscope_xid_errors_total", C,
        "XID errors the driver reported, by XID and the catalog's recommended action (ignore, restart_app, "
        "reset_gpu, reboot, contact_support); NVML events and kernel-log lines merged, each counted once; "
        "alert on increase().",
        "nvmlEventSetWait_v2 (nvmlEventTypeXidCriticalError) and NVRM Xid lines of the event sources "
        "(kmsg, journal, files); a GPU NVML does not show keeps its pci_bus_id and an empty gpu",
        {"xid", "action"});
  b.Add(F::kXidLastSeenTimestampSeconds, "gpuscope_xid_last_seen_timestamp_seconds", G,
        "When the XID was last reported (Unix time).",
        "nvmlEventSetWait_v2 (nvmlEventTypeXidCriticalError) and NVRM Xid lines of the event sources",
        {"xid", "action"}, "seconds");
  b.Add(
      F::kGpuProfilingInfo, "gpuscope_gpu_profiling_info", G,
      "Where this GPU's DCGM_FI_PROF_* fields come from now: source gpm (NVML GPM, Hopper and newer) or "
      "dcgm (DCGM's profiling module, --dcgm); absent while profiling is paused or has no source; always 1.",
      "GPM support (nvmlGpmQueryDeviceSupport), the DCGM backend's connection and --dcgm.prefer-profiling",
      {"source"});
  b.Add(F::kDcgmHealth, "gpuscope_dcgm_health", G,
        "DCGM's health watch result per system (pcie, memory, inforom, thermal, power, nvlink): 0 pass, "
        "1 warn, 2 fail.",
        "dcgmHealthCheck every 10 s on the systems of --dcgm.health", {"system"});
  b.Add(F::kDcgmHealthIncidentsTotal, "gpuscope_dcgm_health_incidents_total", C,
        "Health incidents DCGM reported, counted when first seen, by system and result (warn, fail); each "
        "is also a dcgm_health event.",
        "dcgmHealthCheck", {"system", "result"});
  b.Add(F::kDcgmUp, "gpuscope_dcgm_up", G,
        "Node-wide (Hostname only): 1 while the agent holds a working DCGM connection, by mode (embedded, "
        "hostengine); 0 while it reconnects; absent when DCGM is off or not installed.",
        "dcgmConnect_v2 or dcgmStartEmbedded", {"mode"});
  b.Add(F::kDcgmConnectsTotal, "gpuscope_dcgm_connects_total", C,
        "Node-wide: connections to DCGM made; more than one means nv-hostengine restarted or went away.",
        "dcgmConnect_v2 or dcgmStartEmbedded");
  b.Add(F::kProfilingPaused, "gpuscope_profiling_paused", G,
        "Node-wide: 1 while profiling is paused for a user's profiler (POST /api/v1/profiling/pause, "
        "gpuscope profile-pause): no GPM samples, DCGM profiling paused, no DCGM_FI_PROF_* series but PCIe "
        "bytes (from NVML's PCIe counters meanwhile).",
        "the agent's profiling pause");
  b.Add(F::kProfilingPauseExpiry, "gpuscope_profiling_pause_expiry_timestamp_seconds", G,
        "Node-wide: when the current profiling pause lifts by itself (Unix time); 0 when not paused.",
        "the agent's profiling pause", {}, "seconds");
  b.Add(F::kProfilingPausesTotal, "gpuscope_profiling_pauses_total", C,
        "Node-wide: profiling pauses asked since the agent started.", "the agent's profiling pause");
  return b.specs;
}

}  // namespace

const std::vector<GpuFamilySpec>& FamilySpecs(DcgmCompat compat) {
  static const std::vector<GpuFamilySpec> dcgm3 = Build(DcgmCompat::kDcgm3);
  static const std::vector<GpuFamilySpec> dcgm49 = Build(DcgmCompat::kDcgm49);
  return compat == DcgmCompat::kDcgm3 ? dcgm3 : dcgm49;
}

}  // namespace gpuscope
