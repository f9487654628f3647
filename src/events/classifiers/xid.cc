// Formats: the NVIDIA kernel driver prints "NVRM: Xid (PCI:DDDD:BB:DD): CODE, [pid=PID, name=COMM, ]TEXT"
// (the pid/name pair since the R470-era drivers; pid may read '<unknown>'), older drivers
// "NVRM: Xid (DDDD:BB:DD): CODE, TEXT". NVSwitch driver: "nvidia-nvswitchN: SXid (PCI:DDDD:BB:DD.F):
// CODE, Fatal|Non-fatal, TEXT" followed by continuation lines with the same prefix.
#include "src/events/classifiers/xid.h"

#include <string>

#include "src/events/classifiers/kernel_text.h"
#include "src/events/classifiers/text.h"
#include "src/events/classifiers/xid_catalog.h"
#include "src/parsers/pci.h"

namespace gpuscope {
namespace {

using classifier_text::Find;
using classifier_text::ParseDecimal;
using kernel_text::CleanField;
using kernel_text::kMaxMessageBytes;
using kernel_text::kMaxNameBytes;
using kernel_text::LeadingDigits;

// Parses "(PCI:0000:18:00): 79, " starting at the '(' . On success returns the NVML bus id, the code and
// the text after "CODE," in `rest`.
struct Header {
  std::string pci_bus_id;
  uint32_t code = 0;
  std::string_view rest;
};

std::optional<Header> ParseHeader(std::string_view s) {
  if (s.empty() || s.front() != '(') return std::nullopt;
  size_t close = s.find(')');
  if (close > 40) return std::nullopt;  // npos too
  std::string_view addr = s.substr(1, close - 1);
  if (addr.starts_with("PCI:")) addr.remove_prefix(4);
  std::optional<PciAddress> pci = ParsePciAddress(addr);
  if (!pci && addr.size() <= 16) {
    // The driver leaves out the function ("0000:18:00"); NVML's id for a GPU always has function 0.
    std::string with_function(addr);
    with_function += ".0";
    pci = ParsePciAddress(with_function);
  }
  if (!pci) return std::nullopt;
  std::string_view after = s.substr(close + 1);
  if (!after.starts_with(": ")) return std::nullopt;
  after.remove_prefix(2);
  std::string_view digits = LeadingDigits(after);
  if (digits.size() > 6) return std::nullopt;
  std::optional<uint64_t> code = ParseDecimal(digits);
  if (!code) return std::nullopt;
  after.remove_prefix(digits.size());
  if (after.starts_with(',')) after.remove_prefix(1);
  while (after.starts_with(' ')) after.remove_prefix(1);
  return Header{pci->NvmlBusId(), static_cast<uint32_t>(*code), after};
}

// Takes "KEY=VALUE, " off the front of `s` when present; the value is unquoted.
std::optional<std::string_view> TakeKeyValue(std::string_view& s, std::string_view key) {
  if (!s.starts_with(key)) return std::nullopt;
  std::string_view v = s.substr(key.size());
  size_t end = v.find(", ");
  if (end > kMaxNameBytes * 2) return std::nullopt;  // npos too
  s = v.substr(end + 2);
  v = v.substr(0, end);
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
  return v;
}

// Xid 154's message names the new recovery action: "... to 0x2 (Node Reboot Required)".
XidAction RecoveryActionFromMessage(std::string_view message, XidAction fallback) {
  size_t to = message.rfind(" to ");
  if (to == std::string_view::npos) return fallback;
  std::string_view target = message.substr(to);
  if (classifier_text::Contains(target, "Reboot")) return XidAction::kReboot;
  if (classifier_text::Contains(target, "Reset")) return XidAction::kResetGpu;
  if (classifier_text::Contains(target, "Drain")) return XidAction::kResetGpu;
  if (classifier_text::Contains(target, "None")) return XidAction::kIgnore;
  return fallback;
}

}  // namespace

std::optional<Event> ClassifyXidLine(std::string_view line) {
  size_t pos = Find(line, "Xid (");
  // "SXid (" is the NVSwitch report: not ours. Look for a GPU report further on only if it is not.
  while (pos != std::string_view::npos && pos > 0 && line[pos - 1] == 'S') pos = Find(line, "Xid (", pos + 1);
  if (pos == std::string_view::npos) return std::nullopt;
  std::optional<Header> header = ParseHeader(line.substr(pos + 4));
  if (!header) return std::nullopt;

  std::string_view rest = header->rest;
  std::optional<std::string_view> pid = TakeKeyValue(rest, "pid=");
  std::optional<std::string_view> name = TakeKeyValue(rest, "name=");
  std::string message = CleanField(rest, kMaxMessageBytes);

  XidInfo info = LookupXid(header->code);
  XidAction action = info.action;
  EventSeverity severity = info.severity;
  if (header->code == 154) {
    action = RecoveryActionFromMessage(rest, action);
    severity = XidActionSeverity(action);
  }

  Event event;
  event.event_class = "xid";
  event.severity = severity;
  std::string code = std::to_string(header->code);
  event.summary = "XID " + code + " (" + std::string(info.name) + ") on " + header->pci_bus_id + ": " +
                  std::string(info.description);
  event.fields.emplace_back("pci_bus_id", header->pci_bus_id);
  event.fields.emplace_back("xid", code);
  event.fields.emplace_back("name", std::string(info.name));
  event.fields.emplace_back("action", std::string(XidActionName(action)));
  if (pid && ParseDecimal(*pid)) event.fields.emplace_back("pid", std::string(*pid));
  if (name && !name->empty() && *name != "<unknown>") {
    event.fields.emplace_back("process", CleanField(*name, kMaxNameBytes));
  }
  event.fields.emplace_back("message", std::move(message));
  return event;
}

std::optional<Event> ClassifySxidLine(std::string_view line) {
  size_t pos = Find(line, "SXid (");
  if (pos == std::string_view::npos) return std::nullopt;
  std::optional<Header> header = ParseHeader(line.substr(pos + 5));
  if (!header) return std::nullopt;
  std::string_view rest = header->rest;
  bool fatal;
  if (rest.starts_with("Fatal,")) {
    fatal = true;
    rest.remove_prefix(6);
  } else if (rest.starts_with("Non-fatal,")) {
    fatal = false;
    rest.remove_prefix(10);
  } else {
    return std::nullopt;  // a continuation line of a report already counted
  }

  // The device name is the token just before ": SXid", e.g. "nvidia-nvswitch0".
  std::string_view before = line.substr(0, pos);
  if (before.ends_with(": ")) before.remove_suffix(2);
  size_t start = before.find_last_of(" ]>;");
  std::string_view device = start == std::string_view::npos ? before : before.substr(start + 1);

  Event event;
  event.event_class = "sxid";
  event.severity = fatal ? EventSeverity::kCritical : EventSeverity::kWarning;
  std::string code = std::to_string(header->code);
  std::string message = CleanField(rest, kMaxMessageBytes);
  event.summary = "SXID " + code + (fatal ? " (fatal)" : " (non-fatal)") + " on NVSwitch " +
                  header->pci_bus_id + ": " + message;
  if (!device.empty()) event.fields.emplace_back("nvswitch", CleanField(device, kMaxNameBytes));
  event.fields.emplace_back("pci_bus_id", header->pci_bus_id);
  event.fields.emplace_back("sxid", code);
  event.fields.emplace_back("fatal", fatal ? "true" : "false");
  event.fields.emplace_back("action",
                            std::string(XidActionName(fatal ? XidAction::kResetGpu : XidAction::kIgnore)));
  event.fields.emplace_back("message", std::move(message));
  return event;
}

}  // namespace gpuscope
