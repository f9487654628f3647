// The XID catalog: what each NVIDIA driver Xid code means, how bad it is and what an operator should do,
// as a table kept in the repository (xid_catalog.cc says where each entry comes from). The XID
// classifier uses it to fill the name, action and severity of every xid event.
//
// Thread-safety: read-only static data; all functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// The recommended immediate action, a small fixed vocabulary (the "action" field of xid events).
enum class XidAction { kIgnore, kRestartApp, kResetGpu, kReboot, kContactSupport };

// "ignore", "restart_app", "reset_gpu", "reboot", "contact_support".
std::string_view XidActionName(XidAction action);

// The severity the catalog gives an action: ignore -> warning, restart_app -> error, reset_gpu, reboot and
// contact_support -> critical (an XID that needs a person or a reset should page). For XIDs whose action
// is only known from the message (154).
EventSeverity XidActionSeverity(XidAction action);

struct XidInfo {
  uint32_t code = 0;
  std::string_view name;         // NVIDIA's mnemonic, e.g. "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
  std::string_view description;  // a short human description, e.g. "GPU has fallen off the bus"
  XidAction action = XidAction::kContactSupport;
  EventSeverity severity = EventSeverity::kError;
};

// The catalog entry for `code`. An unknown code returns an entry named "UNKNOWN" with action
// contact_support and severity error: NVIDIA's catalog files every code it does not document further
// under CONTACT_SUPPORT, and an XID we cannot interpret should reach a human rather than be dropped.
XidInfo LookupXid(uint32_t code);

// Whether `code` has its own entry (false for codes LookupXid answers with the "UNKNOWN" entry).
bool IsKnownXid(uint32_t code);

// Every catalog entry, sorted by code (for docs and tests).
std::span<const XidInfo> XidCatalog();

}  // namespace gpuscope
