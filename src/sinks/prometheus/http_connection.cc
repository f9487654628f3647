#include "src/sinks/prometheus/http_connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include "src/sinks/prometheus/http_request.h"

namespace gpuscope {
namespace {

const RequestBodyLimit kNoBodies;  // no request takes a body

}  // namespace

HttpConnection::~HttpConnection() {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);  // best effort close_notify, never blocks
    SSL_free(ssl_);
    ERR_clear_error();
  }
  close(fd_);
}

void HttpConnection::Consume(size_t bytes) {
  buf_.erase(0, bytes);
  scan_from_ = 0;
  request_bytes_ = 0;
}

bool HttpConnection::PastHello() const {
  if (ssl_ == nullptr) return true;
  OSSL_HANDSHAKE_STATE state = SSL_get_state(ssl_);
  return state != TLS_ST_BEFORE && state != TLS_ST_SR_CLNT_HELLO;
}

bool HttpConnection::ReceivedAny() const {
  if (!buf_.empty()) return true;
  if (ssl_ == nullptr) return false;
  BIO* in = SSL_get_rbio(ssl_);  // the socket: counts the handshake's raw bytes too
  return in != nullptr && BIO_number_read(in) > 0;
}

HttpConnection::Progress HttpConnection::ReadHead() {
  if (ssl_ != nullptr && !SSL_is_init_finished(ssl_)) {
    ERR_clear_error();
    int rc = SSL_accept(ssl_);
    if (rc != 1) return SslProgress(rc);
  }
  if (HeadReady()) return Progress::kHeadReady;  // pipelined bytes left by the previous request
  char chunk[4096];
  while (true) {
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int rc = SSL_read(ssl_, chunk, sizeof(chunk));
      if (rc <= 0) return SslProgress(rc);
      n = rc;
    } else {
      n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n == 0) return Progress::kClosed;
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? Progress::kNeedRead : Progress::kClosed;
      }
    }
    buf_.append(chunk, static_cast<size_t>(n));
    if (HeadReady()) return Progress::kHeadReady;
  }
}

bool HttpConnection::Write(std::string_view a, std::string_view b, std::chrono::milliseconds timeout) {
  if (ssl_ != nullptr) {
    // One TLS record sequence for small responses; two writes otherwise (no copy of large bodies).
    if (b.size() <= 16384) {
      std::string joined;
      joined.reserve(a.size() + b.size());
      joined.append(a).append(b);
      return SslWrite(joined, timeout);
    }
    return SslWrite(a, timeout) && SslWrite(b, timeout);
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
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && WaitFor(POLLOUT, timeout)) continue;
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

bool HttpConnection::HeadReady() {
  if (request_bytes_ != 0) return buf_.size() >= request_bytes_;  // the head is parsed: waiting for the body
  bool may_be_complete = buf_.find("\n\n", scan_from_) != std::string::npos ||
                         buf_.find("\n\r\n", scan_from_) != std::string::npos ||
                         buf_.size() >= kMaxRequestHeadBytes;
  if (may_be_complete) {
    HttpRequestHead head;
    ParseResult result = ParseRequestHead(buf_, head, body_limit_ != nullptr ? *body_limit_ : kNoBodies);
    if (result.outcome == ParseOutcome::kError) return true;
    if (result.outcome == ParseOutcome::kComplete) {
      request_bytes_ = result.consumed + head.content_length;
      return buf_.size() >= request_bytes_;
    }
  }
  scan_from_ = buf_.size() >= 2 ? buf_.size() - 2 : 0;  // bytes before hold no end of head
  return false;
}

HttpConnection::Progress HttpConnection::SslProgress(int rc) {
  int error = SSL_get_error(ssl_, rc);
  ERR_clear_error();
  if (error == SSL_ERROR_WANT_READ) return Progress::kNeedRead;
  if (error == SSL_ERROR_WANT_WRITE) return Progress::kNeedWrite;
  return Progress::kClosed;
}

bool HttpConnection::SslWrite(std::string_view data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    ERR_clear_error();
    int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    int error = SSL_get_error(ssl_, n);
    ERR_clear_error();
    if (error == SSL_ERROR_WANT_WRITE && WaitFor(POLLOUT, timeout)) continue;
    if (error == SSL_ERROR_WANT_READ && WaitFor(POLLIN, timeout)) continue;
    return false;
  }
  return true;
}

bool HttpConnection::WaitFor(short events, std::chrono::milliseconds timeout) {
  pollfd pfd{fd_, events, 0};
  while (true) {
    int rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

}  // namespace gpuscope
