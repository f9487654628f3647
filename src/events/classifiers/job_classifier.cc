// The jobs-family dispatcher: one pre-scan decides whether a line can be ours at all.
#include "src/events/classifiers/job_classifier.h"

#include <cstring>

#include "src/events/classifiers/jobs_text.h"

namespace gpuscope {
namespace {

// Every NCCL/CUDA line of the family contains "NCCL", "CUDA" or "cudaError" ("Cuda failure" lines also carry
// "NCCL WARN"). The scan jumps between 'C's with memchr (rare in ordinary output compared with
// lowercase letters) and checks the two words around each one; "cudaError" needs its own search.
struct Hints {
  bool nccl = false;
  bool cuda = false;
};

Hints Scan(std::string_view line) {
  Hints hints;
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  const char* p = begin;
  while (p < end) {
    p = static_cast<const char*>(std::memchr(p, 'C', static_cast<std::size_t>(end - p)));
    if (p == nullptr) break;
    if (end - p >= 4 && p[1] == 'U' && p[2] == 'D' && p[3] == 'A') hints.cuda = true;
    // "NCCL": the 'C' found is the first C (p[-1] == 'N') or the second (p[-2..-1] == "NC").
    if (p > begin && p[-1] == 'N' && end - p >= 3 && p[1] == 'C' && p[2] == 'L') hints.nccl = true;
    if (hints.nccl && hints.cuda) break;
    p += 1;
  }
  if (!hints.cuda && line.find("cudaError") != std::string_view::npos) hints.cuda = true;
  return hints;
}

}  // namespace

std::optional<Event> ClassifyJobLine(std::string_view line) {
  line = jobs_text::Head(line);
  const Hints hints = Scan(line);
  if (hints.nccl) {
    if (auto event = ClassifyTorchWatchdogLine(line)) return event;
    if (auto event = ClassifyNcclLine(line)) return event;
  }
  if (hints.cuda) {
    if (auto event = ClassifyCudaOomLine(line)) return event;
    if (auto event = ClassifyCudaErrorLine(line)) return event;
  }
  if (MayBeRdmaCompletionLine(line)) return ClassifyRdmaCompletionLine(line);
  return std::nullopt;
}

}  // namespace gpuscope
