#include "src/cli/prometheus_flags.h"

#include <chrono>
#include <cstdlib>
#include <optional>

#include "src/platform/file.h"

namespace gpuscope {
namespace {

const std::vector<FlagSpec>& PrometheusFlags() {
  static const std::vector<FlagSpec> flags = {
      {"prometheus.url", "Prometheus server to query", "http://localhost:9090"},
      {"prometheus.username", "basic auth user name", ""},
      {"prometheus.password-file", "file holding the basic auth password", ""},
      {"prometheus.bearer-token-file", "file holding a bearer token sent as Authorization: Bearer", ""},
      {"prometheus.ca-file", "PEM CA bundle to verify an https:// server with", ""},
      {"prometheus.timeout", "seconds one query may take", "30"},
  };
  return flags;
}

}  // namespace

Status ReadSecretFile(const std::string& flag, const std::string& path, std::string* secret) {
  std::optional<std::string> text = ReadWholeFile(path, 64 << 10);
  if (!text) return Status::InvalidArgument("--" + flag + ": cannot read " + path);
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
  *secret = *text;
  return Status::Ok();
}

std::vector<FlagSpec> WithPrometheusFlags(std::vector<FlagSpec> own) {
  own.insert(own.end(), PrometheusFlags().begin(), PrometheusFlags().end());
  return own;
}

bool ParsePositiveSeconds(const std::string& text, double* seconds) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0)) return false;
  *seconds = value;
  return true;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Status MakePrometheusClient(const CommandLine& line, std::unique_ptr<PrometheusClient>* client) {
  PrometheusClientOptions options;
  options.url = line.flags.at("prometheus.url");
  options.username = line.flags.at("prometheus.username");
  options.ca_file = line.flags.at("prometheus.ca-file");
  double timeout = 0;
  if (!ParsePositiveSeconds(line.flags.at("prometheus.timeout"), &timeout)) {
    return Status::InvalidArgument("--prometheus.timeout must be a positive number of seconds");
  }
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeout * 1000));
  if (!line.flags.at("prometheus.password-file").empty()) {
    if (options.username.empty()) {
      return Status::InvalidArgument("--prometheus.password-file needs --prometheus.username");
    }
    Status s = ReadSecretFile("prometheus.password-file", line.flags.at("prometheus.password-file"),
                              &options.password);
    if (!s.ok()) return s;
  }
  if (!line.flags.at("prometheus.bearer-token-file").empty()) {
    if (!options.username.empty()) {
      return Status::InvalidArgument(
          "--prometheus.username and --prometheus.bearer-token-file exclude each other");
    }
    Status s = ReadSecretFile("prometheus.bearer-token-file", line.flags.at("prometheus.bearer-token-file"),
                              &options.bearer_token);
    if (!s.ok()) return s;
  }
  return PrometheusClient::Create(options, client);
}

}  // namespace gpuscope
