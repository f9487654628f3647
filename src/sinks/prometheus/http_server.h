// HttpServer: a small HTTP/1.1 server for the metrics endpoint: keep-alive and pipelining, GET and HEAD,
// POST with a bounded Content-Length body on the paths registered for it (HandlePost), head limits
// (8 KiB), optional TLS (OpenSSL) and HTTP basic auth from a WebConfig. Every path requires auth when
// users are configured, as in the Prometheus exporter toolkit.
//
// One event-loop thread accepts connections and, with non-blocking I/O, runs TLS handshakes, reads
// request heads and watches keep-alive connections; a complete request goes to a pool of worker threads
// (grown on demand, at most max_connections) that answer it and hand the connection back. Slow and idle
// clients therefore cost a descriptor and a small buffer, never a thread, and cannot deny a scrape: at
// max_connections a new connection evicts one that has sent the least (a stalled TLS hello first, then an
// incomplete request header, then a keep-alive connection idle between requests; oldest first within
// each; see ConnectionLimiter); only when every held connection is being answered is the new one
// refused (503 over plain HTTP, closed with TLS). A request head must be complete within header_timeout
// of accept (TLS handshake included); a keep-alive connection is closed read_timeout after its last
// response. A connection whose request is being answered is never evicted. A request body is read by the
// event loop too, as part of its request: until it has fully arrived the connection is held (and
// evicted, and timed out) exactly as one whose head is incomplete, so the whole request, body included,
// must arrive within header_timeout of accept (read_timeout of the last response on a keep-alive
// connection), and a client that never sends its body costs no worker.
//
// Thread-safety: Handle() and SetResponseObserver() before Start() only. Start(), Stop() and port() from
// one controlling thread; stats() from any thread. Handlers and the observer run concurrently on worker
// threads (the observer also on the event loop, for refused connections).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/sinks/prometheus/connection_limiter.h"
#include "src/sinks/prometheus/http_listener.h"  // ParseListenAddress, for the server's users
#include "src/sinks/prometheus/http_request.h"
#include "src/sinks/prometheus/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope {

class BasicAuthenticator;
class HttpConnection;

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
  size_t max_connections = 64;  // connections held; at the cap the oldest waiting or idle one is evicted
  std::chrono::milliseconds read_timeout{30000};  // keep-alive idle time; also bounds each wait of a write
  // From accept to a complete request head (TLS handshake included). Not a flag: 10 s is ample for any
  // scraper (Prometheus sends its request at once) and short for a client that holds a slot.
  std::chrono::milliseconds header_timeout{10000};
  WebConfig web_config;  // TLS, extra response headers, basic auth users
};

// What the server did with connections, for the endpoint's self-metrics. Counters since Start(); the
// held_* fields are the connections held now, by state (ConnectionLimiter's states).
struct HttpServerStats {
  uint64_t evicted_header = 0;    // evicted at the cap before completing a request head
  uint64_t evicted_idle = 0;      // evicted at the cap while idle between requests
  uint64_t timed_out_header = 0;  // no complete request head within header_timeout
  uint64_t timed_out_idle = 0;    // idle longer than read_timeout
  uint64_t refused = 0;           // refused at the cap with every held connection being answered
  uint64_t held_header = 0;
  uint64_t held_idle = 0;
  uint64_t held_serving = 0;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stops the server if running.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers the handler for an exact path (no query). Only GET and HEAD reach handlers; other
  // methods on a registered path get 405 (413 with a body), unregistered paths 404 (with a body too).
  void Handle(std::string path, HttpHandler handler);
  // Registers the handler for POST requests to an exact path, with a body of at most `max_body_bytes`
  // (at least 1) in request.body. The body must be framed by a Content-Length: 411 without one (chunked
  // bodies included), 413 beyond the limit; it is read whole before the handler runs. Other methods on
  // the path get 405 (Allow: POST; with a body, 413 as anywhere else).
  void HandlePost(std::string path, size_t max_body_bytes, HttpHandler handler);
  void SetResponseObserver(ResponseObserver observer);

  // Binds, sets up TLS and starts serving. On failure (bad address, port in use, unreadable
  // certificate) returns the error and nothing runs. Calling it twice is an error.
  Status Start();

  // The bound port (useful with port 0); 0 before Start().
  uint16_t port() const { return port_; }

  // Stops accepting, interrupts idle and in-flight connections, joins all threads. Returns promptly even
  // with idle keep-alive clients. Safe to call more than once.
  void Stop();

  HttpServerStats stats() const;

 private:
  using ConnectionPtr = std::unique_ptr<HttpConnection>;

  // Event loop (loop thread only).
  void EventLoop();
  void AcceptSome(ConnectionLimiter::Time now);
  void AdvanceVictimsWithPendingBytes();
  void TakeBackFromWorkers(ConnectionLimiter::Time now);
  void OnReadable(uint64_t id);
  void CloseHeld(uint64_t id);
  void Evicted(std::pair<uint64_t, ConnectionLimiter::State> evicted);
  void PublishCounts();
  void RejectOverCapacity(int fd);

  // Workers.
  void WorkerLoop();
  // Answers the complete requests in the connection's buffer; true when it stays open for more.
  bool Serve(HttpConnection& conn);
  // The body a request may carry (its route's, for POST): 0 except on HandlePost paths.
  size_t BodyLimit(const HttpRequestHead& head) const;
  // Handles one parsed request; returns false when the connection must close afterwards.
  bool Respond(HttpConnection& conn, const HttpRequestHead& request);
  bool Send(HttpConnection& conn, std::string_view path, HttpResponse& response, bool head_only,
            bool keep_alive, int version_minor);

  struct Route {
    HttpHandler handler;
    size_t max_body_bytes = 0;  // 0: GET and HEAD; else POST with a body of at most this
  };

  HttpServerOptions options_;
  std::unordered_map<std::string, Route> routes_;  // by path; fixed once started
  const RequestBodyLimit body_limit_ = [this](const HttpRequestHead& head) { return BodyLimit(head); };
  ResponseObserver observer_;
  std::unique_ptr<BasicAuthenticator> auth_;
  SSL_CTX* ssl_ctx_ = nullptr;
  int listen_fd_ = -1;
  int wake_fd_ = -1;   // eventfd: workers hand connections back, Stop() ends the loop
  int epoll_fd_ = -1;  // the loop's: listen_fd_, wake_fd_ and every held connection not being answered
  uint16_t port_ = 0;
  bool started_ = false;
  std::thread loop_thread_;

  // Loop thread only.
  ConnectionLimiter limiter_;
  std::unordered_map<uint64_t, ConnectionPtr> held_;  // connections the loop watches (header or idle)
  uint64_t next_id_ = 2;                              // 0 and 1 tag listen_fd_ and wake_fd_ in epoll
  bool accept_paused_ = false;                        // out of descriptors with nothing to evict
  ConnectionLimiter::Time accept_resume_{};

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_requested_{false};  // mirrors stopping_ for lock-free checks between requests
  std::deque<ConnectionPtr> queue_ GUARDED_BY(mu_);      // complete requests not yet picked by a worker
  std::set<int> serving_ GUARDED_BY(mu_);                // fds being answered (shut down on Stop)
  std::vector<ConnectionPtr> returned_ GUARDED_BY(mu_);  // kept alive by a worker, for the loop
  std::vector<uint64_t> closed_ GUARDED_BY(mu_);         // closed by a worker, for the loop
  size_t idle_workers_ GUARDED_BY(mu_) = 0;
  std::vector<std::thread> workers_;  // grown by the loop thread only

  std::atomic<uint64_t> evicted_header_{0}, evicted_idle_{0}, timed_out_header_{0}, timed_out_idle_{0},
      refused_{0};
  std::atomic<uint64_t> held_header_{0}, held_idle_{0}, held_serving_{0};
};

}  // namespace gpuscope
