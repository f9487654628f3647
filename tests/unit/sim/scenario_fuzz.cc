// Fuzzes the simulator's scenario parser: any input must give a Scenario or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::sim::ParseScenario(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
