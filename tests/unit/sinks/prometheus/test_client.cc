#include "tests/unit/sinks/prometheus/test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpuscope::testing {

TestClient::TestClient(uint16_t port, SSL_CTX* tls_ctx) : tls_(tls_ctx != nullptr) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  timeval tv{10, 0};  // generous: a broken server fails the test instead of hanging it
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  if (tls_) {
    ssl_ = SSL_new(tls_ctx);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    if (SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      SSL_free(ssl_);
      ssl_ = nullptr;
    }
  }
}

TestClient::~TestClient() {
  if (ssl_ != nullptr) {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  if (fd_ >= 0) close(fd_);
}

bool TestClient::SendRaw(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = tls_ ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                     : send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool TestClient::ReadMore() {
  char chunk[16384];
  ssize_t n = tls_ ? SSL_read(ssl_, chunk, sizeof(chunk)) : recv(fd_, chunk, sizeof(chunk), 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool TestClient::ReadResponse(ParsedResponse& out, bool head_only) {
  out = ParsedResponse{};
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!ReadMore()) return false;
  }
  std::string head = buffer_.substr(0, end + 2);
  buffer_.erase(0, end + 4);
  if (head.size() < 12 || !head.starts_with("HTTP/1.")) return false;
  out.status = std::atoi(head.c_str() + 9);
  size_t pos = head.find("\r\n") + 2;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    std::string line = head.substr(pos, eol - pos);
    pos = eol + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) return false;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t start = line.find_first_not_of(' ', colon + 1);
    out.headers[name] = start == std::string::npos ? "" : line.substr(start);
  }
  size_t length = out.headers.count("content-length") ? std::stoul(out.headers["content-length"]) : 0;
  if (head_only) return true;
  while (buffer_.size() < length) {
    if (!ReadMore()) return false;
  }
  out.body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  return true;
}

ParsedResponse TestClient::Get(std::string_view path, std::string_view extra_headers) {
  std::string request =
      "GET " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\n" + std::string(extra_headers) + "\r\n";
  ParsedResponse response;
  if (!SendRaw(request) || !ReadResponse(response)) response.status = -1;
  return response;
}

bool TestClient::ReadUntilClosed(std::string& out) {
  while (true) {
    char chunk[4096];
    ssize_t n = tls_ ? SSL_read(ssl_, chunk, sizeof(chunk)) : recv(fd_, chunk, sizeof(chunk), 0);
    if (n == 0 || (n < 0 && !tls_ && errno == ECONNRESET)) break;
    if (n < 0 && tls_) break;
    if (n < 0) return false;  // timeout
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  out = buffer_;
  buffer_.clear();
  return true;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpuscope_prom_XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  path_ = made ? made : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, std::string_view content) const {
  std::string file = path_ + "/" + name;
  std::ofstream(file, std::ios::binary) << content;
  return file;
}

bool WriteSelfSignedCertificate(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  bool ok = key != nullptr && cert != nullptr;
  if (ok) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"),
                               -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                              std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      ok = ok && ext != nullptr && X509_add_ext(cert, ext, -1) == 1;
      X509_EXTENSION_free(ext);
    }
    ok = ok && X509_sign(cert, key, EVP_sha256()) > 0;
  }
  if (ok) {
    FILE* f = std::fopen(cert_path.c_str(), "w");
    ok = f != nullptr && PEM_write_X509(f, cert) == 1;
    if (f) std::fclose(f);
    f = std::fopen(key_path.c_str(), "w");
    ok = ok && f != nullptr && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (f) std::fclose(f);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok;
}

SSL_CTX* NewClientContext(const std::string& ca_file, const std::string& cert_file,
                          const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!cert_file.empty()) {
    SSL_CTX_use_certificate_file(ctx, cert_file.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM);
  }
  return ctx;
}

std::string Gunzip(std::string_view gz) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return "";
  std::string out;
  char chunk[65536];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  stream.avail_in = static_cast<uInt>(gz.size());
  int rc;
  do {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    rc = inflate(&stream, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&stream);
      return "";
    }
    out.append(chunk, sizeof(chunk) - stream.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&stream);
  return out;
}

}  // namespace gpuscope::testing
