// HTTP/1.x request-head parsing: a pure function from bytes to a request head, with the limits the
// metrics server needs (head size, header count; request bodies only where a route takes one, of a
// bounded size, framed by Content-Length). No I/O; fuzzed.
//
// Thread-safety: pure functions; HttpRequestHead is a value type whose views point into the parsed
// buffer and are valid only as long as that buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

inline constexpr size_t kMaxRequestHeadBytes = 8192;
inline constexpr size_t kMaxRequestHeaders = 100;

struct HttpRequestHead {
  std::string_view method;  // as sent, case-sensitive ("GET")
  std::string_view target;  // origin-form target, e.g. "/metrics?x=1"
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', may be empty
  int version_minor = 1;    // HTTP/1.<minor>
  std::vector<std::pair<std::string_view, std::string_view>> headers;  // values trimmed
  bool keep_alive = true;                                              // from version and Connection header
  size_t content_length = 0;  // the body's length (Content-Length) when its route takes a body, else 0
  std::string_view body;      // the body, content_length bytes; set by the server once all arrived

  // First value of a header, case-insensitive name match; empty when absent.
  std::string_view Header(std::string_view name) const;
};

enum class ParseOutcome { kComplete, kIncomplete, kError };

struct ParseResult {
  ParseOutcome outcome = ParseOutcome::kIncomplete;
  size_t consumed = 0;     // bytes of the head (kComplete only); its body (head.content_length) follows
  int error_status = 0;    // HTTP status to answer (kError only): 400, 411, 413, 431, 501 or 505
  std::string_view error;  // short reason for the response body (kError only)
};

// The most body bytes a request may carry, decided from its parsed head (method, path); 0: no body.
using RequestBodyLimit = std::function<size_t(const HttpRequestHead& head)>;

// Parses one request head from the start of `buffer`. kIncomplete: need more bytes (and the head so far
// is within limits). kComplete: `head` is filled and `consumed` bytes belong to it. kError: the request
// is rejected with `error_status`: 431 when the head exceeds kMaxRequestHeadBytes or kMaxRequestHeaders,
// 505 for a version other than HTTP/1.x, 400 when malformed. Bodies: where `body_limit` is empty or
// gives 0, a request that announces one gets 413. Where it gives a limit, the request must carry a
// Content-Length (411 without one, and for Transfer-Encoding: chunked bodies are not read) of at most the
// limit (413 beyond); head.content_length is set to it.
ParseResult ParseRequestHead(std::string_view buffer, HttpRequestHead& head,
                             const RequestBodyLimit& body_limit = nullptr);

// ASCII case-insensitive comparison.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The reason phrase of an HTTP status code ("Service Unavailable"); "Unknown" for codes not listed.
std::string_view HttpReasonPhrase(int status);

}  // namespace gpuscope
