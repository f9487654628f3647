// Fuzz target: gpuscope's job record parser never crashes and only returns valid ids and GPU keys.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/parsers/mapping_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::GpuscopeRecord record = gpuscope::ParseGpuscopeRecord(text);
  if (record.error != gpuscope::MappingError::kNone) return 0;
  if (!gpuscope::IsValidJobId(record.job.job_id)) std::abort();
  for (const auto& gpu : record.job.gpus)
    if (!gpuscope::IsValidGpuKey(gpu)) std::abort();
  return 0;
}
