// libFuzzer entry point for the /proc/<pid>/cgroup parser (see src/parsers/proc_cgroup.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/parsers/proc_cgroup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = gpuscope::ParseProcCgroup(input);
  // Invariant: a job id is never empty and always digits.
  if (parsed &&
      (parsed->job_id.empty() || parsed->job_id.find_first_not_of("0123456789") != std::string::npos)) {
    __builtin_trap();
  }
  return 0;
}
