// libFuzzer entry point for the host collector's parsers (src/parsers/{cpulist,psi,pcie_link,
// proc_placement}.h): every parser sees every input, so one corpus covers all of them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/parsers/cpulist.h"
#include "src/parsers/pcie_link.h"
#include "src/parsers/proc_placement.h"
#include "src/parsers/psi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto cpus = gpuscope::ParseCpuList(input)) {
    // Formatting and re-parsing must give the same set.
    auto again = gpuscope::ParseCpuList(gpuscope::FormatCpuList(*cpus));
    if (!again || *again != *cpus) __builtin_trap();
  }
  (void)gpuscope::ParsePressureFile(input);
  if (auto speed = gpuscope::ParsePcieLinkSpeed(input)) (void)gpuscope::PcieGenerationOfSpeed(*speed);
  (void)gpuscope::ParsePcieLinkWidth(input);
  (void)gpuscope::ParseSysfsHex(input);
  if (auto id = gpuscope::CanonicalPciBusId(input)) {
    if (gpuscope::CanonicalPciBusId(*id) != id) __builtin_trap();
  }
  (void)gpuscope::ParseProcStatusCpusAllowed(input);
  (void)gpuscope::ParseProcStatLastCpu(input);
  return 0;
}
