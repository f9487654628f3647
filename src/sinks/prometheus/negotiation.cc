#include "src/sinks/prometheus/negotiation.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "src/parsers/text.h"
#include "src/sinks/prometheus/http_request.h"

namespace gpuscope {
namespace {

// One element of a comma-separated header: the value before the first ';' and its parameters.
struct Element {
  std::string_view value;
  std::string_view version;  // "version" parameter, unquoted
  double q = 1.0;
};

// Parses "a;q=0.5;version=1, b" into elements. Malformed q values count as 0 (not acceptable).
std::vector<Element> ParseElements(std::string_view header) {
  std::vector<Element> elements;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view part = header.substr(0, comma);
    header.remove_prefix(comma == std::string_view::npos ? header.size() : comma + 1);
    size_t semi = part.find(';');
    Element element;
    element.value = text::Trim(part.substr(0, semi));
    if (element.value.empty()) continue;
    while (semi != std::string_view::npos) {
      part.remove_prefix(semi + 1);
      semi = part.find(';');
      std::string_view param = text::Trim(part.substr(0, semi));
      size_t eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = text::Trim(param.substr(0, eq));
      std::string_view value = text::Trim(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      if (EqualsIgnoreCase(key, "q")) {
        double q = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
        element.q = (ec == std::errc() && ptr == value.data() + value.size() && q >= 0 && q <= 1) ? q : 0;
      } else if (EqualsIgnoreCase(key, "version")) {
        element.version = value;
      }
    }
    elements.push_back(element);
  }
  std::stable_sort(elements.begin(), elements.end(),
                   [](const Element& a, const Element& b) { return a.q > b.q; });
  return elements;
}

}  // namespace

ExpositionFormat NegotiateExpositionFormat(std::string_view accept) {
  for (const Element& e : ParseElements(accept)) {
    if (e.q <= 0) continue;
    if (EqualsIgnoreCase(e.value, "application/openmetrics-text") &&
        (e.version.empty() || e.version == "1.0.0" || e.version == "0.0.1")) {
      return ExpositionFormat::kOpenMetrics100;
    }
    if (EqualsIgnoreCase(e.value, "text/plain") && (e.version.empty() || e.version == "0.0.4")) {
      return ExpositionFormat::kText004;
    }
  }
  return ExpositionFormat::kText004;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  for (const Element& e : ParseElements(accept_encoding)) {
    if (EqualsIgnoreCase(e.value, "gzip") || e.value == "*") return e.q > 0;
  }
  return false;
}

bool GzipCompress(std::string_view in, std::string& out) {
  z_stream stream{};
  // windowBits 15 + 16: gzip wrapper. Level 1: the bodies are cached, but a new snapshot's first scrape
  // pays the compression, and metric text compresses well even at the fastest level.
  if (deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  stream.avail_in = static_cast<uInt>(in.size());
  // In chunks, not into a buffer of deflateBound's size: the cached body would keep that capacity (the
  // size of the text, 30 times the compressed size) resident until the next snapshot.
  std::vector<Bytef> chunk(64 * 1024);
  out.clear();
  int rc = Z_OK;
  while (rc == Z_OK) {  // Z_OK with Z_FINISH: more output to come
    stream.next_out = chunk.data();
    stream.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&stream, Z_FINISH);
    out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size() - stream.avail_out);
  }
  deflateEnd(&stream);
  out.shrink_to_fit();
  return rc == Z_STREAM_END;
}

}  // namespace gpuscope
