// The metrics server's listening side, set up once by HttpServer::Start before it serves: the listen
// address parsed, the listening socket bound, and the OpenSSL server context built from the web
// config's TLS settings.
//
// Thread-safety: stateless functions, callable from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/core/status.h"
#include "src/sinks/prometheus/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope {

// Splits a listen address into host ("" for all interfaces; brackets removed) and port. InvalidArgument
// when malformed.
Status ParseListenAddress(std::string_view address, std::string& host, uint16_t& port);

// Binds and listens on `host`:`port` (an empty host: all interfaces, IPv6 dual-stack when the host has
// IPv6, else IPv4), trying each address getaddrinfo gives until one works; `listen_address` names it in
// errors. InvalidArgument when the address does not resolve; Unavailable when no address can be bound
// (the last error is named). On success *listen_fd is the blocking, close-on-exec listening socket.
Status OpenListeningSocket(const std::string& listen_address, const std::string& host, uint16_t port,
                           int* listen_fd);

// The port a bound socket listens on (the one the kernel chose for port 0).
uint16_t BoundPort(int fd);

// Builds the server's TLS context from `tls`: certificate chain, key, protocol versions, client CA and
// client-certificate policy. InvalidArgument naming what OpenSSL could not load; on success the caller
// owns *out (SSL_CTX_free).
Status CreateSslContext(const TlsServerConfig& tls, SSL_CTX** out);

}  // namespace gpuscope
