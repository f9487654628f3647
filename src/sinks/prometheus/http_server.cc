// HttpServer: the event loop that accepts and reads connections within the connection limiter's bounds,
// the worker threads that answer complete requests, and the responses. Its listening side (address,
// socket, TLS context) is in http_listener.cc, a connection's socket and TLS I/O in http_connection.cc.
#include "src/sinks/prometheus/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>

#include "src/sinks/prometheus/basic_auth.h"
#include "src/sinks/prometheus/http_connection.h"
#include "src/sinks/prometheus/http_listener.h"

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

// epoll tags of the two descriptors that are not connections (connection ids start above them).
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
// Connections accepted per loop round before the loop reads from those it holds again: a burst of
// connects cannot starve a client whose request (or TLS handshake reply) is arriving.
constexpr int kAcceptBatch = 16;
// Would-be victims checked for bytes waiting before one is evicted for a new connection.
constexpr int kVictimChecks = 8;
// Silent connections looked at for bytes waiting when the one to go has sent nothing.
constexpr size_t kSilentChecks = 16;
// How long accepting pauses when the process is out of descriptors and nothing can be evicted.
constexpr std::chrono::milliseconds kAcceptPause{50};

ConnectionLimiter::Options LimiterOptions(const HttpServerOptions& options) {
  ConnectionLimiter::Options limits;
  limits.capacity = std::max<size_t>(options.max_connections, 1);
  limits.header_timeout = options.header_timeout;
  limits.idle_timeout = options.read_timeout;
  return limits;
}

void Wake(int fd) {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof(one));
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)), limiter_(LimiterOptions(options_)) {}

HttpServer::~HttpServer() {
  Stop();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
}

void HttpServer::Handle(std::string path, HttpHandler handler) {
  routes_[std::move(path)] = Route{std::move(handler), 0};
}

void HttpServer::HandlePost(std::string path, size_t max_body_bytes, HttpHandler handler) {
  routes_[std::move(path)] = Route{std::move(handler), std::max<size_t>(max_body_bytes, 1)};
}

size_t HttpServer::BodyLimit(const HttpRequestHead& head) const {
  if (head.method != "POST") return 0;
  auto it = routes_.find(std::string(head.path));
  return it == routes_.end() ? 0 : it->second.max_body_bytes;
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

  status = OpenListeningSocket(options_.listen_address, host, port, &listen_fd_);
  if (!status.ok()) return status;
  port_ = BoundPort(listen_fd_);

  int flags = fcntl(listen_fd_, F_GETFL);
  fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK);  // the loop accepts until EAGAIN
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event listen_event{EPOLLIN, {.u64 = kListenTag}};
  epoll_event wake_event{EPOLLIN, {.u64 = kWakeTag}};
  if (wake_fd_ < 0 || epoll_fd_ < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event) != 0 ||
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event) != 0) {
    std::string error = std::strerror(errno);
    for (int* fd : {&listen_fd_, &wake_fd_, &epoll_fd_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    return Status::Internal("cannot set up the event loop: " + error);
  }
  started_ = true;
  loop_thread_ = std::thread([this] { EventLoop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  {
    MutexLock lock(&mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  stop_requested_ = true;
  Wake(wake_fd_);
  loop_thread_.join();  // closes the connections it held
  close(listen_fd_);
  listen_fd_ = -1;
  close(epoll_fd_);
  epoll_fd_ = -1;
  {
    MutexLock lock(&mu_);
    // Interrupt writes in progress; the workers hand their connections back and exit.
    for (int fd : serving_) shutdown(fd, SHUT_RDWR);
  }
  cv_.NotifyAll();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  {
    MutexLock lock(&mu_);
    queue_.clear();
    returned_.clear();
    closed_.clear();
  }
  close(wake_fd_);
  wake_fd_ = -1;
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats stats;
  stats.evicted_header = evicted_header_.load(std::memory_order_relaxed);
  stats.evicted_idle = evicted_idle_.load(std::memory_order_relaxed);
  stats.timed_out_header = timed_out_header_.load(std::memory_order_relaxed);
  stats.timed_out_idle = timed_out_idle_.load(std::memory_order_relaxed);
  stats.refused = refused_.load(std::memory_order_relaxed);
  stats.held_header = held_header_.load(std::memory_order_relaxed);
  stats.held_idle = held_idle_.load(std::memory_order_relaxed);
  stats.held_serving = held_serving_.load(std::memory_order_relaxed);
  return stats;
}

void HttpServer::EventLoop() {
  using Clock = std::chrono::steady_clock;
  epoll_event events[128];
  while (true) {
    Clock::time_point now = Clock::now();
    std::optional<Clock::time_point> wake_at = limiter_.NextDeadline();
    if (accept_paused_ && (!wake_at || accept_resume_ < *wake_at)) wake_at = accept_resume_;
    int timeout_ms = -1;
    if (wake_at) {
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(*wake_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 60000));
    }
    int n = epoll_wait(epoll_fd_, events, static_cast<int>(std::size(events)), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    now = Clock::now();
    bool accept_ready = false;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeTag) {
        // Drained before stopping_ is read, so that a Stop() after the read always wakes the next wait.
        uint64_t count;
        [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof(count));
      } else if (events[i].data.u64 == kListenTag) {
        accept_ready = true;
      }
    }
    {
      MutexLock lock(&mu_);
      if (stopping_) break;
    }
    TakeBackFromWorkers(now);
    // Connections first, then new ones: whoever has sent its request is served before anyone is evicted.
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 > kWakeTag) OnReadable(events[i].data.u64);
    }
    if (accept_paused_ && now >= accept_resume_) {
      epoll_event listen_event{EPOLLIN, {.u64 = kListenTag}};
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &listen_event);
      accept_paused_ = false;
      accept_ready = true;
    }
    if (accept_ready) AcceptSome(now);
    ConnectionLimiter::Expired expired = limiter_.TakeExpired(now);
    timed_out_header_.fetch_add(expired.header.size(), std::memory_order_relaxed);
    timed_out_idle_.fetch_add(expired.idle.size(), std::memory_order_relaxed);
    for (uint64_t id : expired.header) held_.erase(id);
    for (uint64_t id : expired.idle) held_.erase(id);
    PublishCounts();
  }
  held_.clear();
}

void HttpServer::TakeBackFromWorkers(ConnectionLimiter::Time now) {
  std::vector<ConnectionPtr> returned;
  std::vector<uint64_t> closed;
  {
    MutexLock lock(&mu_);
    returned.swap(returned_);
    closed.swap(closed_);
  }
  for (uint64_t id : closed) limiter_.Remove(id);
  for (ConnectionPtr& conn : returned) {
    uint64_t id = conn->id();
    limiter_.FinishServing(id, now);
    held_.emplace(id, std::move(conn));
    // TLS may hold decrypted bytes that epoll cannot see: look once now.
    OnReadable(id);
  }
}

void HttpServer::OnReadable(uint64_t id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;  // evicted or timed out earlier in this round
  HttpConnection& conn = *it->second;
  uint32_t want = EPOLLIN;
  HttpConnection::Progress progress = conn.ReadHead();
  if (conn.ReceivedAny()) limiter_.Received(id);
  if (conn.awaiting_hello && conn.PastHello()) {
    conn.awaiting_hello = false;
    limiter_.HelloDone(id);
  }
  switch (progress) {
    case HttpConnection::Progress::kNeedRead:
      break;
    case HttpConnection::Progress::kNeedWrite:
      want = EPOLLIN | EPOLLOUT;
      break;
    case HttpConnection::Progress::kClosed:
      limiter_.Remove(id);
      held_.erase(it);
      return;
    case HttpConnection::Progress::kHeadReady: {
      limiter_.StartServing(id);
      if (conn.watched != 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, conn.fd(), nullptr);
      conn.watched = 0;
      ConnectionPtr owned = std::move(it->second);
      held_.erase(it);
      {
        MutexLock lock(&mu_);
        queue_.push_back(std::move(owned));
        if (queue_.size() > idle_workers_) workers_.emplace_back([this] { WorkerLoop(); });
      }
      cv_.NotifyOne();
      return;
    }
  }
  if (conn.watched != want) {
    epoll_event event{want, {.u64 = id}};
    if (epoll_ctl(epoll_fd_, conn.watched == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, conn.fd(), &event) != 0) {
      limiter_.Remove(id);
      held_.erase(it);
      return;
    }
    conn.watched = want;
  }
}

void HttpServer::AcceptSome(ConnectionLimiter::Time now) {
  for (int accepted = 0; accepted < kAcceptBatch;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: a waiting or idle connection gives its own up; when there is none, pause
        // accepting briefly instead of spinning on the pending connection.
        if (auto victim = limiter_.EvictOne()) {
          Evicted(*victim);
          continue;
        }
        epoll_event paused{0, {.u64 = kListenTag}};
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &paused);
        accept_paused_ = true;
        accept_resume_ = now + kAcceptPause;
      }
      return;  // EAGAIN: nothing more pending
    }
    ++accepted;
    uint64_t id = next_id_++;
    AdvanceVictimsWithPendingBytes();
    ConnectionLimiter::Admission admission = limiter_.Admit(
        id, now, ssl_ctx_ != nullptr ? ConnectionLimiter::State::kHello : ConnectionLimiter::State::kHeader);
    if (admission.evicted) Evicted(*admission.evicted);
    if (!admission.admitted) {
      RejectOverCapacity(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL* ssl = nullptr;
    if (ssl_ctx_ != nullptr) {
      ssl = SSL_new(ssl_ctx_);
      if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
        ERR_clear_error();
        if (ssl != nullptr) SSL_free(ssl);
        close(fd);
        limiter_.Remove(id);
        continue;
      }
    }
    auto conn = std::make_unique<HttpConnection>(id, fd, ssl, &body_limit_);
    conn->awaiting_hello = ssl != nullptr;
    held_.emplace(id, std::move(conn));
    OnReadable(id);  // a scraper's request (or TLS hello) is usually there already
  }
}

// Under a reconnect flood the slots turn over every few milliseconds, and a scraper's hello or request can
// arrive after its connection's last read: oldest-first eviction would then pick exactly it. So before a
// connection is evicted, one whose bytes are already waiting in the socket makes its progress first. When
// the one to go has sent nothing (a flood whose clients' bytes come after their accept leaves only silent
// connections held), a few of the next silent ones are looked at too: a flood client whose half header
// is waiting becomes one that sent something, and goes instead of a scraper still writing its request.
void HttpServer::AdvanceVictimsWithPendingBytes() {
  auto has_pending = [this](uint64_t id) {
    auto it = held_.find(id);
    int pending = 0;
    return it != held_.end() && ioctl(it->second->fd(), FIONREAD, &pending) == 0 && pending > 0;
  };
  for (int i = 0; i < kVictimChecks && limiter_.size() >= limiter_.capacity(); ++i) {
    std::optional<uint64_t> victim = limiter_.NextVictim();
    if (!victim) return;
    if (has_pending(*victim)) {
      OnReadable(*victim);
      if (limiter_.NextVictim() == victim)
        return;  // still the first to go: its bytes did not complete a step
      continue;
    }
    if (!limiter_.IsSilent(*victim)) return;
    for (uint64_t id : limiter_.OldestSilent(kSilentChecks)) {
      if (id == *victim || !has_pending(id)) continue;
      OnReadable(id);  // it sent something now (or is served): no longer behind the silent victim
      break;
    }
    if (limiter_.NextVictim() == victim) return;
  }
}

void HttpServer::Evicted(std::pair<uint64_t, ConnectionLimiter::State> evicted) {
  auto& counter = evicted.second == ConnectionLimiter::State::kIdle ? evicted_idle_ : evicted_header_;
  counter.fetch_add(1, std::memory_order_relaxed);
  held_.erase(evicted.first);
}

void HttpServer::PublishCounts() {
  held_header_.store(
      limiter_.count(ConnectionLimiter::State::kHello) + limiter_.count(ConnectionLimiter::State::kHeader),
      std::memory_order_relaxed);
  held_idle_.store(limiter_.count(ConnectionLimiter::State::kIdle), std::memory_order_relaxed);
  held_serving_.store(limiter_.count(ConnectionLimiter::State::kServing), std::memory_order_relaxed);
}

void HttpServer::RejectOverCapacity(int fd) {
  refused_.fetch_add(1, std::memory_order_relaxed);
  if (ssl_ctx_ == nullptr) {
    static constexpr std::string_view kResponse =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
        "21\r\n"
        "Connection: close\r\n\r\ntoo many connections\n";
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
  while (true) {
    ConnectionPtr conn;
    {
      MutexLock lock(&mu_);
      ++idle_workers_;
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      --idle_workers_;
      if (stopping_) return;
      conn = std::move(queue_.front());
      queue_.pop_front();
      serving_.insert(conn->fd());
    }
    bool keep = Serve(*conn);
    bool closed = false;
    {
      MutexLock lock(&mu_);
      serving_.erase(conn->fd());
      if (keep && !stopping_) {
        returned_.push_back(std::move(conn));
      } else {
        closed_.push_back(conn->id());
        closed = true;
      }
    }
    if (closed) conn.reset();  // closes the socket outside the lock
    MutexLock lock(&mu_);
    if (!stopping_) Wake(wake_fd_);
  }
}

bool HttpServer::Serve(HttpConnection& conn) {
  while (true) {
    HttpRequestHead request;
    ParseResult result = ParseRequestHead(conn.buffer(), request, body_limit_);
    if (result.outcome == ParseOutcome::kIncomplete) return true;  // the loop reads the next one
    if (result.outcome == ParseOutcome::kError) {
      HttpResponse response;
      response.status = result.error_status;
      response.body = std::string(result.error) + "\n";
      // A body refused (411, 413: the request line parsed) on a path with no route: the path is what is
      // wrong, and a client POSTing to an endpoint that is switched off is told so.
      if ((result.error_status == 411 || result.error_status == 413) &&
          !routes_.contains(std::string(request.path))) {
        response.status = 404;
        response.body = "404 page not found\n";
      }
      Send(conn, "", response, false, false, 1);
      return false;
    }
    const size_t request_bytes = result.consumed + request.content_length;
    if (conn.buffer().size() < request_bytes) return true;  // a pipelined request's body: the loop reads it
    request.body = std::string_view(conn.buffer()).substr(result.consumed, request.content_length);
    bool keep_alive = Respond(conn, request);
    conn.Consume(request_bytes);
    if (!keep_alive || stop_requested_.load(std::memory_order_relaxed)) return false;
  }
}

bool HttpServer::Respond(HttpConnection& conn, const HttpRequestHead& request) {
  HttpResponse response;
  bool head_only = request.method == "HEAD";
  if (auth_ != nullptr && !auth_->Check(request.Header("Authorization"))) {
    response.status = 401;
    response.headers.emplace_back("WWW-Authenticate", "Basic");
    response.body = "Unauthorized\n";
  } else if (auto it = routes_.find(std::string(request.path)); it == routes_.end()) {
    response.status = 404;
    response.body = "404 page not found\n";
  } else if (const bool post = it->second.max_body_bytes != 0;
             post ? request.method != "POST" : request.method != "GET" && !head_only) {
    response.status = 405;
    response.headers.emplace_back("Allow", post ? "POST" : "GET, HEAD");
    response.body = "method not allowed\n";
  } else {
    it->second.handler(request, response);
  }
  return Send(conn, request.path, response, head_only, request.keep_alive, request.version_minor) &&
         request.keep_alive;
}

bool HttpServer::Send(HttpConnection& conn, std::string_view path, HttpResponse& response, bool head_only,
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
  return conn.Write(head, head_only ? std::string_view() : body, options_.read_timeout);
}

}  // namespace gpuscope
