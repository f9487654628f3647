// HttpConnection: one accepted socket of the metrics server (non-blocking), plain or TLS, with the bytes
// read and not answered yet. The server's event loop advances the TLS handshake and reads request heads
// through it without blocking; a worker thread writes the responses, waiting for the socket with poll().
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

typedef struct ssl_st SSL;

namespace gpuscope {

class HttpConnection {
 public:
  enum class Progress { kNeedRead, kNeedWrite, kHeadReady, kClosed };

  // Takes ownership of `fd` (non-blocking) and `ssl` (null for plain HTTP; set up on `fd`).
  HttpConnection(uint64_t id, int fd, SSL* ssl) : id_(id), fd_(fd), ssl_(ssl) {}
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  uint64_t id() const { return id_; }
  int fd() const { return fd_; }
  // The bytes received and not consumed: a request head (and maybe pipelined ones) once kHeadReady.
  const std::string& buffer() const { return buf_; }
  // Drops the first `bytes` of the buffer (an answered request head).
  void Consume(size_t bytes);

  uint32_t watched = 0;         // the epoll events registered for it (0: not registered); loop thread only
  bool awaiting_hello = false;  // TLS hello not received in full yet; loop thread only

  // With TLS, whether the client's hello has been received in full (the server has answered it); always
  // true for plain HTTP.
  bool PastHello() const;
  // Whether the client has sent anything yet (a byte of its TLS hello or of its request).
  bool ReceivedAny() const;

  // Advances the TLS handshake and reads what the socket has, without blocking, until the buffer holds a
  // complete (or an unacceptable) request head: kHeadReady. kNeedRead/kNeedWrite: wait for the socket.
  // kClosed: the peer closed or an error occurred.
  Progress ReadHead();

  // Writes both parts fully, waiting at most `timeout` each time the socket cannot take more; false on
  // error, timeout or shutdown.
  bool Write(std::string_view a, std::string_view b, std::chrono::milliseconds timeout);

 private:
  // Whether the buffer holds something for a worker: a complete request head or one to reject.
  bool HeadReady();
  Progress SslProgress(int rc);
  bool SslWrite(std::string_view data, std::chrono::milliseconds timeout);
  // Waits until the socket is ready for `events` (or hung up: the next call reports the error).
  bool WaitFor(short events, std::chrono::milliseconds timeout);

  uint64_t id_;
  int fd_;
  SSL* ssl_;
  std::string buf_;
  size_t scan_from_ = 0;  // bytes before this hold no end of head: avoids re-scanning on every small read
};

}  // namespace gpuscope
