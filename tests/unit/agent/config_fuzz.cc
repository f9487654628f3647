// Fuzz target: the agent's YAML configuration parser must turn any input into Ok or a clear error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/agent/config.h"
#include "src/agent/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::AgentConfig config;
  gpuscope::BuiltinCollectors().FillDefaults(&config);
  gpuscope::Status status =
      gpuscope::ApplyConfigYaml(std::string_view(reinterpret_cast<const char*>(data), size), &config);
  if (status.ok()) (void)gpuscope::ValidateConfig(config);
  return 0;
}
