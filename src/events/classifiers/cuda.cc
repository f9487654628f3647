// CUDA error classifier. PyTorch's C10_CUDA_CHECK raises "CUDA error: <cudaGetErrorString text>"
// (c10/cuda/CUDAException.cpp), the driver-API check "CUDA driver error: <cuGetErrorString text>", and
// many tools print the enum name ("cudaErrorLaunchFailure"). Error strings and names are those of the
// CUDA runtime API's cudaError enum documentation.
#include <array>
#include <string>

#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/jobs_text.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using jobs_text::Sanitize;

struct KnownError {
  std::string_view text;  // cudaGetErrorString
  std::string_view name;  // enum name
  EventSeverity severity;
};

// Errors that corrupt the CUDA context (sticky) or point at hardware are critical: the process cannot
// continue and the node may need draining.
constexpr std::array<KnownError, 14> kKnownErrors = {{
    {"an illegal memory access was encountered", "cudaErrorIllegalAddress", EventSeverity::kCritical},
    {"an illegal instruction was encountered", "cudaErrorIllegalInstruction", EventSeverity::kCritical},
    {"misaligned address", "cudaErrorMisalignedAddress", EventSeverity::kCritical},
    {"uncorrectable ECC error encountered", "cudaErrorECCUncorrectable", EventSeverity::kCritical},
    {"hardware stack error", "cudaErrorHardwareStackError", EventSeverity::kCritical},
    {"device-side assert triggered", "cudaErrorAssert", EventSeverity::kError},
    {"unspecified launch failure", "cudaErrorLaunchFailure", EventSeverity::kError},
    {"the launch timed out and was terminated", "cudaErrorLaunchTimeout", EventSeverity::kError},
    {"out of memory", "cudaErrorMemoryAllocation", EventSeverity::kError},
    {"no CUDA-capable device is detected", "cudaErrorNoDevice", EventSeverity::kError},
    {"invalid device ordinal", "cudaErrorInvalidDevice", EventSeverity::kError},
    {"CUDA-capable device(s) is/are busy or unavailable", "cudaErrorDevicesUnavailable",
     EventSeverity::kError},
    {"system not yet initialized", "cudaErrorSystemNotReady", EventSeverity::kError},
    {"unknown error", "cudaErrorUnknown", EventSeverity::kError},
}};

const KnownError* ByText(std::string_view message) {
  for (const auto& known : kKnownErrors) {
    if (message.starts_with(known.text)) return &known;
  }
  return nullptr;
}

const KnownError* ByName(std::string_view name) {
  for (const auto& known : kKnownErrors) {
    if (known.name == name) return &known;
  }
  return nullptr;
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string_view ExceptionBefore(std::string_view line, std::size_t pos) {
  if (pos < 2 || line[pos - 1] != ' ' || line[pos - 2] != ':') return {};
  const std::size_t end = pos - 2;
  std::size_t begin = end;
  while (begin > 0 && IsWordChar(line[begin - 1])) --begin;
  const std::string_view word = line.substr(begin, end - begin);
  // Only exception-like words ("RuntimeError", "torch.AcceleratorError"), not "[rank3]".
  if (word.empty() || word.size() > 64 || word.find("Error") == std::string_view::npos) return {};
  return word;
}

}  // namespace

std::optional<Event> ClassifyCudaErrorLine(std::string_view line) {
  line = jobs_text::Head(line);
  std::string_view marker = "CUDA error: ";
  std::size_t pos = line.find(marker);
  if (pos == std::string_view::npos) {
    marker = "CUDA driver error: ";
    pos = line.find(marker);
  }
  std::string_view message;
  std::string_view name;
  if (pos != std::string_view::npos) {
    message = text::Trim(line.substr(pos + marker.size()));
  } else {
    pos = line.find("cudaError");
    if (pos == std::string_view::npos) return std::nullopt;
    std::size_t end = pos + 9;
    while (end < line.size() && IsWordChar(line[end]) && line[end] != '.') ++end;
    if (end == pos + 9 || end - pos > 64) return std::nullopt;  // "cudaError" alone, or garbage
    name = line.substr(pos, end - pos);
    message = text::Trim(line);
  }

  Event event;
  event.event_class = "cuda";
  event.severity = EventSeverity::kError;
  const KnownError* known = name.empty() ? ByText(message) : ByName(name);
  if (known != nullptr) {
    event.severity = known->severity;
    if (name.empty()) name = known->name;
  }
  const std::string_view exception = ExceptionBefore(line, pos);
  if (!exception.empty()) event.fields.emplace_back("error", Sanitize(exception, 64));
  if (!name.empty()) event.fields.emplace_back("error_name", Sanitize(name, 64));
  event.fields.emplace_back("message", Sanitize(message, jobs_text::kMaxMessageBytes));
  event.summary = "CUDA error";
  if (!name.empty()) event.summary += " " + Sanitize(name, 64);
  event.summary += ": " + Sanitize(message, 200);
  return event;
}

}  // namespace gpuscope
