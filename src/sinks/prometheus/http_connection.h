// HttpConnection: one accepted socket of the metrics server (non-blocking), plain or TLS, with the bytes
// read and not answered yet. The server's event loop advances the TLS handshake and reads requests (the
// head, and the body where its route takes one) through it without blocking, so a client that trickles
// its body holds no thread; a worker thread writes the responses, waiting for the socket with poll().
// Destroying it sends a TLS close_notify when the handshake had completed (never blocks) and closes the
// socket.
//
// Thread-safety: none; owned by one thread at a time (the event loop, or the worker answering it).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/sinks/prometheus/http_request.h"

typedef struct ssl_st SSL;

namespace gpuscope {

class HttpConnection {
 public:
  enum class Progress { kNeedRead, kNeedWrite, kHeadReady, kClosed };

  // Takes ownership of `fd` (non-blocking) and `ssl` (null for plain HTTP; set up on `fd`). `body_limit`
  // (null: no request takes a body) says which requests carry a body to read; it outlives the connection.
  HttpConnection(uint64_t id, int fd, SSL* ssl, const RequestBodyLimit* body_limit = nullptr)
      : id_(id), fd_(fd), ssl_(ssl), body_limit_(body_limit) {}
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  uint64_t id() const { return id_; }
  int fd() const { return fd_; }
  // The bytes received and not consumed: a request head and its body (and maybe pipelined ones) once
  // kHeadReady.
  const std::string& buffer() const { return buf_; }
  // Drops the first `bytes` of the buffer (an answered request: its head and body).
  void Consume(size_t bytes);

  uint32_t watched = 0;         // the epoll events registered for it (0: not registered); loop thread only
  bool awaiting_hello = false;  // TLS hello not received in full yet; loop thread only

  // With TLS, whether the client's hello has been received in full (the server has answered it); always
  // true for plain HTTP.
  bool PastHello() const;
  // Whether the client has sent anything yet (a byte of its TLS hello or of its request).
  bool ReceivedAny() const;

  // Advances the TLS handshake and reads what the socket has, without blocking, until the buffer holds a
  // complete request (its head and whole body) or an unacceptable head: kHeadReady. kNeedRead/kNeedWrite:
  // wait for the socket.
  // kClosed: the peer closed or an error occurred.
  Progress ReadHead();

  // Writes both parts fully, waiting at most `timeout` each time the socket cannot take more; false on
  // error, timeout or shutdown.
  bool Write(std::string_view a, std::string_view b, std::chrono::milliseconds timeout);

 private:
  // Whether the buffer holds something for a worker: a complete request (head and body) or a head to
  // reject.
  bool HeadReady();
  Progress SslProgress(int rc);
  bool SslWrite(std::string_view data, std::chrono::milliseconds timeout);
  // Waits until the socket is ready for `events` (or hung up: the next call reports the error).
  bool WaitFor(short events, std::chrono::milliseconds timeout);

  uint64_t id_;
  int fd_;
  SSL* ssl_;
  std::string buf_;
  const RequestBodyLimit* body_limit_;
  size_t scan_from_ = 0;      // bytes before this hold no end of head: avoids re-scanning on every small read
  size_t request_bytes_ = 0;  // head and body of the first request once its head parsed, else 0
};

}  // namespace gpuscope
