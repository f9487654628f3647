#include "src/sinks/push/http_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstring>

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunkBytes = 16 << 10;
constexpr size_t kMaxChunkSizeLineBytes = 1024;

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ToLower(x) == ToLower(y); });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated header value lists `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (EqualsNoCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// The last token of a comma-separated list.
std::string_view LastToken(std::string_view value) {
  const size_t comma = value.rfind(',');
  return Trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
}

// RFC 9110 token characters (header names).
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar); }

bool IsIpLiteral(const std::string& host) {
  in6_addr addr6;
  in_addr addr4;
  return inet_pton(AF_INET, host.c_str(), &addr4) == 1 || inet_pton(AF_INET6, host.c_str(), &addr6) == 1;
}

std::string OpenSslError(std::string_view what) {
  std::string message(what);
  const unsigned long code = ERR_get_error();
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    message += ": ";
    message += buf;
  }
  ERR_clear_error();
  return message;
}

std::string Errno(std::string_view what, int err) { return std::string(what) + ": " + std::strerror(err); }

// Waits until `fd` is ready for `events`, the deadline passes or the interrupt eventfd is signalled.
// Ok also for POLLERR/POLLHUP: the I/O call that follows reports the error.
Status WaitFor(int fd, short events, int interrupt_fd, Clock::time_point deadline) {
  while (true) {
    const auto now = Clock::now();
    if (now >= deadline) return Status::DeadlineExceeded("request timed out");
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[2] = {{fd, events, 0}, {interrupt_fd, POLLIN, 0}};
    const int rc = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(Errno("poll", errno));
    }
    if (fds[1].revents != 0) return Status::Unavailable("request interrupted");
    if (fds[0].revents != 0) return Status::Ok();
  }
}

bool Signalled(int event_fd) {
  pollfd p{event_fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

}  // namespace

Status ParseHttpUrl(std::string_view url, HttpUrl* out) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Status::InvalidArgument("URL contains a space or control character");
    }
  }
  HttpUrl result;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return Status::InvalidArgument("URL must start with http:// or https://: " + std::string(url));
  }
  const std::string_view scheme = url.substr(0, scheme_end);
  if (EqualsNoCase(scheme, "http")) {
    result.port = 80;
  } else if (EqualsNoCase(scheme, "https")) {
    result.tls = true;
    result.port = 443;
  } else {
    return Status::InvalidArgument("unsupported URL scheme '" + std::string(scheme) + "' (http or https)");
  }
  const uint16_t default_port = result.port;
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find('#'));
  const size_t path_start = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_start);
  if (path_start == std::string_view::npos) {
    result.target = "/";
  } else {
    result.target = rest[path_start] == '?' ? "/" : "";
    result.target += rest.substr(path_start);
  }
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("URL user information is not supported: " + std::string(url));
  }
  std::string_view host;
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("unterminated [ in URL host");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument("unexpected text after ] in URL host");
      has_port = true;
      port_text = after.substr(1);
    }
    in6_addr addr;
    if (inet_pton(AF_INET6, std::string(host).c_str(), &addr) != 1) {
      return Status::InvalidArgument("not an IPv6 address in URL: [" + std::string(host) + "]");
    }
  } else {
    const size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
      if (port_text.find(':') != std::string_view::npos) {
        return Status::InvalidArgument("IPv6 addresses in URLs need brackets: " + std::string(url));
      }
    }
  }
  if (host.empty()) return Status::InvalidArgument("URL has no host: " + std::string(url));
  if (has_port && !port_text.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 || value > 65535 ||
        port_text.size() > 5) {
      return Status::InvalidArgument("bad port in URL: " + std::string(port_text));
    }
    result.port = static_cast<uint16_t>(value);
  }
  result.host = std::string(host);
  result.authority = result.host.find(':') != std::string::npos ? "[" + result.host + "]" : result.host;
  if (result.port != default_port) result.authority += ":" + std::to_string(result.port);
  *out = std::move(result);
  return Status::Ok();
}

Status ParseHttpResponseHead(std::string_view head, size_t max_headers, HttpClientResponse* response,
                             int* version_minor) {
  response->status = 0;
  response->headers.clear();
  // "HTTP/1.x SSS[ reason]"
  const size_t first_eol = head.find("\r\n");
  if (first_eol == std::string_view::npos) return Status::Unavailable("malformed response status line");
  const std::string_view status_line = head.substr(0, first_eol);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ') || status_line[7] < '0' || status_line[7] > '9') {
    return Status::Unavailable("malformed response status line");
  }
  int code = 0;
  const auto [ptr, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, code);
  if (ec != std::errc() || ptr != status_line.data() + 12 || code < 100 || code > 999) {
    return Status::Unavailable("malformed response status code");
  }
  size_t pos = first_eol + 2;
  while (pos < head.size()) {
    const size_t eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) return Status::Unavailable("response header line without CRLF");
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Status::Unavailable("malformed response header line");
    }
    if (response->headers.size() >= max_headers) {
      response->headers.clear();
      return Status::Unavailable("more than " + std::to_string(max_headers) + " response headers");
    }
    std::string name(line.substr(0, colon));
    for (char& c : name) c = ToLower(c);
    response->headers.emplace_back(std::move(name), std::string(Trim(line.substr(colon + 1))));
  }
  *version_minor = status_line[7] - '0';
  response->status = code;
  return Status::Ok();
}

bool ParseChunkSizeLine(std::string_view line, uint64_t* size) {
  const std::string_view text = Trim(line.substr(0, line.find(';')));
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *size, 16);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

std::string_view HttpClientResponse::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsNoCase(key, name)) return value;
  }
  return {};
}

// One TCP (optionally TLS) connection: non-blocking socket, every wait through WaitFor().
class HttpClient::Connection {
 public:
  Connection(int fd, int interrupt_fd) : fd_(fd), interrupt_fd_(interrupt_fd) {}
  ~Connection() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status Wait(short events, Clock::time_point deadline) const {
    return WaitFor(fd_, events, interrupt_fd_, deadline);
  }

  Status Handshake(SSL_CTX* ctx, const std::string& host, Clock::time_point deadline) {
    ssl_ = SSL_new(ctx);
    if (ssl_ == nullptr) return Status::Internal(OpenSslError("SSL_new"));
    SSL_set_fd(ssl_, fd_);
    if (IsIpLiteral(host)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl_, host.c_str());
      SSL_set1_host(ssl_, host.c_str());
    }
    while (true) {
      ERR_clear_error();
      const int rc = SSL_connect(ssl_);
      if (rc == 1) return Status::Ok();
      const int err = SSL_get_error(ssl_, rc);
      Status status;
      if (err == SSL_ERROR_WANT_READ) {
        status = Wait(POLLIN, deadline);
      } else if (err == SSL_ERROR_WANT_WRITE) {
        status = Wait(POLLOUT, deadline);
      } else {
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK) {
          ERR_clear_error();
          return Status::Unavailable(std::string("TLS certificate verification failed: ") +
                                     X509_verify_cert_error_string(verify));
        }
        return Status::Unavailable(OpenSslError("TLS handshake failed"));
      }
      if (!status.ok()) return status;
    }
  }

  Status WriteAll(std::string_view data, Clock::time_point deadline) {
    while (!data.empty()) {
      const size_t want = std::min<size_t>(data.size(), INT_MAX);
      Status status;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int n = SSL_write(ssl_, data.data(), static_cast<int>(want));
        if (n > 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        const int err = SSL_get_error(ssl_, n);
        if (err == SSL_ERROR_WANT_READ) {
          status = Wait(POLLIN, deadline);
        } else if (err == SSL_ERROR_WANT_WRITE) {
          status = Wait(POLLOUT, deadline);
        } else {
          return Status::Unavailable(OpenSslError("TLS write failed"));
        }
      } else {
        const ssize_t n = send(fd_, data.data(), want, MSG_NOSIGNAL);
        if (n > 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
          return Status::Unavailable(Errno("send", errno));
        status = Wait(POLLOUT, deadline);
      }
      if (!status.ok()) return status;
    }
    return Status::Ok();
  }

  // Appends at least one received byte to buffer(), or sets *eof when the peer closed the connection.
  Status ReadMore(Clock::time_point deadline, bool* eof) {
    *eof = false;
    char chunk[kReadChunkBytes];
    while (true) {
      Status status;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_read(ssl_, chunk, sizeof(chunk));
        if (n > 0) {
          buffer_.append(chunk, static_cast<size_t>(n));
          return Status::Ok();
        }
        const int err = SSL_get_error(ssl_, n);
        if (err == SSL_ERROR_WANT_READ) {
          status = Wait(POLLIN, deadline);
        } else if (err == SSL_ERROR_WANT_WRITE) {
          status = Wait(POLLOUT, deadline);
        } else if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 &&
                                                    (errno == 0 || errno == ECONNRESET))) {
          ERR_clear_error();
          *eof = true;
          return Status::Ok();
        } else {
          return Status::Unavailable(OpenSslError("TLS read failed"));
        }
      } else {
        const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
        if (n > 0) {
          buffer_.append(chunk, static_cast<size_t>(n));
          return Status::Ok();
        }
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
          *eof = true;
          return Status::Ok();
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::Unavailable(Errno("recv", errno));
        status = Wait(POLLIN, deadline);
      }
      if (!status.ok()) return status;
    }
  }

  // A kept-alive connection can be reused when nothing is pending on it: readable means the server
  // closed it (or sent bytes nobody asked for).
  bool Reusable() const {
    if (!buffer_.empty() || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return false;
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 0;
  }

  std::string& buffer() { return buffer_; }

 private:
  int fd_;
  int interrupt_fd_;
  SSL* ssl_ = nullptr;
  std::string buffer_;  // received, not yet consumed
};

HttpClient::HttpClient(HttpUrl url, HttpClientOptions options)
    : url_(std::move(url)), options_(std::move(options)) {}

HttpClient::~HttpClient() {
  connection_.reset();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  if (interrupt_fd_ >= 0) close(interrupt_fd_);
}

Status HttpClient::Create(std::string_view url, HttpClientOptions options,
                          std::unique_ptr<HttpClient>* client) {
  HttpUrl parsed;
  Status status = ParseHttpUrl(url, &parsed);
  if (!status.ok()) return status;
  std::unique_ptr<HttpClient> result(new HttpClient(std::move(parsed), std::move(options)));
  result->interrupt_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (result->interrupt_fd_ < 0) return Status::Internal(Errno("eventfd", errno));
  if (result->url_.tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) return Status::Internal(OpenSslError("SSL_CTX_new"));
    result->ssl_ctx_ = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // A server closing without close_notify ends a read-until-close body; treat it as end of stream.
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    const std::string& ca_file = result->options_.ca_file;
    if (ca_file.empty()) {
      if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return Status::Internal(OpenSslError("cannot load the system trust store"));
      }
    } else if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
      return Status::InvalidArgument(OpenSslError("cannot load ca_file " + ca_file));
    }
    // A peer closing mid-write must not kill the process. Plain sockets use MSG_NOSIGNAL; OpenSSL
    // writes with write(2), so SIGPIPE is ignored process-wide unless someone installed a handler
    // (as the metrics server does).
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  }
  *client = std::move(result);
  return Status::Ok();
}

void HttpClient::Interrupt() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(interrupt_fd_, &one, sizeof(one));
}

Status HttpClient::Connect(Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* results = nullptr;
  const std::string port = std::to_string(url_.port);
  const int rc = getaddrinfo(url_.host.c_str(), port.c_str(), &hints, &results);
  if (rc != 0) return Status::Unavailable("cannot resolve " + url_.host + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(results, freeaddrinfo);
  Status last = Status::Unavailable("no address for " + url_.host);
  for (addrinfo* ai = results; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Status::Unavailable(Errno("socket", errno));
      continue;
    }
    auto connection = std::make_unique<Connection>(fd, interrupt_fd_);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = Status::Unavailable(Errno("connect to " + url_.authority, errno));
        continue;
      }
      Status status = connection->Wait(POLLOUT, deadline);
      if (!status.ok()) return status;  // the deadline covers every address; an interrupt ends it all
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last = Status::Unavailable(Errno("connect to " + url_.authority, err));
        continue;
      }
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (ssl_ctx_ != nullptr) {
      Status status = connection->Handshake(ssl_ctx_, url_.host, deadline);
      if (!status.ok()) return status;
    }
    connection_ = std::move(connection);
    connections_opened_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }
  return last;
}

Status HttpClient::Exchange(std::string_view request_head, std::string_view body, Clock::time_point deadline,
                            HttpClientResponse* response, bool* nothing_received) {
  *nothing_received = true;
  Status status = connection_->WriteAll(request_head, deadline);
  if (status.ok()) status = connection_->WriteAll(body, deadline);
  if (status.ok()) return ReadResponse(deadline, response, nothing_received);
  if (status.code() != Status::Code::kUnavailable || Signalled(interrupt_fd_)) return status;
  // The server may have answered before reading the whole body (413 for a body over its limit) and
  // closed the connection, which broke the write: that answer, if it arrived, is the outcome.
  bool head_complete = false;
  const Status read = ReadResponse(deadline, response, nothing_received, &head_complete);
  if (!read.ok() && !head_complete) return status;
  connection_.reset();
  return Status::Ok();
}

Status HttpClient::ReadResponse(Clock::time_point deadline, HttpClientResponse* response,
                                bool* nothing_received, bool* head_complete) {
  Connection& conn = *connection_;
  std::string& buffer = conn.buffer();
  Status status;

  // Reads more bytes; a close here is an error (the framing said more was coming).
  auto read_more = [&](std::string_view where) -> Status {
    bool eof = false;
    Status s = conn.ReadMore(deadline, &eof);
    if (!s.ok()) return s;
    if (eof) return Status::Unavailable("connection closed by the server " + std::string(where));
    *nothing_received = false;
    return Status::Ok();
  };
  // Takes one CRLF-terminated line (without the CRLF) off the buffer.
  auto read_line = [&](size_t limit, std::string_view where, std::string* line) -> Status {
    size_t eol;
    while ((eol = buffer.find("\r\n")) == std::string::npos) {
      if (buffer.size() > limit) return Status::Unavailable("response line too long " + std::string(where));
      Status s = read_more(where);
      if (!s.ok()) return s;
    }
    if (eol > limit) return Status::Unavailable("response line too long " + std::string(where));
    line->assign(buffer, 0, eol);
    buffer.erase(0, eol + 2);
    return Status::Ok();
  };
  auto append_body = [&](size_t n) {
    const size_t room = options_.max_response_body_bytes - response->body.size();
    if (n > room) response->body_truncated = true;
    response->body.append(buffer, 0, std::min(n, room));
    buffer.erase(0, n);
  };
  // Reads exactly `length` body bytes (fewer when the body limit is reached).
  auto read_body = [&](uint64_t length) -> Status {
    while (length > 0 && !response->body_truncated) {
      if (buffer.empty()) {
        Status s = read_more("in the response body");
        if (!s.ok()) return s;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(length, buffer.size()));
      append_body(take);
      length -= take;
    }
    return Status::Ok();
  };

  // Status line and headers; interim 1xx responses are skipped.
  int version_minor = 1;
  while (true) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      const size_t n = std::min<size_t>(buffer.size(), 5);
      if (buffer.compare(0, n, "HTTP/", n) != 0) return Status::Unavailable("the response is not HTTP");
      if (buffer.size() > options_.max_response_head_bytes) {
        return Status::Unavailable("response head over " + std::to_string(options_.max_response_head_bytes) +
                                   " bytes");
      }
      Status s = read_more("before the end of the response head");
      if (!s.ok()) return s;
    }
    if (end + 4 > options_.max_response_head_bytes) {
      return Status::Unavailable("response head over " + std::to_string(options_.max_response_head_bytes) +
                                 " bytes");
    }
    const std::string head = buffer.substr(0, end + 2);
    buffer.erase(0, end + 4);
    status = ParseHttpResponseHead(head, options_.max_response_headers, response, &version_minor);
    if (!status.ok()) return status;
    const int code = response->status;
    if (code == 101) return Status::Unavailable("unexpected 101 Switching Protocols");
    if (code >= 200) break;
  }
  if (head_complete != nullptr) *head_complete = true;

  // Body framing (RFC 9112 section 6.3).
  const std::string_view connection_header = response->Header("connection");
  bool keep_alive =
      version_minor >= 1 ? !HasToken(connection_header, "close") : HasToken(connection_header, "keep-alive");
  const std::string transfer_encoding(response->Header("transfer-encoding"));
  const std::string content_length(response->Header("content-length"));
  if (response->status == 204 || response->status == 304) {
    // no body
  } else if (!transfer_encoding.empty() && EqualsNoCase(LastToken(transfer_encoding), "chunked")) {
    while (!response->body_truncated) {
      std::string line;
      status = read_line(kMaxChunkSizeLineBytes, "in a chunk size", &line);
      if (!status.ok()) return status;
      uint64_t size = 0;
      if (!ParseChunkSizeLine(line, &size)) return Status::Unavailable("malformed chunk size");
      if (size == 0) {  // last chunk: trailers up to an empty line
        size_t trailer_bytes = 0;
        do {
          status = read_line(options_.max_response_head_bytes, "in the trailers", &line);
          if (!status.ok()) return status;
          trailer_bytes += line.size() + 2;
          if (trailer_bytes > options_.max_response_head_bytes) {
            return Status::Unavailable("response trailers too long");
          }
        } while (!line.empty());
        break;
      }
      status = read_body(size);
      if (!status.ok()) return status;
      if (response->body_truncated) break;
      status = read_line(2, "after a chunk", &line);
      if (!status.ok()) return status;
      if (!line.empty()) return Status::Unavailable("malformed chunk end");
    }
  } else if (!transfer_encoding.empty() || content_length.empty()) {
    // No length given: the body ends when the server closes the connection.
    keep_alive = false;
    while (!response->body_truncated) {
      if (!buffer.empty()) append_body(buffer.size());
      if (response->body_truncated) break;
      bool eof = false;
      status = conn.ReadMore(deadline, &eof);
      if (!status.ok()) return status;
      if (eof) break;
    }
  } else {
    uint64_t length = 0;
    const auto [ptr, ec] =
        std::from_chars(content_length.data(), content_length.data() + content_length.size(), length);
    if (ec != std::errc() || ptr != content_length.data() + content_length.size()) {
      return Status::Unavailable("malformed Content-Length");
    }
    status = read_body(length);
    if (!status.ok()) return status;
  }
  // A cut-off body leaves unread bytes on the wire; stray bytes after the response are not ours either.
  if (!keep_alive || response->body_truncated || !buffer.empty()) connection_.reset();
  return Status::Ok();
}

Status HttpClient::Post(std::string_view body,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        HttpClientResponse* response) {
  *response = HttpClientResponse{};
  std::string head = "POST " + url_.target + " HTTP/1.1\r\nHost: " + url_.authority +
                     "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  bool has_user_agent = false;
  for (const auto& [name, value] : headers) {
    if (!IsToken(name) || value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Status::InvalidArgument("invalid HTTP header: " + name);
    }
    if (EqualsNoCase(name, "host") || EqualsNoCase(name, "content-length") ||
        EqualsNoCase(name, "transfer-encoding")) {
      return Status::InvalidArgument("header set by the client itself: " + name);
    }
    has_user_agent = has_user_agent || EqualsNoCase(name, "user-agent");
    head += name + ": " + value + "\r\n";
  }
  if (!has_user_agent) head += "User-Agent: gpuscope\r\n";
  head += "\r\n";

  const auto deadline = Clock::now() + options_.timeout;
  for (int attempt = 0;; ++attempt) {
    if (Signalled(interrupt_fd_)) {
      connection_.reset();
      return Status::Unavailable("request interrupted");
    }
    const bool reused = connection_ != nullptr && connection_->Reusable();
    if (!reused) {
      connection_.reset();
      Status status = Connect(deadline);
      if (!status.ok()) return status;
    }
    bool nothing_received = true;
    Status status = Exchange(head, body, deadline, response, &nothing_received);
    if (status.ok()) return status;
    connection_.reset();
    // A kept-alive connection the server closed just as we reused it: send once more on a fresh one.
    if (reused && nothing_received && attempt == 0 && status.code() == Status::Code::kUnavailable &&
        !Signalled(interrupt_fd_)) {
      *response = HttpClientResponse{};
      continue;
    }
    return status;
  }
}

}  // namespace gpuscope
