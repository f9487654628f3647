// libFuzzer target: the squeue parser of the Slurm scheduler collector never crashes and keeps its
// invariants on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/parsers/slurm_scheduler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  SqueueJobs r = ParseSqueue(text);
  for (const SqueueJob& job : r.jobs) {
    if (job.job_id.empty() || job.gpus_per_node < 0) __builtin_trap();
  }
  (void)GpusInTresPerNode(text);
  return 0;
}
