#include "src/sinks/prometheus/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>

#include "src/sinks/prometheus/basic_auth.h"

namespace gpuscope {
namespace {

// RFC 9110 IMF-fixdate, recomputed at most once per second per thread.
std::string_view HttpDate() {
  thread_local time_t cached_second = 0;
  thread_local char buf[40];
  thread_local size_t len = 0;
  time_t now = time(nullptr);
  if (now != cached_second) {
    struct tm tm;
    gmtime_r(&now, &tm);
    len = strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = now;
  }
  return std::string_view(buf, len);
}

void SetTimeout(int fd, int option, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

std::string OpenSslError(std::string_view what) {
  std::string message(what);
  unsigned long code = ERR_get_error();
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    message += ": ";
    message += buf;
  }
  ERR_clear_error();
  return message;
}

int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

Status CreateSslContext(const TlsServerConfig& tls, SSL_CTX** out) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::Internal(OpenSslError("SSL_CTX_new"));
  auto fail = [&](Status status) {
    SSL_CTX_free(ctx);
    return status;
  };
  auto version = [](TlsVersion v) { return v == TlsVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION; };
  SSL_CTX_set_min_proto_version(ctx, version(tls.min_version));
  if (tls.max_version) SSL_CTX_set_max_proto_version(ctx, version(*tls.max_version));
  SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
    return fail(Status::InvalidArgument(OpenSslError("cannot load cert_file " + tls.cert_file)));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail(Status::InvalidArgument(OpenSslError("cannot load key_file " + tls.key_file)));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail(Status::InvalidArgument(OpenSslError("key_file does not match cert_file")));
  }
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
      return fail(Status::InvalidArgument(OpenSslError("cannot load client_ca_file " + tls.client_ca_file)));
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
  }
  static const unsigned char kSessionContext[] = "gpuscope";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  switch (tls.client_auth_type) {
    case ClientAuthType::kNoClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuthType::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyCertificate);
      break;
    case ClientAuthType::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAnyCertificate);
      break;
    case ClientAuthType::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuthType::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  *out = ctx;
  return Status::Ok();
}

}  // namespace

// A plain or TLS byte stream over an accepted socket.
class HttpServer::Connection {
 public:
  Connection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Connection() {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      SSL_shutdown(ssl_);
      SSL_free(ssl_);
    }
  }

  // Appends what is available (blocking up to the read timeout); false on EOF, error or timeout.
  bool Read(std::string& buf) {
    char chunk[16384];
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      n = SSL_read(ssl_, chunk, sizeof(chunk));
    } else {
      do {
        n = recv(fd_, chunk, sizeof(chunk), 0);
      } while (n < 0 && errno == EINTR);
    }
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
    return true;
  }

  // Writes both parts fully; false on error or timeout.
  bool Write(std::string_view a, std::string_view b) {
    if (ssl_ != nullptr) {
      // One TLS record sequence for small responses; two writes otherwise (no copy of large bodies).
      if (b.size() <= 16384) {
        std::string joined;
        joined.reserve(a.size() + b.size());
        joined.append(a).append(b);
        return SslWrite(joined);
      }
      return SslWrite(a) && SslWrite(b);
    }
    iovec iov[2] = {{const_cast<char*>(a.data()), a.size()}, {const_cast<char*>(b.data()), b.size()}};
    int index = 0;
    while (index < 2) {
      if (iov[index].iov_len == 0) {
        ++index;
        continue;
      }
      msghdr msg{};
      msg.msg_iov = iov + index;
      msg.msg_iovlen = 2 - index;
      ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      size_t left = static_cast<size_t>(n);
      while (index < 2 && left >= iov[index].iov_len) {
        left -= iov[index].iov_len;
        ++index;
      }
      if (index < 2) {
        iov[index].iov_base = static_cast<char*>(iov[index].iov_base) + left;
        iov[index].iov_len -= left;
      }
    }
    return true;
  }

 private:
  bool SslWrite(std::string_view data) {
    if (data.empty()) return true;
    ERR_clear_error();
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) == static_cast<int>(data.size());
  }

  int fd_;
  SSL* ssl_;
};

Status ParseListenAddress(std::string_view address, std::string& host, uint16_t& port) {
  size_t colon;
  if (address.starts_with("[")) {
    size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return Status::InvalidArgument("listen address \"" + std::string(address) + "\": expected [host]:port");
    }
    host = std::string(address.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = address.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument("listen address \"" + std::string(address) + "\": expected host:port");
    }
    host = std::string(address.substr(0, colon));
    if (host.find(':') != std::string::npos) {
      return Status::InvalidArgument("listen address \"" + std::string(address) + "\": bracket IPv6 hosts");
    }
  }
  std::string_view digits = address.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || value > 65535) {
    return Status::InvalidArgument("listen address \"" + std::string(address) + "\": invalid port");
  }
  port = static_cast<uint16_t>(value);
  return Status::Ok();
}

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {
  if (options_.max_connections == 0) options_.max_connections = 1;
}

HttpServer::~HttpServer() {
  Stop();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
}

void HttpServer::Handle(std::string path, HttpHandler handler) {
  handlers_[std::move(path)] = std::move(handler);
}

void HttpServer::SetResponseObserver(ResponseObserver observer) { observer_ = std::move(observer); }

Status HttpServer::Start() {
  if (started_) return Status::Internal("HttpServer::Start called twice");
  std::string host;
  uint16_t port = 0;
  Status status = ParseListenAddress(options_.listen_address, host, port);
  if (!status.ok()) return status;

  if (options_.web_config.tls) {
    status = CreateSslContext(*options_.web_config.tls, &ssl_ctx_);
    if (!status.ok()) return status;
  }
  if (!options_.web_config.basic_auth_users.empty()) {
    auth_ = std::make_unique<BasicAuthenticator>(options_.web_config.basic_auth_users);
  }

  // A peer closing mid-write must not kill the agent. Plain sockets use MSG_NOSIGNAL; OpenSSL writes
  // with write(2), so SIGPIPE is ignored process-wide unless someone installed a handler.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* results = nullptr;
  std::string port_text = std::to_string(port);
  // An empty host means all interfaces: prefer the IPv6 wildcard (dual-stack), fall back to IPv4.
  if (host.empty()) hints.ai_family = AF_INET6;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &results);
  if (rc != 0 && host.empty()) {
    hints.ai_family = AF_INET;
    rc = getaddrinfo(nullptr, port_text.c_str(), &hints, &results);
  }
  if (rc != 0) {
    return Status::InvalidArgument("listen address \"" + options_.listen_address + "\": " + gai_strerror(rc));
  }
  std::string last_error = "no usable address";
  for (addrinfo* ai = results; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6 && host.empty())
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      last_error = std::strerror(errno);
      close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(results);
  if (listen_fd_ < 0) {
    return Status::Unavailable("cannot listen on " + options_.listen_address + ": " + last_error);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    return Status::Internal(std::string("eventfd: ") + std::strerror(errno));
  }
  started_ = true;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  stop_requested_ = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  accept_thread_.join();
  close(listen_fd_);
  listen_fd_ = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Interrupt blocking reads and writes; the workers close their own descriptors.
    for (int fd : serving_) shutdown(fd, SHUT_RDWR);
    for (int fd : queue_) close(fd);
    active_ -= queue_.size();
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  close(wake_fd_);
  wake_fd_ = -1;
}

void HttpServer::AcceptLoop() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    int rc = poll(fds, 2, -1);
    if (rc < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if (rc <= 0 || fds[0].revents == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: back off briefly instead of spinning on a pending connection.
      if (errno == EMFILE || errno == ENFILE) poll(fds + 1, 1, 50);
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (active_ >= options_.max_connections) {
      lock.unlock();
      RejectOverCapacity(fd);
      continue;
    }
    ++active_;
    queue_.push_back(fd);
    if (queue_.size() > idle_workers_) workers_.emplace_back([this] { WorkerLoop(); });
    lock.unlock();
    cv_.notify_one();
  }
}

void HttpServer::RejectOverCapacity(int fd) {
  if (ssl_ctx_ == nullptr) {
    static constexpr std::string_view kResponse =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
        "21\r\n"
        "Connection: close\r\n\r\ntoo many connections\n";
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    [[maybe_unused]] ssize_t n = send(fd, kResponse.data(), kResponse.size(), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    // Drain what the client already sent so that close() sends FIN rather than RST.
    char drain[4096];
    while (recv(fd, drain, sizeof(drain), 0) > 0) {
    }
  }
  close(fd);
  if (observer_) observer_("", 503);
}

void HttpServer::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_workers_;
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_workers_;
    if (stopping_) return;
    int fd = queue_.front();
    queue_.pop_front();
    serving_.insert(fd);
    lock.unlock();
    Serve(fd);
    lock.lock();
    serving_.erase(fd);
    close(fd);
    --active_;
  }
}

void HttpServer::Serve(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  SetTimeout(fd, SO_RCVTIMEO, options_.read_timeout);
  SetTimeout(fd, SO_SNDTIMEO, options_.read_timeout);
  SSL* ssl = nullptr;
  if (ssl_ctx_ != nullptr) {
    ssl = SSL_new(ssl_ctx_);
    if (ssl == nullptr) return;
    SSL_set_fd(ssl, fd);
    ERR_clear_error();
    if (SSL_accept(ssl) != 1) {
      ERR_clear_error();
      SSL_free(ssl);
      return;
    }
  }
  Connection conn(fd, ssl);
  std::string buf;
  buf.reserve(1024);
  HttpRequestHead request;
  size_t scan_from = 0;  // bytes before this hold no end of head: avoids re-parsing on every small read
  while (true) {
    bool may_be_complete = buf.find("\n\n", scan_from) != std::string::npos ||
                           buf.find("\n\r\n", scan_from) != std::string::npos ||
                           buf.size() >= kMaxRequestHeadBytes;
    ParseResult result;
    if (may_be_complete) result = ParseRequestHead(buf, request);
    if (result.outcome == ParseOutcome::kIncomplete) {
      scan_from = buf.size() >= 2 ? buf.size() - 2 : 0;
      if (!conn.Read(buf)) return;
      continue;
    }
    if (result.outcome == ParseOutcome::kError) {
      HttpResponse response;
      response.status = result.error_status;
      response.body = std::string(result.error) + "\n";
      Send(conn, "", response, false, false, 1);
      return;
    }
    bool keep_alive = Respond(conn, request);
    buf.erase(0, result.consumed);
    scan_from = 0;
    if (!keep_alive || stop_requested_.load(std::memory_order_relaxed)) return;
  }
}

bool HttpServer::Respond(Connection& conn, const HttpRequestHead& request) {
  HttpResponse response;
  bool head_only = request.method == "HEAD";
  if (auth_ != nullptr && !auth_->Check(request.Header("Authorization"))) {
    response.status = 401;
    response.headers.emplace_back("WWW-Authenticate", "Basic");
    response.body = "Unauthorized\n";
  } else if (auto it = handlers_.find(std::string(request.path)); it == handlers_.end()) {
    response.status = 404;
    response.body = "404 page not found\n";
  } else if (request.method != "GET" && !head_only) {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD");
    response.body = "method not allowed\n";
  } else {
    it->second(request, response);
  }
  return Send(conn, request.path, response, head_only, request.keep_alive, request.version_minor) &&
         request.keep_alive;
}

bool HttpServer::Send(Connection& conn, std::string_view path, HttpResponse& response, bool head_only,
                      bool keep_alive, int version_minor) {
  std::string_view body = response.Body();
  std::string head;
  head.reserve(256);
  head.append(version_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ");
  char number[24];
  auto end = std::to_chars(number, number + sizeof(number), response.status).ptr;
  head.append(number, end).push_back(' ');
  head.append(HttpReasonPhrase(response.status)).append("\r\nDate: ").append(HttpDate());
  head.append("\r\nContent-Type: ").append(response.content_type);
  end = std::to_chars(number, number + sizeof(number), body.size()).ptr;
  head.append("\r\nContent-Length: ").append(number, end).append("\r\n");
  for (const auto& [name, value] : response.headers)
    head.append(name).append(": ").append(value).append("\r\n");
  for (const auto& [name, value] : options_.web_config.headers)
    head.append(name).append(": ").append(value).append("\r\n");
  if (!keep_alive) {
    head.append("Connection: close\r\n");
  } else if (version_minor == 0) {
    head.append("Connection: keep-alive\r\n");
  }
  head.append("\r\n");
  if (observer_) observer_(path, response.status);
  return conn.Write(head, head_only ? std::string_view() : body);
}

}  // namespace gpuscope
