// libFuzzer entry point for the InfiniBand sysfs value parsers (see src/parsers/ib_sysfs.h): every
// input goes through every parser, as any sysfs file may hold anything a driver prints.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/parsers/ib_sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  (void)gpuscope::ParseIbCounter(input);
  if (auto e = gpuscope::ParseIbEnum(input)) {
    if (e->name.empty()) __builtin_trap();
  }
  if (auto rate = gpuscope::ParseIbRate(input)) {
    if (!(rate->BytesPerSecond() >= 0)) __builtin_trap();
  }
  if (auto address = gpuscope::ParsePciAddress(input)) {
    // Round trip: NVML's format parses back to the same address.
    if (gpuscope::ParsePciAddress(address->NvmlBusId()) != address) __builtin_trap();
    if (gpuscope::ParsePciAddress(address->SysfsName()) != address) __builtin_trap();
  }
  (void)gpuscope::ParseSysfsHex(input);
  (void)gpuscope::ParseSysfsInt(input);
  std::string name = gpuscope::SanitizeIbCounterName(input);
  if (name.empty() || name.size() > 128) __builtin_trap();
  return 0;
}
