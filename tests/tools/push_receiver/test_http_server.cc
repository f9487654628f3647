#include "tests/tools/push_receiver/test_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>

#include "src/sinks/prometheus/http_request.h"

namespace gpuscope::testing {
namespace {

constexpr size_t kMaxHeadBytes = 64 << 10;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses the request line and headers of `head` (without the final empty line).
bool ParseHead(std::string_view head, TestHttpRequest* request) {
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1 || !line.substr(sp2 + 1).starts_with("HTTP/1."))
    return false;
  request->method = std::string(line.substr(0, sp1));
  request->target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const size_t q = request->target.find('?');
  request->path = request->target.substr(0, q);
  request->query = q == std::string::npos ? "" : request->target.substr(q + 1);
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t next = head.find("\r\n", pos);
    if (next == std::string_view::npos) next = head.size();
    const std::string_view header = head.substr(pos, next - pos);
    pos = next + 2;
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    request->headers.emplace_back(Lower(header.substr(0, colon)),
                                  std::string(Trim(header.substr(colon + 1))));
  }
  return true;
}

}  // namespace

std::string_view TestHttpRequest::Header(std::string_view lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return value;
  }
  return {};
}

std::string TestHttpRequest::QueryParam(std::string_view key) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key)
      return eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return "";
}

std::string MakeHttpResponse(int status, std::string_view content_type, std::string_view body,
                             const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(HttpReasonPhrase(status)) + "\r\n";
  if (!content_type.empty()) out += "Content-Type: " + std::string(content_type) + "\r\n";
  for (const auto& [name, value] : extra_headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out += body;
  return out;
}

TestHttpServer::TestHttpServer(TestHttpServerOptions options, TestHttpHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

TestHttpServer::~TestHttpServer() {
  Stop();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
}

Status TestHttpServer::Start() {
  if (!options_.cert_file.empty()) {
    ssl_ctx_ = SSL_CTX_new(TLS_server_method());
    if (ssl_ctx_ == nullptr ||
        SSL_CTX_use_certificate_chain_file(ssl_ctx_, options_.cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ssl_ctx_, options_.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      ERR_clear_error();
      return Status::InvalidArgument("cannot load TLS certificate or key");
    }
  }
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(options_.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    const std::string error = std::strerror(errno);
    close(listen_fd_);
    listen_fd_ = -1;
    return Status::Unavailable("cannot listen on 127.0.0.1:" + std::to_string(options_.port) + ": " + error);
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  stopping_ = false;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void TestHttpServer::Stop() {
  if (listen_fd_ < 0) return;
  stopping_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  accept_thread_.join();
  std::list<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (Worker& worker : workers) worker.thread.join();
  close(listen_fd_);
  close(wake_fd_);
  listen_fd_ = -1;
  wake_fd_ = -1;
}

void TestHttpServer::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_accepted_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    open_fds_.insert(fd);
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back(Worker{std::thread([this, fd, done] {
                                Serve(fd);
                                done->store(true);
                              }),
                              done});
  }
}

void TestHttpServer::Serve(int fd) {
  SSL* ssl = nullptr;
  bool ok = true;
  if (ssl_ctx_ != nullptr) {
    ssl = SSL_new(ssl_ctx_);
    SSL_set_fd(ssl, fd);
    ok = SSL_accept(ssl) == 1;
    ERR_clear_error();
  }
  auto read_more = [&](std::string& buffer) {
    char chunk[16384];
    const ssize_t n =
        ssl != nullptr ? SSL_read(ssl, chunk, sizeof(chunk)) : recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      ERR_clear_error();
      return false;
    }
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  };
  auto write_all = [&](std::string_view data) {
    while (!data.empty()) {
      const int want = static_cast<int>(std::min<size_t>(data.size(), 1 << 20));
      const ssize_t n =
          ssl != nullptr ? SSL_write(ssl, data.data(), want) : send(fd, data.data(), want, MSG_NOSIGNAL);
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  };

  std::string buffer;
  while (ok && !stopping_) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos && buffer.size() <= kMaxHeadBytes) {
      if (!read_more(buffer)) {
        ok = false;
        break;
      }
    }
    if (!ok) break;
    TestHttpRequest request;
    if (end == std::string::npos || !ParseHead(std::string_view(buffer).substr(0, end), &request)) {
      write_all(MakeHttpResponse(400, "text/plain", "bad request head\n", {{"Connection", "close"}}));
      break;
    }
    if (!request.Header("transfer-encoding").empty()) {
      write_all(
          MakeHttpResponse(501, "text/plain", "chunked requests not supported\n", {{"Connection", "close"}}));
      break;
    }
    size_t length = 0;
    const std::string_view length_text = request.Header("content-length");
    if (!length_text.empty()) {
      const auto [p, ec] =
          std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
      if (ec != std::errc() || p != length_text.data() + length_text.size()) {
        write_all(MakeHttpResponse(400, "text/plain", "bad Content-Length\n", {{"Connection", "close"}}));
        break;
      }
    }
    if (length > options_.max_body_bytes) {
      write_all(MakeHttpResponse(413, "text/plain", "request body too large\n", {{"Connection", "close"}}));
      break;
    }
    buffer.erase(0, end + 4);
    while (buffer.size() < length) {
      if (!read_more(buffer)) {
        ok = false;
        break;
      }
    }
    if (!ok) break;
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);

    const TestHttpReply reply = handler_(request);
    if (reply.hang) {
      // Answer nothing; wait for the peer to give up (or Stop(), which shuts the socket down).
      std::string ignored;
      while (!stopping_ && read_more(ignored)) ignored.clear();
      break;
    }
    if (!write_all(reply.raw) || reply.close) break;
    const std::string connection = Lower(request.Header("connection"));
    if (connection.find("close") != std::string::npos) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(fd);
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  close(fd);
}

bool Eventually(const std::function<bool()>& condition) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace gpuscope::testing
