// Classifiers for NVIDIA driver error lines in the kernel log: GPU Xid events ("NVRM: Xid (PCI:...): 79,
// ...") and NVSwitch SXid events ("nvidia-nvswitch0: SXid (PCI:...): 12028, Non-fatal, ..."). Any
// dmesg/kmsg/syslog prefix before the marker is skipped. No I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// An "xid" event: fields pci_bus_id (NVML spelling "00000000:18:00.0", so it joins the GPU series), xid,
// name, action, [pid], [process], message; severity, name and action from the XID catalog
// (xid_catalog.h), the action of Xid 154 refined from its message. Returns nullopt when the line holds
// no Xid report or its address or code is malformed.
std::optional<Event> ClassifyXidLine(std::string_view line);

// An "sxid" event: fields nvswitch (the reporting device, e.g. "nvidia-nvswitch0"), pci_bus_id, sxid,
// fatal ("true"/"false"), action, message. Fatal -> critical with action reset_gpu (the GPUs behind the
// switch fabric need a reset), non-fatal -> warning with action ignore. Only the first line of a report
// (the one saying "Fatal" or "Non-fatal") is an event; the driver's continuation lines ("Severity ...",
// "Data {...}") and anything malformed return nullopt, so one report counts once.
std::optional<Event> ClassifySxidLine(std::string_view line);

}  // namespace gpuscope
