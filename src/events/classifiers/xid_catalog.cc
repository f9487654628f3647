#include "src/events/classifiers/xid_catalog.h"

#include <algorithm>
#include <array>

namespace gpuscope {
namespace {

using A = XidAction;
using S = EventSeverity;

// Sources (facts read, descriptions written in our own words):
//  [C] NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (Ampere and newer),
//      https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html : mnemonic and the
//      "Resolution Bucket (Immediate Action)" column. Every row below was checked against it on 2026-11-29
//      (the page as stored in the search index: its opening rows directly, the full table, including
//      the "XID 144-150 Decode" and "Fault Resolution Buckets" sheets, from a stored text copy of the same
//      page; every row was also matched against a second, independent transcription of the table, and
//      the two agree). The catalog at that date runs to Xid 172; 162-172 have no immediate action yet and
//      are left to the unknown-code entry.
//  [P] NVIDIA, "Dynamic Page Retirement" (docs.nvidia.com/deploy/dynamic-page-retirement): Xid 48 = double
//      bit ECC, 63 = page retired (reload to activate), 64 = retirement failed. Not re-read on 2026-11-29;
//      [C] alone decides the action.
//  [H] NVIDIA Health Validation, Xid checks (docs.nvidia.com/health-validation/reference/checks/xid):
//      Xid 46 and 48 are CRITICAL, drain + reset_gpu (re-read 2026-11-29, agrees with [C]).
//  [D] NVIDIA open-gpu-kernel-modules, nverror.h: the driver's own #define names, used to confirm the
//      spelling of mnemonics (31 ..._MMU_ERR_FLT, 48 ROBUST_CHANNEL_GPU_ECC_DBE).
//
// How the catalog's buckets map to our actions:
//   RESTART_APP -> restart_app      RESET_GPU -> reset_gpu      IGNORE -> ignore
//   RESTART_BM (restart bare metal), RESTART_VM (restart the VM that owns the GPU) -> reboot
//   CONTACT_SUPPORT -> contact_support
//   CHECK_MECHANICALS (reseat / reconnect the board), UPDATE_SWFW (update driver or firmware)
//       -> contact_support: a person has to act, no restart fixes it.
//   CHECK_UVM ("reset the GPU if UVM/vGPU is in use, else ignore") -> reset_gpu: every CUDA node loads
//       nvidia-uvm, so the reset branch is the one that applies to us.
//   WORKFLOW_XID_45 -> ignore: alongside other Xids it is ignored in favour of theirs; alone the workflow
//       asks for a fabric manager restart, which our vocabulary cannot say.
//   WORKFLOW_XID_48 -> reset_gpu (alone: reset; with 63/64: drain, then reset).
//   WORKFLOW_NVLINK_ERR (74) -> reset_gpu (the catalog: a GPU reset or node reboot clears it).
//   WORKFLOW_NVLINK5_ERR (144-150) -> the most severe action that code's rows in the catalog's
//       "XID 144-150 Decode" sheet reach: reset_gpu for 144, 145, 146, 149, 150 (their fatal sub-codes);
//       ignore for 147 and 148, whose every decoded row is IGNORE.
//   XID_154 (154) -> ignore here; the classifier takes the action from the message text.
// Rows the catalog marks "Unused" on Ampere and newer are left out (they get the unknown-code entry),
// except 61, which an older table here already named: it keeps its name with the unknown-code treatment.
// Severity is ours and follows the action: ignore -> warning (info for test messages), restart_app ->
// error, reset_gpu / reboot / contact_support -> critical; 61 is error like any unknown code.
constexpr std::array kCatalog = {
    XidInfo{8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Bad push buffer stream sent to the graphics engine",
            A::kRestartApp, S::kError},  // [C] added 2026-11-29
    // NVIDIA gives two names for 13 (the driver defines both); we report the first.
    XidInfo{13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Illegal push buffer stream sent to the graphics engine",
            A::kRestartApp, S::kError},  // [C] added 2026-11-29
    XidInfo{31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", A::kRestartApp,
            S::kError},  // [C][D] mnemonic changed 2026-11-29 (was ..._MMU_ERR)
    XidInfo{32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD",
            "Firmware met a method it does not implement", A::kIgnore, S::kWarning},  // [C] added 2026-11-29
    XidInfo{38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Firmware watchdog timeout", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{39, "ROBUST_CHANNEL_CE0_ERROR", "Copy engine 0 exception", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{40, "ROBUST_CHANNEL_CE1_ERROR", "Copy engine 1 exception", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{41, "ROBUST_CHANNEL_CE2_ERROR", "Copy engine 2 exception", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    // The application already hit a fault and was stopped; the GPU itself is fine.
    XidInfo{43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (channel reset)",
            A::kIgnore, S::kWarning},  // [C]
    XidInfo{44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics engine fault during a context switch",
            A::kIgnore, S::kWarning},  // [C] added 2026-11-29
    XidInfo{45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after earlier errors", A::kIgnore,
            S::kWarning},  // [C] WORKFLOW_XID_45, see the mapping above
    XidInfo{46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", A::kResetGpu,
            S::kCritical},  // [C][H]
    XidInfo{48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double bit ECC error", A::kResetGpu,
            S::kCritical},  // [C][D][P][H] WORKFLOW_XID_48; mnemonic changed 2026-11-29 (was ..._DBE_ERROR)
    XidInfo{54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power not connected to the board",
            A::kContactSupport, S::kCritical},  // [C] CHECK_MECHANICALS; added 2026-11-29
    XidInfo{60, "ROBUST_CHANNEL_SEC2_ERROR", "SEC2 engine exception", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    // "Unused" on Ampere and newer (bucket CONTACT_SUPPORT like every unused code). Changed 2026-11-29 from
    // reset_gpu/critical to the unknown-code treatment.
    XidInfo{61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint (not used on Ampere and newer)",
            A::kContactSupport, S::kError},                                                       // [C]
    XidInfo{62, "PMU_HALT_ERROR", "Internal micro-controller halt", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{63, "INFOROM_DRAM_RETIREMENT_EVENT", "ECC row remapping or page retirement recorded", A::kIgnore,
            S::kWarning},  // [C][P] action changed 2026-11-29 (was reset_gpu): NVIDIA's bucket is IGNORE
    XidInfo{64, "INFOROM_DRAM_RETIREMENT_FAILURE", "ECC row remapping or page retirement failed",
            A::kResetGpu, S::kCritical},  // [C][P] severity changed 2026-11-29 (was error)
    XidInfo{66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Driver made an illegal register access",
            A::kIgnore, S::kWarning},  // [C] added 2026-11-29
    XidInfo{67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Driver made an illegal access (verification)",
            A::kIgnore, S::kWarning},  // [C] added 2026-11-29
    XidInfo{68, "ROBUST_CHANNEL_NVDEC0_ERROR", "Video decoder 0 exception", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics engine class error", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{70, "ROBUST_CHANNEL_CE3_ERROR", "Copy engine 3 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{71, "ROBUST_CHANNEL_CE4_ERROR", "Copy engine 4 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{72, "ROBUST_CHANNEL_CE5_ERROR", "Copy engine 5 error", A::kRestartApp,
            S::kError},                                                       // [C] added 2026-11-29
    XidInfo{74, "NVLINK_ERROR", "NVLink error", A::kResetGpu, S::kCritical},  // [C] WORKFLOW_NVLINK_ERR
    XidInfo{75, "ROBUST_CHANNEL_CE6_ERROR", "Copy engine 6 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{76, "ROBUST_CHANNEL_CE7_ERROR", "Copy engine 7 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{77, "ROBUST_CHANNEL_CE8_ERROR", "Copy engine 8 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{78, "VGPU_START_ERROR", "A vGPU could not be started", A::kContactSupport,
            S::kCritical},  // [C] UPDATE_SWFW; added 2026-11-29
    XidInfo{79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", A::kReboot,
            S::kCritical},  // [C] RESTART_BM
    XidInfo{80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Push buffer data reached the GPU corrupted", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{82, "ROBUST_CHANNEL_NVJPG0_ERROR", "JPEG engine 0 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{83, "ROBUST_CHANNEL_NVDEC1_ERROR", "Video decoder 1 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{84, "ROBUST_CHANNEL_NVDEC2_ERROR", "Video decoder 2 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{85, "ROBUST_CHANNEL_CE9_ERROR", "Copy engine 9 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{86, "ROBUST_CHANNEL_OFA0_ERROR", "Optical flow engine 0 exception", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{88, "ROBUST_CHANNEL_NVDEC3_ERROR", "Video decoder 3 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{89, "ROBUST_CHANNEL_NVDEC4_ERROR", "Video decoder 4 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", A::kIgnore,
            S::kWarning},  // [C]
    XidInfo{93, "INFOROM_ERASE_LIMIT_EXCEEDED", "InfoROM write refused: provisioned wear limit reached",
            A::kIgnore, S::kWarning},  // [C] added 2026-11-29
    XidInfo{94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", A::kResetGpu,
            S::kCritical},  // [C]
    XidInfo{96, "ROBUST_CHANNEL_NVDEC5_ERROR", "Video decoder 5 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{97, "ROBUST_CHANNEL_NVDEC6_ERROR", "Video decoder 6 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{98, "ROBUST_CHANNEL_NVDEC7_ERROR", "Video decoder 7 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{99, "ROBUST_CHANNEL_NVJPG1_ERROR", "JPEG engine 1 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{100, "ROBUST_CHANNEL_NVJPG2_ERROR", "JPEG engine 2 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{101, "ROBUST_CHANNEL_NVJPG3_ERROR", "JPEG engine 3 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{102, "ROBUST_CHANNEL_NVJPG4_ERROR", "JPEG engine 4 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{103, "ROBUST_CHANNEL_NVJPG5_ERROR", "JPEG engine 5 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{104, "ROBUST_CHANNEL_NVJPG6_ERROR", "JPEG engine 6 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{105, "ROBUST_CHANNEL_NVJPG7_ERROR", "JPEG engine 7 error", A::kRestartApp,
            S::kError},                                                                // [C] added 2026-11-29
    XidInfo{106, "SMBPBI_TEST_MESSAGE", "SMBPBI test message", A::kIgnore, S::kInfo},  // [C] added 2026-11-29
    XidInfo{107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI test message (silent)", A::kIgnore,
            S::kInfo},  // [C] added 2026-11-29
    XidInfo{109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout", A::kResetGpu,
            S::kCritical},  // [C] action changed 2026-11-29 (was restart_app): NVIDIA's bucket is RESET_GPU
    XidInfo{110, "SEC_FAULT_ERROR", "Security fault", A::kResetGpu, S::kCritical},  // [C] added 2026-11-29
    XidInfo{119, "GSP_RPC_TIMEOUT", "GSP firmware RPC timeout", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{120, "GSP_ERROR", "GSP firmware error", A::kResetGpu, S::kCritical},              // [C]
    XidInfo{121, "C2C_ERROR", "C2C link corrected error", A::kIgnore, S::kWarning},           // [C]
    XidInfo{126, "ROBUST_CHANNEL_CE10_ERROR", "Copy engine 10 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{127, "ROBUST_CHANNEL_CE11_ERROR", "Copy engine 11 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{128, "ROBUST_CHANNEL_CE12_ERROR", "Copy engine 12 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{129, "ROBUST_CHANNEL_CE13_ERROR", "Copy engine 13 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{130, "ROBUST_CHANNEL_CE14_ERROR", "Copy engine 14 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{131, "ROBUST_CHANNEL_CE15_ERROR", "Copy engine 15 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{132, "ROBUST_CHANNEL_CE16_ERROR", "Copy engine 16 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{133, "ROBUST_CHANNEL_CE17_ERROR", "Copy engine 17 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{134, "ROBUST_CHANNEL_CE18_ERROR", "Copy engine 18 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{135, "ROBUST_CHANNEL_CE19_ERROR", "Copy engine 19 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{136, "ALI_TRAINING_FAIL", "NVLink link training failed", A::kResetGpu,
            S::kCritical},  // [C] added 2026-11-29
    XidInfo{137, "NVLINK_PRIV_ERR", "Illegal NVLink peer access (privilege error)", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{139, "ROBUST_CHANNEL_OFA1_ERROR", "Optical flow engine 1 error", A::kRestartApp,
            S::kError},  // [C] added 2026-11-29
    XidInfo{140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Unrecovered ECC error", A::kResetGpu,
            S::kCritical},  // [C] mnemonic changed 2026-11-29 (was ECC_UNRECOVERABLE_ERROR)
    XidInfo{141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA fast path error", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{142, "ROBUST_CHANNEL_NVENC3_ERROR", "Video encoder 3 error", A::kContactSupport,
            S::kCritical},  // [C] added 2026-11-29
    XidInfo{143, "GPU_INIT_ERROR", "GPU initialisation failure", A::kResetGpu,
            S::kCritical},  // [C] mnemonic changed 2026-11-29 (was GPU_INIT_FAILURE)
    // 144-150: WORKFLOW_NVLINK5_ERR, see the mapping above.
    XidInfo{144, "NVLINK_SAW_ERROR", "NVLink SAW error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{145, "NVLINK_RLW_ERROR", "NVLink RLW error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{146, "NVLINK_TLW_ERROR", "NVLink TLW error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{147, "NVLINK_TREX_ERROR", "NVLink TREX error", A::kIgnore,
            S::kWarning},  // [C] action changed 2026-11-29 (was reset_gpu)
    XidInfo{148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink NVLPW control error", A::kIgnore,
            S::kWarning},  // [C] action and mnemonic changed 2026-11-29 (were reset_gpu, NVLINK_NVLPW_ERROR)
    XidInfo{149, "NVLINK_NETIR_ERROR", "NVLink NETIR error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{150, "NVLINK_MSE_ERROR", "NVLink MSE error", A::kResetGpu, S::kCritical},      // [C]
    XidInfo{151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation error", A::kReboot,
            S::kCritical},  // [C] RESTART_VM; added 2026-11-29
    XidInfo{152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU error", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    // XID_154: the action depends on the message ("... changed from 0x0 (None) to 0x1 (Reset Required)");
    // the XID classifier refines it from the text. Alone it asks for nothing.
    XidInfo{154, "GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed", A::kIgnore,
            S::kWarning},  // [C]
    XidInfo{155, "NVLINK_SW_DEFINED_ERROR", "NVLink link taken down on purpose by software", A::kResetGpu,
            S::kCritical},  // [C] added 2026-11-29
    XidInfo{156, "RESOURCE_RETIREMENT_EVENT", "GPU resource retired", A::kResetGpu,
            S::kCritical},  // [C] added 2026-11-29
    XidInfo{157, "RESOURCE_RETIREMENT_FAILURE", "GPU resource retirement failed (no spares left)", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout", A::kResetGpu,
            S::kCritical},  // [C] added 2026-11-29
    XidInfo{159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "C2C CHI non-data error", A::kResetGpu,
            S::kCritical},  // [C] CHECK_UVM; added 2026-11-29
    XidInfo{160, "CHANNEL_RETIREMENT_EVENT", "GPU channel retired", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
    XidInfo{161, "CHANNEL_RETIREMENT_FAILURE", "GPU channel retirement failed", A::kIgnore,
            S::kWarning},  // [C] added 2026-11-29
};

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const XidInfo& a, const XidInfo& b) { return a.code < b.code; }));

}  // namespace

EventSeverity XidActionSeverity(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
      return EventSeverity::kWarning;
    case XidAction::kRestartApp:
      return EventSeverity::kError;
    case XidAction::kResetGpu:
    case XidAction::kReboot:
    case XidAction::kContactSupport:
      return EventSeverity::kCritical;
  }
  return EventSeverity::kCritical;
}

std::string_view XidActionName(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
      return "ignore";
    case XidAction::kRestartApp:
      return "restart_app";
    case XidAction::kResetGpu:
      return "reset_gpu";
    case XidAction::kReboot:
      return "reboot";
    case XidAction::kContactSupport:
      return "contact_support";
  }
  return "contact_support";
}

XidInfo LookupXid(uint32_t code) {
  auto it = std::lower_bound(kCatalog.begin(), kCatalog.end(), code,
                             [](const XidInfo& info, uint32_t c) { return info.code < c; });
  if (it != kCatalog.end() && it->code == code) return *it;
  return XidInfo{code, "UNKNOWN", "Unknown Xid", XidAction::kContactSupport, EventSeverity::kError};
}

bool IsKnownXid(uint32_t code) { return LookupXid(code).name != "UNKNOWN"; }

std::span<const XidInfo> XidCatalog() { return kCatalog; }

}  // namespace gpuscope
