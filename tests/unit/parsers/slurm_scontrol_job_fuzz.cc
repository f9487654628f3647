// libFuzzer target for the `scontrol show job -o` parser: never crashes, and every accepted job has a
// numeric job id.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/parsers/scontrol_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::ScontrolJobs parsed = gpuscope::ParseScontrolShowJob(text);
  for (const gpuscope::ScontrolJob& job : parsed.jobs) {
    if (job.job_id.empty() || job.job_id.find_first_not_of("0123456789") != std::string::npos) std::abort();
  }
  return 0;
}
