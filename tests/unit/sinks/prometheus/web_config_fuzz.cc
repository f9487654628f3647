// libFuzzer target: the web config parser must return a Status (never crash or throw) for any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/sinks/prometheus/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::WebConfig config;
  gpuscope::ParseWebConfig(std::string_view(reinterpret_cast<const char*>(data), size), config);
  return 0;
}
