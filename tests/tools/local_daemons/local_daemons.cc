#include "tests/tools/local_daemons/local_daemons.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "src/platform/command.h"
#include "src/platform/file.h"

extern char** environ;

namespace gpuscope::testing {
namespace {

constexpr std::chrono::seconds kStartBound(30);  // only keeps a broken machine from hanging the test
constexpr int kPortAttempts = 10;

// A port nobody listens on right now (bound to port 0 and released).
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool Accepts(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return connected;
}

Status Missing(const char* program) {
  return Status::Unavailable(std::string(program) +
                             " was not found at configure time: run scripts/install-deps.sh");
}

Status RunOpenssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {GPUSCOPE_OPENSSL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult result = RunCommandWithTimeout(argv, std::chrono::seconds(30), 1 << 20);
  if (!result.status.ok()) return Status::Unavailable("openssl " + args[0] + ": " + result.status.message());
  return Status::Ok();
}

constexpr const char* kProxyVariables[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                           "all_proxy",  "ALL_PROXY",  "no_proxy",    "NO_PROXY"};

}  // namespace

ProxyEnvironment::ProxyEnvironment() {
  for (const char* name : kProxyVariables) {
    if (const char* value = getenv(name); value != nullptr) saved_.emplace_back(name, value);
    unsetenv(name);
  }
}

ProxyEnvironment::~ProxyEnvironment() {
  for (const char* name : kProxyVariables) unsetenv(name);
  for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
}

void ProxyEnvironment::Set(const std::string& name, const std::string& value) {
  setenv(name.c_str(), value.c_str(), 1);
}

Status MakeTestCertificates(const std::string& dir, TestCertificates* out,
                            const std::string& subject_alt_names) {
  if (std::string(GPUSCOPE_OPENSSL_BIN).empty()) return Missing("openssl");
  const std::string ca_key = dir + "/ca.key";
  out->ca_file = dir + "/ca.pem";
  out->key_file = dir + "/server.key";
  out->cert_file = dir + "/server.pem";
  const std::string csr = dir + "/server.csr";
  const std::string extensions = dir + "/server.ext";
  Status status = WriteFileAtomically(
      extensions,
      "subjectAltName=" + subject_alt_names + "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
      {.sync = false});
  if (!status.ok()) return status;
  const std::vector<std::string> p256 = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"};
  std::vector<std::string> ca = {"req", "-x509"};
  ca.insert(ca.end(), p256.begin(), p256.end());
  ca.insert(ca.end(), {"-keyout", ca_key, "-out", out->ca_file, "-days", "1", "-subj", "/CN=gpuscope test CA",
                       "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                       "keyUsage=critical,keyCertSign,cRLSign"});
  status = RunOpenssl(ca);
  if (!status.ok()) return status;
  std::vector<std::string> request = {"req", "-new"};
  request.insert(request.end(), p256.begin(), p256.end());
  request.insert(request.end(), {"-keyout", out->key_file, "-out", csr, "-subj", "/CN=localhost"});
  status = RunOpenssl(request);
  if (!status.ok()) return status;
  return RunOpenssl({"x509", "-req", "-in", csr, "-CA", out->ca_file, "-CAkey", ca_key, "-set_serial", "2",
                     "-days", "1", "-extfile", extensions, "-out", out->cert_file});
}

LocalDaemon::~LocalDaemon() { Stop(); }

Status LocalDaemon::Start(const std::function<std::vector<std::string>(uint16_t port)>& argv_for,
                          const std::string& output_file) {
  Stop();
  const auto give_up = std::chrono::steady_clock::now() + kStartBound;
  std::string program;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    const uint16_t port = FreePort();
    if (port == 0) return Status::Unavailable("no free port");
    std::vector<std::string> args = argv_for(port);
    program = args[0];
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_file.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return Status::Unavailable("cannot run " + program + ": " + std::strerror(rc));
    while (true) {
      int wait_status = 0;
      if (waitpid(pid, &wait_status, WNOHANG) == pid) break;  // exited: the port was taken, or worse
      if (Accepts(port)) {
        pid_ = pid;
        port_ = port;
        return Status::Ok();
      }
      if (std::chrono::steady_clock::now() > give_up) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        return Status::Unavailable(program + " did not listen on port " + std::to_string(port));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const std::string output = ReadWholeFile(output_file).value_or("");
  return Status::Unavailable(program + " did not come up; its output:\n" + output);
}

void LocalDaemon::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  port_ = 0;
}

Status TinyProxy::Start() {
  if (std::string(GPUSCOPE_TINYPROXY_BIN).empty()) return Missing("tinyproxy");
  const std::string config = dir_ + "/tinyproxy.conf";
  const std::string log = dir_ + "/tinyproxy.log";
  return daemon_.Start(
      [&](uint16_t port) {
        // No Allow lines: every client may connect; no ConnectPort lines: CONNECT to any port.
        std::ostringstream text;
        text << "Port " << port << "\nListen 127.0.0.1\nTimeout 600\nLogLevel Connect\nLogFile \"" << log
             << "\"\nMaxClients 100\n";
        (void)WriteFileAtomically(config, text.str(), {.sync = false});
        return std::vector<std::string>{GPUSCOPE_TINYPROXY_BIN, "-d", "-c", config};
      },
      dir_ + "/tinyproxy.out");
}

std::vector<std::string> TinyProxy::Requests() const {
  // Log lines look like: CONNECT   Dec 01 15:20:12.383 [26145]: Request (file descriptor 4): CONNECT h:p
  // HTTP/1.1
  std::vector<std::string> out;
  std::istringstream log(ReadWholeFile(dir_ + "/tinyproxy.log").value_or(""));
  const std::string marker = "): ";
  for (std::string line; std::getline(log, line);) {
    const size_t request = line.find("Request (file descriptor ");
    if (request == std::string::npos) continue;
    const size_t start = line.find(marker, request);
    if (start != std::string::npos) out.push_back(line.substr(start + marker.size()));
  }
  return out;
}

Status Nghttpd::Start(const TestCertificates& certificates) {
  if (std::string(GPUSCOPE_NGHTTPD_BIN).empty()) return Missing("nghttpd");
  return daemon_.Start(
      [&](uint16_t port) {
        return std::vector<std::string>{GPUSCOPE_NGHTTPD_BIN, "--address=127.0.0.1", "--echo-upload",
                                        std::to_string(port), certificates.key_file, certificates.cert_file};
      },
      dir_ + "/nghttpd.out");
}

}  // namespace gpuscope::testing
