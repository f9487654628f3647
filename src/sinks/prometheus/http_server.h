// HttpServer: a small HTTP/1.1 server for the metrics endpoint. One accept thread hands connections to
// a pool of worker threads (grown on demand up to max_connections) that serve them with blocking I/O:
// keep-alive and pipelining, GET and HEAD, head limits (8 KiB), a per-connection read timeout, a cap on
// concurrent connections (503 beyond it), optional TLS (OpenSSL) and HTTP basic auth from a WebConfig.
// Every path requires auth when users are configured, as in the Prometheus exporter toolkit.
//
// Thread-safety: Handle() and SetResponseObserver() before Start() only. Start(), Stop() and port() from
// one controlling thread. Handlers and the observer run concurrently on worker threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/status.h"
#include "src/sinks/prometheus/http_request.h"
#include "src/sinks/prometheus/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope {

class BasicAuthenticator;

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (e.g. Content-Encoding)
  std::string body;
  std::shared_ptr<const std::string> shared_body;  // sent instead of `body` when set (cached bodies)

  std::string_view Body() const {
    return shared_body ? std::string_view(*shared_body) : std::string_view(body);
  }
};

// Fills `response` for `request`. The request's views are valid during the call only.
using HttpHandler = std::function<void(const HttpRequestHead& request, HttpResponse& response)>;

// Called once per response sent: the request path ("" when the request could not be parsed) and the
// status code.
using ResponseObserver = std::function<void(std::string_view path, int status)>;

struct HttpServerOptions {
  std::string listen_address = ":9400";  // "host:port", ":port" (all interfaces), "[::1]:port"; port 0 ok
  size_t max_connections = 64;           // concurrent connections; more are answered 503 and closed
  std::chrono::milliseconds read_timeout{30000};  // idle keep-alive and per-read timeout; also for writes
  WebConfig web_config;                           // TLS, extra response headers, basic auth users
};

// Splits a listen address into host ("" for all interfaces; brackets removed) and port. InvalidArgument
// when malformed.
Status ParseListenAddress(std::string_view address, std::string& host, uint16_t& port);

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stops the server if running.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers the handler for an exact path (no query). Only GET and HEAD reach handlers; other
  // methods on a registered path get 405, unregistered paths 404.
  void Handle(std::string path, HttpHandler handler);
  void SetResponseObserver(ResponseObserver observer);

  // Binds, sets up TLS and starts serving. On failure (bad address, port in use, unreadable
  // certificate) returns the error and nothing runs. Calling it twice is an error.
  Status Start();

  // The bound port (useful with port 0); 0 before Start().
  uint16_t port() const { return port_; }

  // Stops accepting, interrupts idle and in-flight connections, joins all threads. Returns promptly even
  // with idle keep-alive clients. Safe to call more than once.
  void Stop();

 private:
  class Connection;
  void AcceptLoop();
  void WorkerLoop();
  void Serve(int fd);
  // Handles one parsed request; returns false when the connection must close afterwards.
  bool Respond(Connection& conn, const HttpRequestHead& request);
  bool Send(Connection& conn, std::string_view path, HttpResponse& response, bool head_only, bool keep_alive,
            int version_minor);
  void RejectOverCapacity(int fd);

  HttpServerOptions options_;
  std::unordered_map<std::string, HttpHandler> handlers_;
  ResponseObserver observer_;
  std::unique_ptr<BasicAuthenticator> auth_;
  SSL_CTX* ssl_ctx_ = nullptr;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that wakes the accept thread on Stop()
  uint16_t port_ = 0;
  bool started_ = false;
  std::thread accept_thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                    // guarded by mu_
  std::atomic<bool> stop_requested_{false};  // mirrors stopping_ for lock-free checks between requests
  std::deque<int> queue_;                    // accepted, not yet picked by a worker; guarded by mu_
  std::set<int> serving_;                    // fds being served (shut down on Stop); guarded by mu_
  size_t active_ = 0;                        // queued + serving; guarded by mu_
  size_t idle_workers_ = 0;                  // guarded by mu_
  std::vector<std::thread> workers_;         // grown by the accept thread only
};

}  // namespace gpuscope
