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
//      "Resolution Bucket (Immediate Action)" column (RESTART_APP, RESET_GPU, RESTART_BM, IGNORE,
//      CONTACT_SUPPORT, WORKFLOW_*). RESTART_BM (restart bare metal) maps to our "reboot"; the WORKFLOW_*
//      buckets map to the action their workflow ends in.
//  [P] NVIDIA, "Dynamic Page Retirement" visibility page (docs.nvidia.com/deploy/dynamic-page-retirement):
//      Xid 48 = double bit ECC, 63 = page retired (reload to activate), 64 = retirement failed.
//  [H] NVIDIA Health Validation, Xid checks (docs.nvidia.com/health-validation/reference/checks/xid):
//      Xid 46 and 48 are CRITICAL, drain + reset_gpu.
// Severity is ours: ignore -> warning, restart_app -> error, reset_gpu/reboot -> critical, except where
// the entry says otherwise (a recorded row remap needs a reset only at the next convenient time).
constexpr std::array kCatalog = {
    XidInfo{8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR", "GPU memory page fault", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (channel reset)",
            A::kIgnore, S::kWarning},  // [C] the faulting application has already been stopped
    XidInfo{45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after earlier errors", A::kIgnore,
            S::kWarning},  // [C]
    XidInfo{46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", A::kResetGpu,
            S::kCritical},                                                                        // [H]
    XidInfo{48, "ROBUST_CHANNEL_DBE_ERROR", "Double bit ECC error", A::kResetGpu, S::kCritical},  // [C][P][H]
    XidInfo{61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint or warning", A::kResetGpu,
            S::kCritical},                                                                        // [C]
    XidInfo{62, "PMU_HALT_ERROR", "Internal micro-controller halt", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{63, "INFOROM_DRAM_RETIREMENT_EVENT", "ECC page retirement or row remapping recorded",
            A::kResetGpu, S::kWarning},  // [C][P] takes effect at the next GPU reset
    XidInfo{64, "INFOROM_DRAM_RETIREMENT_FAILURE", "ECC page retirement or row remapping failed",
            A::kResetGpu, S::kError},  // [C][P]
    XidInfo{68, "ROBUST_CHANNEL_NVDEC0_ERROR", "Video decoder exception", A::kRestartApp, S::kError},  // [C]
    XidInfo{69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics engine class error", A::kRestartApp,
            S::kError},                                                       // [C]
    XidInfo{74, "NVLINK_ERROR", "NVLink error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", A::kReboot,
            S::kCritical},  // [C] RESTART_BM
    XidInfo{92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", A::kIgnore,
            S::kWarning},  // [C]
    XidInfo{94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", A::kRestartApp,
            S::kError},  // [C]
    XidInfo{95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", A::kResetGpu,
            S::kCritical},  // [C]
    XidInfo{109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout", A::kRestartApp,
            S::kError},                                                                            // [C]
    XidInfo{119, "GSP_RPC_TIMEOUT", "GSP firmware RPC timeout", A::kResetGpu, S::kCritical},       // [C]
    XidInfo{120, "GSP_ERROR", "GSP firmware error", A::kResetGpu, S::kCritical},                   // [C]
    XidInfo{121, "C2C_ERROR", "C2C link corrected error", A::kIgnore, S::kWarning},                // [C]
    XidInfo{140, "ECC_UNRECOVERABLE_ERROR", "Unrecovered ECC error", A::kResetGpu, S::kCritical},  // [C]
    XidInfo{143, "GPU_INIT_FAILURE", "GPU initialisation failure", A::kResetGpu, S::kCritical},    // [C]
    XidInfo{144, "NVLINK_SAW_ERROR", "NVLink SAW error", A::kResetGpu, S::kCritical},              // [C]
    XidInfo{145, "NVLINK_RLW_ERROR", "NVLink RLW error", A::kResetGpu, S::kCritical},              // [C]
    XidInfo{146, "NVLINK_TLW_ERROR", "NVLink TLW error", A::kResetGpu, S::kCritical},              // [C]
    XidInfo{147, "NVLINK_TREX_ERROR", "NVLink TREX error", A::kResetGpu, S::kCritical},            // [C]
    XidInfo{148, "NVLINK_NVLPW_ERROR", "NVLink NVLPW error", A::kResetGpu, S::kCritical},          // [C]
    XidInfo{149, "NVLINK_NETIR_ERROR", "NVLink NETIR error", A::kResetGpu, S::kCritical},          // [C]
    XidInfo{150, "NVLINK_MSE_ERROR", "NVLink MSE error", A::kResetGpu, S::kCritical},              // [C]
    // [C] The action depends on the message ("... changed from 0x0 (None) to 0x1 (Reset Required)"); the
    // XID classifier refines it from the text. Alone it asks for nothing.
    XidInfo{154, "GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed", A::kIgnore, S::kWarning},
};

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const XidInfo& a, const XidInfo& b) { return a.code < b.code; }));

}  // namespace

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
