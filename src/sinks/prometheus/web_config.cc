#include "src/sinks/prometheus/web_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gpuscope {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

// Thrown inside the parser only; turned into a Status at the boundary.
struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw ConfigError{std::move(message)}; }

std::string Where(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

std::string Scalar(const YAML::Node& node, const std::string& key) {
  if (node.IsNull()) return "";
  if (!node.IsScalar()) Fail(key + ": expected a string" + Where(node));
  return node.Scalar();
}

bool Bool(const YAML::Node& node, const std::string& key) {
  std::string s = Scalar(node, key);
  if (s == "true") return true;
  if (s == "false" || s.empty()) return false;
  Fail(key + ": expected true or false, got \"" + s + "\"" + Where(node));
}

// Calls `fn(key, value)` for each entry of a mapping; rejects non-mappings and duplicate keys.
template <typename Fn>
void ForEachEntry(const YAML::Node& node, const std::string& context, Fn fn) {
  if (node.IsNull()) return;
  if (!node.IsMap()) Fail(context + ": expected a mapping" + Where(node));
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) Fail(context + ": keys must be strings" + Where(entry.first));
    std::string key = entry.first.Scalar();
    if (!seen.insert(key).second) Fail(context + ": duplicate key \"" + key + "\"" + Where(entry.first));
    fn(key, entry.second);
  }
}

TlsVersion ParseTlsVersion(const YAML::Node& node, const std::string& key) {
  std::string s = Scalar(node, key);
  if (s == "TLS12") return TlsVersion::kTls12;
  if (s == "TLS13") return TlsVersion::kTls13;
  if (s == "TLS10" || s == "TLS11") Fail(key + ": " + s + " is not supported; use TLS12 or TLS13");
  Fail(key + ": unknown TLS version \"" + s + "\"" + Where(node));
}

ClientAuthType ParseClientAuth(const std::string& s, const YAML::Node& node) {
  if (s.empty() || s == "NoClientCert") return ClientAuthType::kNoClientCert;
  if (s == "RequestClientCert") return ClientAuthType::kRequestClientCert;
  if (s == "RequireAnyClientCert") return ClientAuthType::kRequireAnyClientCert;
  if (s == "VerifyClientCertIfGiven") return ClientAuthType::kVerifyClientCertIfGiven;
  if (s == "RequireAndVerifyClientCert") return ClientAuthType::kRequireAndVerifyClientCert;
  Fail("tls_server_config.client_auth_type: invalid value \"" + s + "\"" + Where(node));
}

std::optional<TlsServerConfig> ParseTls(const YAML::Node& node, std::vector<std::string>& warnings) {
  TlsServerConfig tls;
  std::string client_auth;
  bool any_set = false;
  const std::string ctx = "tls_server_config";
  ForEachEntry(node, ctx, [&](const std::string& key, const YAML::Node& value) {
    std::string path = ctx + "." + key;
    if (key == "cert_file") {
      tls.cert_file = Scalar(value, path);
    } else if (key == "key_file") {
      tls.key_file = Scalar(value, path);
    } else if (key == "client_ca_file") {
      tls.client_ca_file = Scalar(value, path);
    } else if (key == "client_auth_type") {
      client_auth = Scalar(value, path);
      tls.client_auth_type = ParseClientAuth(client_auth, value);
    } else if (key == "min_version") {
      tls.min_version = ParseTlsVersion(value, path);
    } else if (key == "max_version") {
      tls.max_version = ParseTlsVersion(value, path);
    } else if (key == "cipher_suites" || key == "curve_preferences" || key == "prefer_server_cipher_suites") {
      if (!value.IsNull() && !value.IsSequence() && !value.IsScalar())
        Fail(path + ": malformed" + Where(value));
      warnings.push_back(path + " is accepted but ignored: OpenSSL's defaults apply");
      return;
    } else if (key == "cert" || key == "key" || key == "client_ca" || key == "client_allowed_sans") {
      Fail(path + ": not supported by gpuscope; use cert_file, key_file and client_ca_file");
    } else {
      Fail(ctx + ": unknown key \"" + key + "\"" + Where(value));
    }
    any_set = true;
  });
  // As in the exporter toolkit: a section with nothing set means "no TLS".
  if (!any_set ||
      (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty() && client_auth.empty())) {
    return std::nullopt;
  }
  if (tls.cert_file.empty()) Fail(ctx + ": missing cert_file");
  if (tls.key_file.empty()) Fail(ctx + ": missing key_file");
  bool verifies = tls.client_auth_type == ClientAuthType::kVerifyClientCertIfGiven ||
                  tls.client_auth_type == ClientAuthType::kRequireAndVerifyClientCert;
  if (verifies && tls.client_ca_file.empty()) {
    Fail(ctx + ": client_auth_type " + client_auth + " requires client_ca_file");
  }
  if (!tls.client_ca_file.empty() && tls.client_auth_type == ClientAuthType::kNoClientCert) {
    Fail(ctx + ": client_ca_file is set but client_auth_type is NoClientCert");
  }
  if (tls.max_version && *tls.max_version < tls.min_version) Fail(ctx + ": max_version is below min_version");
  return tls;
}

// The exporter toolkit allows only these security headers, with the same value checks.
void ValidateHeader(const std::string& name, const std::string& value) {
  static const std::set<std::string> kAllowed = {"Strict-Transport-Security", "X-Content-Type-Options",
                                                 "X-Frame-Options", "X-XSS-Protection",
                                                 "Content-Security-Policy"};
  if (!kAllowed.contains(name))
    Fail("http_server_config.headers: HTTP header \"" + name + "\" can not be configured");
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0')
      Fail("http_server_config.headers." + name + ": invalid characters");
  }
  if (name == "X-Content-Type-Options" && value != "nosniff") {
    Fail("http_server_config.headers.X-Content-Type-Options: only \"nosniff\" is allowed");
  }
  if (name == "X-Frame-Options" && value != "deny" && value != "sameorigin") {
    Fail("http_server_config.headers.X-Frame-Options: only \"deny\" or \"sameorigin\" are allowed");
  }
}

bool LooksLikeBcrypt(const std::string& hash) {
  return hash.size() == 60 &&
         (hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$"));
}

void ParseRoot(const YAML::Node& root, WebConfig& out) {
  ForEachEntry(root, "web config", [&](const std::string& key, const YAML::Node& value) {
    if (key == "tls_server_config") {
      out.tls = ParseTls(value, out.warnings);
    } else if (key == "http_server_config") {
      ForEachEntry(value, key, [&](const std::string& sub, const YAML::Node& v) {
        if (sub == "headers") {
          ForEachEntry(v, key + ".headers", [&](const std::string& name, const YAML::Node& hv) {
            std::string header_value = Scalar(hv, key + ".headers." + name);
            ValidateHeader(name, header_value);
            out.headers[name] = header_value;
          });
        } else if (sub == "http2") {
          if (Bool(v, key + ".http2"))
            out.warnings.push_back("http_server_config.http2 is ignored: HTTP/1.1 only");
        } else {
          Fail(key + ": unknown key \"" + sub + "\"" + Where(v));
        }
      });
    } else if (key == "basic_auth_users") {
      ForEachEntry(value, key, [&](const std::string& user, const YAML::Node& v) {
        std::string hash = Scalar(v, key + "." + user);
        if (user.empty()) Fail(key + ": empty user name");
        if (user.find(':') != std::string::npos) Fail(key + ": user name \"" + user + "\" contains ':'");
        if (!LooksLikeBcrypt(hash))
          Fail(key + "." + user + ": not a bcrypt hash ($2y$, $2b$ or $2a$, 60 chars)");
        out.basic_auth_users[user] = hash;
      });
    } else {
      Fail("web config: unknown key \"" + key + "\"" + Where(value));
    }
  });
}

}  // namespace

Status ParseWebConfig(std::string_view yaml, WebConfig& out) {
  out = WebConfig{};
  if (yaml.size() > kMaxConfigBytes) return Status::InvalidArgument("web config: file larger than 1 MiB");
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsDefined() && !root.IsNull()) ParseRoot(root, out);
  } catch (const ConfigError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("web config: invalid YAML: ") + e.what());
  }
  return Status::Ok();
}

Status LoadWebConfigFile(const std::string& path, WebConfig& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("web config: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  Status status = ParseWebConfig(text.str(), out);
  if (!status.ok()) return Status::InvalidArgument(path + ": " + status.message());
  if (out.tls) {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    for (std::string* file : {&out.tls->cert_file, &out.tls->key_file, &out.tls->client_ca_file}) {
      if (!file->empty() && std::filesystem::path(*file).is_relative()) *file = (dir / *file).string();
    }
  }
  return Status::Ok();
}

}  // namespace gpuscope
