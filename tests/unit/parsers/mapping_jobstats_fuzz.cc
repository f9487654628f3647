// Fuzz target: the Princeton jobstats mapping parser never crashes and only returns valid ids; the input
// taken as a file name (jobstats names files by GPU index, GPU UUID or MIG UUID) is classified without a
// crash, and a name accepted as a UUID is NVML's 40-character form, never also a GPU key or record name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/parsers/mapping_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::JobstatsMappingFile file = gpuscope::ParseJobstatsMapping(text);
  if (file.error == gpuscope::MappingError::kNone && !gpuscope::IsValidJobId(file.job_id)) std::abort();
  gpuscope::GpuUuidName name = gpuscope::ParseGpuUuidName(text);
  if (name.kind != gpuscope::GpuUuidName::Kind::kNone) {
    if (name.uuid != text || name.uuid.size() != 40 || name.uuid.find('/') != std::string_view::npos)
      std::abort();
    if (gpuscope::IsValidGpuKey(text) || !gpuscope::GpuscopeRecordJobId(text).empty()) std::abort();
  } else if (!name.uuid.empty()) {
    std::abort();
  }
  return 0;
}
