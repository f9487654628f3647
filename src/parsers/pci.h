// PCI addresses and the sysfs attribute formats every sysfs reader shares (vendor/class hex, numa_node),
// and the NVML spelling of a PCI bus id that GPU series carry in pci_bus_id, so that InfiniBand, host
// and GPU series join on it. No I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope {

// A PCI address as sysfs spells it ("0000:18:00.0", lower-case hex) or NVML does ("00000000:18:00.0").
struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;       // 0..255
  uint32_t device = 0;    // 0..31
  uint32_t function = 0;  // 0..7
  // NVML's busId format, which the GPU series carry in pci_bus_id: "00000000:18:00.0", upper-case hex.
  std::string NvmlBusId() const;
  // The sysfs format: "0000:18:00.0".
  std::string SysfsName() const;
  bool operator==(const PciAddress&) const = default;
};

// Parses "DDDD:BB:DD.F" with a 4 to 8 digit hex domain. Returns nullopt for anything else (a sysfs path
// component such as "pci0000:00" or "infiniband" is not an address).
std::optional<PciAddress> ParsePciAddress(std::string_view text);

// Parses a hex attribute such as vendor ("0x10de\n") or class ("0x030200\n"). Returns nullopt when the
// "0x" prefix or the digits are missing or the value overflows 32 bits.
std::optional<uint32_t> ParseSysfsHex(std::string_view content);

// Parses a signed decimal attribute such as numa_node ("0\n", "-1\n"). Returns nullopt when malformed.
std::optional<int> ParseSysfsInt(std::string_view content);

// Any PCI address spelling (sysfs or NVML, either case) in NVML's "00000000:18:00.0"; nullopt when `text`
// is not a PCI address.
std::optional<std::string> CanonicalPciBusId(std::string_view text);

// NVIDIA's PCI vendor id, and whether a PCI class code (0xCCSSPP) is a display or 3D controller (a GPU).
inline constexpr uint32_t kNvidiaPciVendor = 0x10de;
inline constexpr bool IsGpuPciClass(uint32_t class_code) {
  return (class_code >> 8) == 0x0300 || (class_code >> 8) == 0x0302;
}

}  // namespace gpuscope
