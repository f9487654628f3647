// Test helpers for the Prometheus endpoint tests: a blocking plain-socket HTTP client, a TLS client,
// a self-signed certificate generator (OpenSSL API) and a temporary directory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace gpuscope::testing {

// A web config's basic_auth_users entry produced by `htpasswd -nbBC 10 prometheus s3cr3t-pass`, and the
// request header line that passes it (prometheus:s3cr3t-pass).
inline constexpr char kHtpasswdLine[] =
    "prometheus: $2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy\n";
inline constexpr char kBasicAuthorization[] = "Authorization: Basic cHJvbWV0aGV1czpzM2NyM3QtcGFzcw==\r\n";

struct ParsedResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

// A connected TCP socket to 127.0.0.1:port, optionally wrapped in TLS.
class TestClient {
 public:
  // Connects (and handshakes when `tls_ctx` is set); ok() tells whether that worked.
  explicit TestClient(uint16_t port, SSL_CTX* tls_ctx = nullptr);
  ~TestClient();
  bool ok() const { return fd_ >= 0 && (!tls_ || ssl_ != nullptr); }

  bool SendRaw(std::string_view data);
  // Reads one response (Content-Length framed; `head_only` for HEAD). False on EOF/timeout/garbage.
  bool ReadResponse(ParsedResponse& out, bool head_only = false);
  // Sends a GET with the given extra header lines ("Name: value\r\n...") and reads the response.
  ParsedResponse Get(std::string_view path, std::string_view extra_headers = "");
  // Reads until the peer closes; returns everything read (true) or false on timeout.
  bool ReadUntilClosed(std::string& out);

 private:
  bool ReadMore();
  int fd_ = -1;
  bool tls_ = false;
  SSL* ssl_ = nullptr;
  std::string buffer_;
};

// A fresh directory under $TMPDIR, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, std::string_view content) const;

 private:
  std::string path_;
};

// Writes a self-signed P-256 certificate for CN=localhost / IP 127.0.0.1 and its key as PEM files.
bool WriteSelfSignedCertificate(const std::string& cert_path, const std::string& key_path);

// Client context that trusts `ca_file`; with `cert_file`/`key_file` also presents a certificate.
SSL_CTX* NewClientContext(const std::string& ca_file, const std::string& cert_file = "",
                          const std::string& key_file = "");

// Inflates a gzip body; empty string on error.
std::string Gunzip(std::string_view gz);

}  // namespace gpuscope::testing
