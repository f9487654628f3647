// libFuzzer entry point for the Falco and Tetragon JSON parsers (src/parsers/security_events.h): every
// input goes to both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/core/utf8.h"
#include "src/parsers/security_events.h"

namespace {

// Invariants of a parsed event: a known severity, a non-empty rule, a pid of digits only, valid UTF-8 text.
void Check(const gpuscope::SecurityEvent& e) {
  const std::string_view severity = e.severity;
  if (severity != "debug" && severity != "info" && severity != "warning" && severity != "error" &&
      severity != "critical") {
    __builtin_trap();
  }
  if (e.rule.empty() || e.pid.find_first_not_of("0123456789") != std::string::npos) __builtin_trap();
  if (!gpuscope::IsValidUtf8(e.summary) || !gpuscope::IsValidUtf8(e.rule) ||
      !gpuscope::IsValidUtf8(e.process)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  gpuscope::SecurityEvent event;
  if (gpuscope::ParseFalcoEvent(input, &event).ok()) Check(event);
  if (gpuscope::ParseTetragonEvent(input, &event).ok()) Check(event);
  int64_t ns = 0;
  gpuscope::ParseRfc3339Nanos(input, &ns);
  return 0;
}
