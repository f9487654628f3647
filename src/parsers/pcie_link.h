// Parsers of the PCI facts sysfs gives per device (drivers/pci/pci-sysfs.c): link speed and width
// ("16.0 GT/s PCIe", "16"), vendor and class ("0x10de", "0x030200"), and PCI addresses in the two spellings
// gpuscope meets (sysfs "0000:18:00.0", NVML "00000000:18:00.0").
//
// Thread-safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/parsers/pci.h"

namespace gpuscope {

// A link speed file: "16.0 GT/s PCIe" (kernels since 4.17 append " PCIe"), "8 GT/s" and "2.5 GT/s" (older
// kernels). Returns the rate in GT/s; nullopt for "Unknown", "Unknown speed" (link down or a speed the
// kernel does not know), PCI-X speeds ("133 MHz PCI-X") and anything malformed.
std::optional<double> ParsePcieLinkSpeed(std::string_view text);

// The PCIe generation of a per-lane rate: 2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6.
// Returns nullopt for any other rate.
std::optional<int> PcieGenerationOfSpeed(double gigatransfers_per_second);

// A link width file: "16\n". Returns nullopt unless a decimal number of lanes 0..32 (0: link down).
std::optional<uint32_t> ParsePcieLinkWidth(std::string_view text);

}  // namespace gpuscope
