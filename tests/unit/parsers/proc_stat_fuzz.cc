// libFuzzer entry point for the /proc/<pid>/stat parser (see src/parsers/proc_stat.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/parsers/proc_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  (void)gpuscope::ParseProcStatStartTime(input);
  (void)gpuscope::ParseProcStatusUid(input);
  return 0;
}
