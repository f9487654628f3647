// libFuzzer target: the push client's response-head and chunk-size parsers must classify any bytes
// without reading out of bounds; an accepted head has a three-digit status, at most the allowed number
// of headers, and lower-case header names. The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/sinks/push/http_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    constexpr size_t kMaxHeaders = 8;
    gpuscope::HttpClientResponse response;
    int version_minor = -1;
    const gpuscope::Status status =
        gpuscope::ParseHttpResponseHead(input, kMaxHeaders, &response, &version_minor);
    if (status.ok()) {
      if (response.status < 100 || response.status > 999 || version_minor < 0 || version_minor > 9)
        std::abort();
      if (response.headers.size() > kMaxHeaders) std::abort();
      for (const auto& [name, value] : response.headers) {
        for (char c : name) {
          if (c >= 'A' && c <= 'Z') std::abort();
        }
      }
    } else if (response.status != 0) {
      std::abort();
    }
  } else {
    uint64_t chunk_size = 0;
    gpuscope::ParseChunkSizeLine(input, &chunk_size);
  }
  return 0;
}
