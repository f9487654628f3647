// Fuzz target for the jobs-family classifiers: any bytes, each classifier and the dispatcher; every
// Event produced must have a class and fields within the caps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/jobs_text.h"

namespace {
void Check(const std::optional<gpuscope::Event>& event) {
  if (!event) return;
  if (event->event_class.empty()) std::abort();
  for (const auto& [key, value] : event->fields) {
    if (key.empty() || value.size() > gpuscope::jobs_text::kMaxMessageBytes + 3) std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  Check(gpuscope::ClassifyJobLine(line));
  Check(gpuscope::ClassifyNcclLine(line));
  Check(gpuscope::ClassifyTorchWatchdogLine(line));
  Check(gpuscope::ClassifyCudaOomLine(line));
  Check(gpuscope::ClassifyCudaErrorLine(line));
  return 0;
}
