// Fuzz target: the Princeton jobstats mapping parser never crashes and only returns valid ids.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/parsers/mapping_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::JobstatsMappingFile file = gpuscope::ParseJobstatsMapping(text);
  if (file.error == gpuscope::MappingError::kNone && !gpuscope::IsValidJobId(file.job_id)) std::abort();
  return 0;
}
