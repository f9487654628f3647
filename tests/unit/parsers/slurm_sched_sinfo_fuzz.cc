// libFuzzer target: the sinfo parser of the Slurm scheduler collector never crashes and keeps its
// invariants on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/parsers/slurm_scheduler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  SinfoNodes r = ParseSinfo(text);
  for (const SinfoNode& node : r.nodes) {
    if (node.node.empty() || node.state.empty() || node.gpus_total < 0) __builtin_trap();
  }
  (void)GpusInGres(text);
  return 0;
}
