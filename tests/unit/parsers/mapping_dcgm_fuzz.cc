// Fuzz target: the dcgm-exporter mapping file parser never crashes and never returns ids with an error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/parsers/mapping_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::DcgmMappingFile file = gpuscope::ParseDcgmMapping(text);
  if (file.error != gpuscope::MappingError::kNone && !file.job_ids.empty()) std::abort();
  for (const auto& id : file.job_ids)
    if (!gpuscope::IsValidJobId(id)) std::abort();
  gpuscope::DetectGpuKeyFileFormat(text);
  return 0;
}
