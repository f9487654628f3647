// Fuzz target: the kernel-family dispatcher must accept any byte string, never crash, and give field
// values that are capped in length and valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/core/utf8.h"
#include "src/events/classifiers/kernel_classifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  std::optional<gpuscope::Event> event = gpuscope::ClassifyKernelLine(line);
  if (!event) return 0;
  for (const auto& [key, value] : event->fields) {
    if (value.size() > 256) std::abort();
    for (size_t i = 0; i < value.size();) {
      size_t n = gpuscope::ValidUtf8Length(value, i);
      if (n == 0) std::abort();
      i += n;
    }
  }
  return 0;
}
