// TestHttpServer: a small HTTP/1.1 server for tests of push clients. Unlike the metrics server
// (src/sinks/prometheus/http_server.h, GET/HEAD only), it reads request bodies (Content-Length) and lets
// the handler answer with any bytes at all: a well-formed response, garbage, nothing (hang), or a close.
// It listens on 127.0.0.1 (SO_REUSEADDR, so a restarted server can take the same port back), serves each
// connection on a thread of its own with keep-alive, and optionally speaks TLS.
//
// Thread-safety: Start(), Stop() and the destructor from one controlling thread; the handler runs
// concurrently on connection threads; port() and connections_accepted() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/status.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope::testing {

struct TestHttpRequest {
  std::string method;
  std::string target;                                        // as sent
  std::string path;                                          // target up to '?'
  std::string query;                                         // after '?'
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;

  std::string_view Header(std::string_view lower_case_name) const;
  // Value of `key` in the query string (no percent-decoding); empty when absent.
  std::string QueryParam(std::string_view key) const;
};

struct TestHttpReply {
  std::string raw;     // written to the connection as it is (a whole response, or garbage)
  bool close = false;  // close the connection after writing `raw`
  bool hang = false;   // write nothing; keep the connection open until the peer closes or Stop()
};

// A complete HTTP/1.1 response with Content-Length.
std::string MakeHttpResponse(int status, std::string_view content_type, std::string_view body,
                             const std::vector<std::pair<std::string, std::string>>& extra_headers = {});

using TestHttpHandler = std::function<TestHttpReply(const TestHttpRequest& request)>;

struct TestHttpServerOptions {
  uint16_t port = 0;      // 0 picks a free port
  std::string cert_file;  // TLS when set (PEM), with key_file
  std::string key_file;
  size_t max_body_bytes = 64 << 20;  // larger requests are answered 413 and the connection closed
};

class TestHttpServer {
 public:
  TestHttpServer(TestHttpServerOptions options, TestHttpHandler handler);
  ~TestHttpServer();  // Stop()
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  // Binds 127.0.0.1:port and starts accepting. Unavailable when the port is taken; InvalidArgument
  // for unreadable TLS files.
  Status Start();
  // Closes the listener and every connection (hanging ones too) and joins all threads.
  void Stop();

  uint16_t port() const { return port_.load(); }
  uint64_t connections_accepted() const { return connections_accepted_.load(); }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void AcceptLoop();
  void Serve(int fd);

  TestHttpServerOptions options_;
  TestHttpHandler handler_;
  SSL_CTX* ssl_ctx_ = nullptr;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<uint16_t> port_{0};
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::set<int> open_fds_;     // guarded by mu_
  std::list<Worker> workers_;  // guarded by mu_
};

// Polls `condition` every 2 ms until it holds (true) or a minute has passed (false): what a test waits
// for from a sink's or a server's own thread.
bool Eventually(const std::function<bool()>& condition);

}  // namespace gpuscope::testing
