// libFuzzer entry point for the /proc/<pid>/environ parser (see src/parsers/proc_environ.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/parsers/proc_environ.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  gpuscope::SlurmEnviron env = gpuscope::ParseSlurmEnviron(input);
  // Invariants: ids are digits only; nothing longer than the input is ever produced.
  for (const std::string* id :
       {&env.job_id, &env.array_job_id, &env.array_task_id, &env.proc_id, &env.local_id, &env.uid}) {
    if (id->find_first_not_of("0123456789") != std::string::npos) __builtin_trap();
  }
  if (env.job_name.size() > size) __builtin_trap();
  const gpuscope::TrainingEnviron training = gpuscope::ParseTrainingEnviron(input);
  if (training.rank.find_first_not_of("0123456789") != std::string::npos) __builtin_trap();
  if (training.job.size() > 128) __builtin_trap();
  return 0;
}
