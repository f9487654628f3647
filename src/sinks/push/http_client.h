// HttpClient: a small blocking HTTP/1.1 client for the push sinks (Loki, OTLP). It POSTs a body with a
// Content-Length to one URL (http:// or https://; host names through getaddrinfo, IPv4 and [IPv6]
// literals), keeps the connection open between requests (keep-alive) and reconnects when the server
// closed it. Every wait (connect, TLS handshake, send, response) polls the socket together with an
// eventfd, so each request is bounded by a deadline and Interrupt() cuts it short from another thread.
// https verifies the server's certificate and name against the system trust store or a given CA file.
// Responses are read with limits (head size, header count, body size): a peer answering something that
// is not HTTP makes the request fail, never crashes the client or grows its memory without bound.
//
// Thread-safety: Post() from one thread at a time; Interrupt() and connections_opened() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope {

// An absolute http(s) URL split into what a request needs.
struct HttpUrl {
  bool tls = false;       // https
  std::string host;       // host name or IP literal, without IPv6 brackets
  uint16_t port = 0;      // explicit, or 80 / 443 by scheme
  std::string target;     // origin-form request target: path and query, "/" when the URL has none
  std::string authority;  // the Host header: host (bracketed for IPv6) and ":port" unless the default
};

// Parses "http://host[:port][/path][?query]" or "https://...". The scheme is case-insensitive; a
// fragment is dropped. InvalidArgument for anything else (other schemes, userinfo, empty host, a port
// that is not 1..65535, spaces or control characters).
Status ParseHttpUrl(std::string_view url, HttpUrl* out);

struct HttpClientOptions {
  // Bound on one Post(): connecting (every address tried), TLS handshake, sending and the response.
  std::chrono::milliseconds timeout{10000};
  std::string ca_file;  // https: PEM file of CAs to trust instead of the system trust store
  size_t max_response_head_bytes = 16 << 10;  // status line and headers (also each chunked trailer)
  size_t max_response_headers = 100;
  size_t max_response_body_bytes = 64 << 10;  // more is cut off (body_truncated), the connection closed
};

struct HttpClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;
  bool body_truncated = false;  // the body was longer than max_response_body_bytes

  // First value of a header (name matched case-insensitively); empty when absent.
  std::string_view Header(std::string_view name) const;
};

// Parses a response head: the status line and the header lines, each ending in CRLF, without the empty
// line that ends the head. Fills response->status and ->headers (names lower-cased) and *version_minor.
// Unavailable with the reason when it is not an HTTP/1.x status line, a header line is malformed, or
// there are more than max_headers headers (response->status is then 0). Pure; fuzzed.
Status ParseHttpResponseHead(std::string_view head, size_t max_headers, HttpClientResponse* response,
                             int* version_minor);

// Parses a chunked-encoding size line (hex size, optional ";extensions", no CRLF). False when malformed
// or over 64 bits. Pure; fuzzed.
bool ParseChunkSizeLine(std::string_view line, uint64_t* size);

class HttpClient {
 public:
  // Parses the URL and, for https, sets up the TLS context (system trust store or options.ca_file).
  // InvalidArgument for a bad URL or an unreadable CA file; Internal if OpenSSL or eventfd setup fails.
  // Connects lazily, on the first Post().
  static Status Create(std::string_view url, HttpClientOptions options, std::unique_ptr<HttpClient>* client);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends "POST <target>" with Host, Content-Length and `headers`, and reads the whole response into
  // *response (any status code is Ok: interpreting it is the caller's business). Reuses the open
  // connection when it is still good; a reused connection that turns out closed before any response
  // byte arrives is replaced and the request sent once more. Errors (the connection is closed then):
  // InvalidArgument for a header name or value with CR/LF/NUL; DeadlineExceeded past options.timeout;
  // Unavailable when the connection fails (refused, reset, TLS verification), the response is not
  // HTTP or over the head limits, or after Interrupt().
  Status Post(std::string_view body, const std::vector<std::pair<std::string, std::string>>& headers,
              HttpClientResponse* response);

  // Makes the Post() in progress and every later one fail promptly with Unavailable. Permanent; safe
  // from any thread and from a signal handler (one write to an eventfd).
  void Interrupt();

  // How many connections this client has opened (successful connects); tells keep-alive apart from
  // reconnects.
  uint64_t connections_opened() const { return connections_opened_.load(std::memory_order_relaxed); }

  const HttpUrl& url() const { return url_; }

 private:
  class Connection;
  HttpClient(HttpUrl url, HttpClientOptions options);
  Status Connect(std::chrono::steady_clock::time_point deadline);
  Status Exchange(std::string_view request_head, std::string_view body,
                  std::chrono::steady_clock::time_point deadline, HttpClientResponse* response,
                  bool* nothing_received);
  // Reads one response (interim 1xx skipped) from the connection; *head_complete once the final
  // status line and headers were read.
  Status ReadResponse(std::chrono::steady_clock::time_point deadline, HttpClientResponse* response,
                      bool* nothing_received, bool* head_complete = nullptr);

  HttpUrl url_;
  HttpClientOptions options_;
  SSL_CTX* ssl_ctx_ = nullptr;
  int interrupt_fd_ = -1;
  std::unique_ptr<Connection> connection_;  // the kept-alive connection, if any
  std::atomic<uint64_t> connections_opened_{0};
};

}  // namespace gpuscope
