// HttpClient: the agent's HTTP client (the push sinks' POSTs to Loki, OTLP and remote_write receivers; the
// Kubernetes API server's GETs), a thin owner of one libcurl easy handle driven by
// one multi handle. It POSTs a body to one URL (http:// or https://), or GETs a path below it (the
// Kubernetes API server's objects), and keeps the connection for the next request; libcurl does the rest:
//   - proxies from the environment, as libcurl reads them: for an https:// URL `https_proxy` or
//     `HTTPS_PROXY`, for an http:// URL `http_proxy` (lower case only: libcurl ignores `HTTP_PROXY` on
//     purpose, since CGI servers put a request's Proxy header there), then `all_proxy`/`ALL_PROXY`;
//     `no_proxy`/`NO_PROXY` (host names and their subdomains, IP addresses, CIDR ranges, `*`) bypasses
//     them. An https:// URL goes through the proxy in a CONNECT tunnel, end-to-end TLS intact.
//   - HTTP/2 when a TLS server offers it by ALPN (HTTP/1.1 otherwise); plain http:// speaks HTTP/1.1
//     (no h2c upgrade, which would cost a round trip and breaks on HTTP/1-only receivers).
//   - TLS with certificate and host name verification against the system trust store or a CA file.
// libcurl is loaded (dlopen) when the first client is created, so an agent without push sinks does not
// map it and the libraries it depends on. Every wait is in curl_multi_poll(), which Interrupt() wakes
// (curl_multi_wakeup) from another thread, so a request in flight ends promptly however long its timeout.
// Responses are read with limits (head size, header count, body size): a peer answering something that is not
// HTTP fails the request, never crashes the client or grows its memory without bound.
//
// Thread-safety: Post() and Get() from one thread at a time; Interrupt() and connections_opened() from any
// thread.
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

typedef void CURL;
typedef void CURLM;

namespace gpuscope {

struct HttpClientOptions {
  // Bound on one Post(): resolving, connecting (through the proxy too), TLS handshake, sending and the
  // response.
  std::chrono::milliseconds timeout{10000};
  std::string ca_file;    // https: PEM file of CAs to trust instead of the system trust store
  std::string cert_file;  // https: PEM client certificate, with key_file (both or neither)
  std::string key_file;
  std::string username;  // HTTP basic auth when not empty (libcurl builds the Authorization header)
  std::string password;
  size_t max_response_head_bytes = 16 << 10;  // status line and headers (of the final response)
  size_t max_response_headers = 100;
  size_t max_response_body_bytes = 64 << 10;  // more is cut off (body_truncated), the connection closed
};

struct HttpClientResponse {
  int status = 0;
  std::string protocol;                                      // "HTTP/1.1", "HTTP/2", ...
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;
  bool body_truncated = false;  // the body was longer than max_response_body_bytes

  // First value of a header (name matched case-insensitively); empty when absent.
  std::string_view Header(std::string_view name) const;
};

class HttpClient {
 public:
  // Loads libcurl (once per process), checks the URL (http or https, a host, a port in 1..65535, no
  // user:password), the CA file (a readable PEM file with a certificate) and the client certificate and
  // key (both readable, or neither), then sets up the handles. InvalidArgument for a bad URL or file;
  // Internal if libcurl cannot be loaded (not installed, older than 7.80) or set up. Connects lazily, on the
  // first Post().
  static Status Create(std::string_view url, HttpClientOptions options, std::unique_ptr<HttpClient>* client);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends "POST" with Content-Length, a User-Agent and `headers`, and reads the whole response into
  // *response (any status code is Ok: interpreting it is the caller's business). Reuses the open
  // connection when it is still good; libcurl replaces a kept connection the server closed and sends
  // the request once more. Errors: InvalidArgument for a header name that is not a token, a value with
  // CR/LF/NUL, or a header the client sets itself (Content-Length, Transfer-Encoding, Host, Connection,
  // Expect); DeadlineExceeded past options.timeout; Unavailable when the connection fails (refused,
  // reset, proxy, TLS verification), the response is not HTTP or over the head limits, or after
  // Interrupt().
  Status Post(std::string_view body, const std::vector<std::pair<std::string, std::string>>& headers,
              HttpClientResponse* response);

  // Sends "GET" for `target` (a path starting with '/', with its query) on the URL's scheme, host and
  // port: the URL's own path, less a trailing '/', is put before it. Headers, limits, errors and the
  // response as for Post(); InvalidArgument also for a target that does not start with '/' or holds
  // a space, CR, LF or NUL.
  Status Get(std::string_view target, const std::vector<std::pair<std::string, std::string>>& headers,
             HttpClientResponse* response);

  // Makes the Post() in progress and every later one fail promptly with Unavailable. Permanent; safe
  // from any thread.
  void Interrupt();

  // How many connections this client has opened (TCP connections to the server or the proxy); tells
  // connection reuse apart from reconnects.
  uint64_t connections_opened() const { return connections_opened_.load(std::memory_order_relaxed); }

 private:
  struct Transfer;  // what the callbacks of the request in flight fill in
  explicit HttpClient(HttpClientOptions options);
  static size_t OnHeader(char* data, size_t size, size_t count, void* transfer);
  static size_t OnBody(char* data, size_t size, size_t count, void* transfer);
  // Runs the transfer set up on easy_ to its end, or until Interrupt() (*interrupted). Returns
  // libcurl's result, with details in error_buffer (CURL_ERROR_SIZE bytes).
  int Perform(char* error_buffer, bool* interrupted);
  // One request of either method to `url`, as Post() describes.
  Status Send(bool post, const std::string& url, std::string_view body,
              const std::vector<std::pair<std::string, std::string>>& headers, HttpClientResponse* response);

  HttpClientOptions options_;
  std::string url_;       // as given to Create()
  CURL* easy_ = nullptr;  // one handle: libcurl keeps its connection cache in multi_
  CURLM* multi_ = nullptr;
  bool tls_ = false;  // https:// URL
  std::atomic<bool> interrupted_{false};
  std::atomic<uint64_t> connections_opened_{0};
};

}  // namespace gpuscope
