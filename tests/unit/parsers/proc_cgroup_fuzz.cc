// libFuzzer entry point for the /proc/<pid>/cgroup parsers, Slurm's and Kubernetes' (see
// src/parsers/proc_cgroup.h).
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
  // Invariant: a pod UID is always 36 characters of lower-case hex and dashes in the 8-4-4-4-12 shape,
  // and a container id only hex.
  auto pod = gpuscope::ParseProcCgroupPod(input);
  if (pod) {
    const std::string& uid = pod->pod_uid;
    if (uid.size() != 36 || uid.find_first_not_of("0123456789abcdef-") != std::string::npos ||
        uid[8] != '-' || uid[13] != '-' || uid[18] != '-' || uid[23] != '-' ||
        pod->container_id.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      __builtin_trap();
    }
  }
  return 0;
}
