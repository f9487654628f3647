#include "src/sinks/prometheus/http_request.h"

#include <algorithm>
#include <optional>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// RFC 9110 token characters (method and header names).
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar); }

ParseResult Error(int status, std::string_view reason) {
  return ParseResult{ParseOutcome::kError, 0, status, reason};
}

// Whether a comma-separated header value contains `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (EqualsIgnoreCase(text::Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// The index just past the empty line that ends the head (terminated by CRLF or, leniently, a bare LF),
// looking no further than kMaxRequestHeadBytes; npos when it is not there yet.
size_t FindHeadEnd(std::string_view buffer, size_t start) {
  size_t limit = std::min(buffer.size(), kMaxRequestHeadBytes);
  for (size_t i = start; i < limit; ++i) {
    if (buffer[i] != '\n') continue;
    if (i + 1 < buffer.size() && buffer[i + 1] == '\n') return i + 2;
    if (i + 2 < buffer.size() && buffer[i + 1] == '\r' && buffer[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

// Takes the first line off `rest` and returns it without its CR LF (or bare LF).
std::string_view NextLine(std::string_view& rest) {
  size_t nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest.remove_prefix(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Request line: METHOD SP target SP HTTP/1.x. Fills head's method, target, path, query and version;
// returns the rejection, or nullopt when the line is valid.
std::optional<ParseResult> ParseRequestLine(std::string_view line, HttpRequestHead& head) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400, "malformed request line");
  }
  head.method = line.substr(0, sp1);
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(head.method)) return Error(400, "malformed method");
  if (version.size() != 8 || !version.starts_with("HTTP/")) return Error(400, "malformed version");
  if (version[5] != '1' || version[6] != '.') return Error(505, "HTTP version not supported");
  if (version[7] < '0' || version[7] > '9') return Error(400, "malformed version");
  head.version_minor = version[7] - '0';
  if (head.target.empty() || head.target.front() != '/') return Error(400, "unsupported request target");
  for (char c : head.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return Error(400, "malformed request target");
  }
  size_t q = head.target.find('?');
  head.path = head.target.substr(0, q);
  if (q != std::string_view::npos) head.query = head.target.substr(q + 1);
  return std::nullopt;
}

// Header fields (name ":" OWS value OWS) up to the empty line, into head.headers; returns the
// rejection, or nullopt when they are valid.
std::optional<ParseResult> ParseHeaderFields(std::string_view rest, HttpRequestHead& head) {
  while (true) {
    std::string_view line = NextLine(rest);
    if (line.empty()) return std::nullopt;
    if (line.front() == ' ' || line.front() == '\t') return Error(400, "obsolete line folding");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Error(400, "malformed header field");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return Error(400, "malformed header name");
    std::string_view value = text::Trim(line.substr(colon + 1));
    for (char c : value) {
      if (c == '\r' || c == '\0') return Error(400, "malformed header value");
    }
    if (head.headers.size() >= kMaxRequestHeaders) return Error(431, "too many header fields");
    head.headers.emplace_back(name, value);
  }
}

// A request body is taken only where `limit` (from its route) is not 0, framed by a Content-Length of at
// most `limit` (stored in head.content_length); HTTP/1.1 requires a Host header. Returns the rejection,
// or nullopt when the head is acceptable.
std::optional<ParseResult> CheckBodyAndHost(HttpRequestHead& head, size_t limit) {
  if (!head.Header("Transfer-Encoding").empty()) {
    if (limit == 0) return Error(413, "request bodies are not accepted");
    return Error(411, "chunked request bodies are not accepted: send a Content-Length");
  }
  std::optional<size_t> length;
  for (const auto& [name, value] : head.headers) {
    if (!EqualsIgnoreCase(name, "Content-Length")) continue;
    if (length) return Error(400, "duplicate Content-Length");
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Error(400, "malformed Content-Length");
    }
    length = 0;
    for (char c : value) *length = *length * 10 + static_cast<size_t>(c - '0');  // at most 18 digits
    if (limit == 0 && *length != 0) return Error(413, "request bodies are not accepted");
    if (*length > limit) return Error(413, "request body too large");
  }
  if (limit != 0) {
    if (!length) return Error(411, "Content-Length required");
    head.content_length = *length;
  }
  if (head.version_minor >= 1 && head.Header("Host").empty()) {
    bool has_host = std::any_of(head.headers.begin(), head.headers.end(),
                                [](const auto& h) { return EqualsIgnoreCase(h.first, "Host"); });
    if (!has_host) return Error(400, "missing Host header");
  }
  return std::nullopt;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view HttpRequestHead::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

ParseResult ParseRequestHead(std::string_view buffer, HttpRequestHead& head,
                             const RequestBodyLimit& body_limit) {
  // RFC 9112 2.2: a server should ignore at least one empty line before the request line.
  size_t start = 0;
  while (start < buffer.size() && start < 4 && (buffer[start] == '\r' || buffer[start] == '\n')) ++start;

  size_t end = FindHeadEnd(buffer, start);
  if (end > kMaxRequestHeadBytes) {  // npos too
    if (buffer.size() >= kMaxRequestHeadBytes) return Error(431, "request header fields too large");
    return ParseResult{};
  }

  head = HttpRequestHead{};
  std::string_view rest = buffer.substr(start, end - start);
  if (auto error = ParseRequestLine(NextLine(rest), head)) return *error;
  if (auto error = ParseHeaderFields(rest, head)) return *error;
  const size_t limit = body_limit ? body_limit(head) : 0;
  if (auto error = CheckBodyAndHost(head, limit)) return *error;

  std::string_view connection = head.Header("Connection");
  if (head.version_minor == 0) {
    head.keep_alive = HasToken(connection, "keep-alive");
  } else {
    head.keep_alive = !HasToken(connection, "close");
  }
  return ParseResult{ParseOutcome::kComplete, end, 0, {}};
}

std::string_view HttpReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace gpuscope
