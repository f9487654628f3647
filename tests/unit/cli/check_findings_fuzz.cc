// libFuzzer entry point for `gpuscope check`'s judgement of an agent's /metrics (src/cli/check_findings.h):
// whatever the text, the first finding is about the agent, every finding has a check name and a message,
// and text that does not parse is exactly one failing finding.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "src/cli/check_findings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<gpuscope::CheckFinding> findings = gpuscope::EvaluateAgentMetrics(input, {});
  if (findings.empty() || findings.front().check != "agent") __builtin_trap();
  for (const gpuscope::CheckFinding& f : findings) {
    if (f.check.empty() || f.message.empty()) __builtin_trap();
  }
  if (findings.front().status == gpuscope::CheckStatus::kFail && findings.size() != 1) __builtin_trap();
  (void)gpuscope::RenderFindingsText(findings);
  return 0;
}
