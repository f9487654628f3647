// Real servers from Debian for tests of the push client, run on loopback: tinyproxy (an HTTP proxy:
// absolute-form requests and CONNECT tunnels) and nghttpd (an HTTP/2 server over TLS), plus a CA and a
// server certificate signed by it, made with the openssl command. The programs are found at configure
// time (scripts/install-deps.sh installs them); when one is missing, starting it fails with a message
// that says so: the tests fail rather than skip.
//
// Thread-safety: each object from one thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope::testing {

// A private CA and a server certificate it signed (PEM files).
struct TestCertificates {
  std::string ca_file;    // the CA's certificate: what a client trusts
  std::string cert_file;  // the server's certificate
  std::string key_file;   // the server's key
};

// Makes the CA and the server certificate for `subject_alt_names` in `dir` with openssl (P-256, valid
// one day).
Status MakeTestCertificates(const std::string& dir, TestCertificates* out,
                            const std::string& subject_alt_names = "DNS:localhost,IP:127.0.0.1");

// A program listening on a free 127.0.0.1 port that the caller puts on its command line. A port is
// chosen by binding port 0; when the program cannot take it (another process was quicker), or exits,
// another port is tried. Killed (SIGTERM, then reaped) by Stop() and the destructor.
class LocalDaemon {
 public:
  LocalDaemon() = default;
  ~LocalDaemon();  // Stop()
  LocalDaemon(const LocalDaemon&) = delete;
  LocalDaemon& operator=(const LocalDaemon&) = delete;

  // Runs argv_for(port) (argv[0] a path) with stdout and stderr appended to `output_file`, and waits
  // until the port accepts connections. Unavailable with the program's output when it does not come up.
  Status Start(const std::function<std::vector<std::string>(uint16_t port)>& argv_for,
               const std::string& output_file);
  void Stop();
  uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// tinyproxy on 127.0.0.1, allowing every client on loopback and CONNECT to any port, logging each
// request it serves.
class TinyProxy {
 public:
  explicit TinyProxy(std::string dir) : dir_(std::move(dir)) {}
  Status Start();
  void Stop() { daemon_.Stop(); }
  uint16_t port() const { return daemon_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  // The request lines it served so far ("CONNECT localhost:443 HTTP/1.1", "POST http://... HTTP/1.1").
  std::vector<std::string> Requests() const;

 private:
  std::string dir_;
  LocalDaemon daemon_;
};

// nghttpd (HTTP/2 only, TLS with ALPN h2) on 127.0.0.1 with the given certificate; answers a POST
// with 200 and the request body (--echo-upload).
class Nghttpd {
 public:
  explicit Nghttpd(std::string dir) : dir_(std::move(dir)) {}
  Status Start(const TestCertificates& certificates);
  void Stop() { daemon_.Stop(); }
  uint16_t port() const { return daemon_.port(); }

 private:
  std::string dir_;
  LocalDaemon daemon_;
};

// The proxy variables libcurl reads, cleared while the object lives (a machine's own proxy settings
// must not send a test's loopback requests elsewhere) and restored afterwards. Set() before starting
// the threads that read them.
class ProxyEnvironment {
 public:
  ProxyEnvironment();
  ~ProxyEnvironment();
  ProxyEnvironment(const ProxyEnvironment&) = delete;
  ProxyEnvironment& operator=(const ProxyEnvironment&) = delete;
  void Set(const std::string& name, const std::string& value);

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace gpuscope::testing
