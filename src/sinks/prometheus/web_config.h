// WebConfig: the Prometheus exporter-toolkit web configuration file (--web.config.file), the same YAML
// that node_exporter and dcgm-exporter accept: TLS server settings, extra response headers and basic
// auth users with bcrypt hashes. Parsing is a pure function; unknown keys are errors, as in the toolkit.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

enum class ClientAuthType {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

enum class TlsVersion { kTls12, kTls13 };

struct TlsServerConfig {
  std::string cert_file;
  std::string key_file;
  ClientAuthType client_auth_type = ClientAuthType::kNoClientCert;
  std::string client_ca_file;
  TlsVersion min_version = TlsVersion::kTls12;
  std::optional<TlsVersion> max_version;  // unset: the library's newest
};

struct WebConfig {
  std::optional<TlsServerConfig> tls;                   // set when tls_server_config is present
  std::map<std::string, std::string> headers;           // http_server_config.headers
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::vector<std::string> warnings;                    // accepted but ignored settings, for the log
};

// Parses the YAML text. On success fills `out` and returns Ok; relative file paths are left as
// written. On failure returns InvalidArgument with a message naming the offending key; `out` is then
// unspecified. An empty document is a valid, empty configuration.
Status ParseWebConfig(std::string_view yaml, WebConfig& out);

// Reads and parses `path`; relative cert/key/CA paths are resolved against the file's directory, as
// the exporter toolkit does. NotFound when the file cannot be read, otherwise as ParseWebConfig.
Status LoadWebConfigFile(const std::string& path, WebConfig& out);

}  // namespace gpuscope
