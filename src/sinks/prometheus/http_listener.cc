// The metrics server's listening side; see http_listener.h.
#include "src/sinks/prometheus/http_listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace gpuscope {
namespace {

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

}  // namespace

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

Status OpenListeningSocket(const std::string& listen_address, const std::string& host, uint16_t port,
                           int* listen_fd) {
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
    return Status::InvalidArgument("listen address \"" + listen_address + "\": " + gai_strerror(rc));
  }
  std::string last_error = "no usable address";
  *listen_fd = -1;
  for (addrinfo* ai = results; ai != nullptr && *listen_fd < 0; ai = ai->ai_next) {
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
    *listen_fd = fd;
  }
  freeaddrinfo(results);
  if (*listen_fd < 0) return Status::Unavailable("cannot listen on " + listen_address + ": " + last_error);
  return Status::Ok();
}

uint16_t BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

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

}  // namespace gpuscope
