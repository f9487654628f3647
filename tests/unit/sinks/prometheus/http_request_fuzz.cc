// libFuzzer target: the request-head parser must classify any bytes without reading out of bounds,
// and a complete head must consume no more than the input and keep its views inside it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/sinks/prometheus/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  gpuscope::HttpRequestHead head;
  gpuscope::ParseResult result = gpuscope::ParseRequestHead(input, head);
  auto inside = [&](std::string_view view) {
    return view.empty() ||
           (view.data() >= input.data() && view.data() + view.size() <= input.data() + input.size());
  };
  if (result.outcome == gpuscope::ParseOutcome::kComplete) {
    if (result.consumed > size || !inside(head.method) || !inside(head.path)) std::abort();
    for (const auto& [name, value] : head.headers) {
      if (!inside(name) || !inside(value)) std::abort();
    }
  }
  if (result.outcome == gpuscope::ParseOutcome::kError && result.error_status < 400) std::abort();
  return 0;
}
