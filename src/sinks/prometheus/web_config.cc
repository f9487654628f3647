#include "src/sinks/prometheus/web_config.h"

#include <filesystem>
#include <set>

#include "src/core/yaml_config.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

Status ParseTlsVersion(const YAML::Node& node, const std::string& key, TlsVersion* out) {
  std::string s;
  Status status = ReadYamlString(node, key, &s);
  if (!status.ok()) return status;
  if (s == "TLS12") {
    *out = TlsVersion::kTls12;
  } else if (s == "TLS13") {
    *out = TlsVersion::kTls13;
  } else if (s == "TLS10" || s == "TLS11") {
    return Status::InvalidArgument(key + ": " + s + " is not supported; use TLS12 or TLS13");
  } else {
    return Status::InvalidArgument(key + ": unknown TLS version \"" + s + "\"" + YamlLine(node));
  }
  return Status::Ok();
}

Status ParseClientAuth(const std::string& s, const YAML::Node& node, ClientAuthType* out) {
  if (s.empty() || s == "NoClientCert") {
    *out = ClientAuthType::kNoClientCert;
  } else if (s == "RequestClientCert") {
    *out = ClientAuthType::kRequestClientCert;
  } else if (s == "RequireAnyClientCert") {
    *out = ClientAuthType::kRequireAnyClientCert;
  } else if (s == "VerifyClientCertIfGiven") {
    *out = ClientAuthType::kVerifyClientCertIfGiven;
  } else if (s == "RequireAndVerifyClientCert") {
    *out = ClientAuthType::kRequireAndVerifyClientCert;
  } else {
    return Status::InvalidArgument("tls_server_config.client_auth_type: invalid value \"" + s + "\"" +
                                   YamlLine(node));
  }
  return Status::Ok();
}

Status ParseTls(const YAML::Node& node, std::optional<TlsServerConfig>* out,
                std::vector<std::string>& warnings) {
  TlsServerConfig tls;
  std::string client_auth;
  bool any_set = false;
  const std::string ctx = "tls_server_config";
  Status status = ForEachYamlEntry(node, ctx, [&](const std::string& key, const YAML::Node& value) {
    std::string path = ctx + "." + key;
    if (key == "cipher_suites" || key == "curve_preferences" || key == "prefer_server_cipher_suites") {
      if (!value.IsNull() && !value.IsSequence() && !value.IsScalar()) {
        return Status::InvalidArgument(path + ": malformed" + YamlLine(value));
      }
      warnings.push_back(path + " is accepted but ignored: OpenSSL's defaults apply");
      return Status::Ok();
    }
    if (key == "cert" || key == "key" || key == "client_ca" || key == "client_allowed_sans") {
      return Status::InvalidArgument(path +
                                     ": not supported by gpuscope; use cert_file, key_file and "
                                     "client_ca_file");
    }
    any_set = true;
    if (key == "cert_file") return ReadYamlString(value, path, &tls.cert_file);
    if (key == "key_file") return ReadYamlString(value, path, &tls.key_file);
    if (key == "client_ca_file") return ReadYamlString(value, path, &tls.client_ca_file);
    if (key == "client_auth_type") {
      Status read = ReadYamlString(value, path, &client_auth);
      return read.ok() ? ParseClientAuth(client_auth, value, &tls.client_auth_type) : read;
    }
    if (key == "min_version") return ParseTlsVersion(value, path, &tls.min_version);
    if (key == "max_version") {
      TlsVersion version = TlsVersion::kTls13;
      Status read = ParseTlsVersion(value, path, &version);
      if (read.ok()) tls.max_version = version;
      return read;
    }
    return UnknownYamlKey(ctx, key, value);
  });
  if (!status.ok()) return status;
  // As in the exporter toolkit: a section with nothing set means "no TLS".
  if (!any_set ||
      (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty() && client_auth.empty())) {
    out->reset();
    return Status::Ok();
  }
  if (tls.cert_file.empty()) return Status::InvalidArgument(ctx + ": missing cert_file");
  if (tls.key_file.empty()) return Status::InvalidArgument(ctx + ": missing key_file");
  bool verifies = tls.client_auth_type == ClientAuthType::kVerifyClientCertIfGiven ||
                  tls.client_auth_type == ClientAuthType::kRequireAndVerifyClientCert;
  if (verifies && tls.client_ca_file.empty()) {
    return Status::InvalidArgument(ctx + ": client_auth_type " + client_auth + " requires client_ca_file");
  }
  if (!tls.client_ca_file.empty() && tls.client_auth_type == ClientAuthType::kNoClientCert) {
    return Status::InvalidArgument(ctx + ": client_ca_file is set but client_auth_type is NoClientCert");
  }
  if (tls.max_version && *tls.max_version < tls.min_version) {
    return Status::InvalidArgument(ctx + ": max_version is below min_version");
  }
  *out = tls;
  return Status::Ok();
}

// The exporter toolkit allows only these security headers, with the same value checks.
Status ValidateHeader(const std::string& name, const std::string& value) {
  static const std::set<std::string> kAllowed = {"Strict-Transport-Security", "X-Content-Type-Options",
                                                 "X-Frame-Options", "X-XSS-Protection",
                                                 "Content-Security-Policy"};
  if (!kAllowed.contains(name)) {
    return Status::InvalidArgument("http_server_config.headers: HTTP header \"" + name +
                                   "\" can not be configured");
  }
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') {
      return Status::InvalidArgument("http_server_config.headers." + name + ": invalid characters");
    }
  }
  if (name == "X-Content-Type-Options" && value != "nosniff") {
    return Status::InvalidArgument(
        "http_server_config.headers.X-Content-Type-Options: only \"nosniff\" is allowed");
  }
  if (name == "X-Frame-Options" && value != "deny" && value != "sameorigin") {
    return Status::InvalidArgument(
        "http_server_config.headers.X-Frame-Options: only \"deny\" or \"sameorigin\" are allowed");
  }
  return Status::Ok();
}

bool LooksLikeBcrypt(const std::string& hash) {
  return hash.size() == 60 &&
         (hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$"));
}

Status ParseHttpServerConfig(const YAML::Node& node, WebConfig& out) {
  const std::string ctx = "http_server_config";
  return ForEachYamlEntry(node, ctx, [&](const std::string& key, const YAML::Node& value) {
    if (key == "headers") {
      return ForEachYamlEntry(value, ctx + ".headers", [&](const std::string& name, const YAML::Node& v) {
        std::string header_value;
        Status status = ReadYamlString(v, ctx + ".headers." + name, &header_value);
        if (status.ok()) status = ValidateHeader(name, header_value);
        if (status.ok()) out.headers[name] = header_value;
        return status;
      });
    }
    if (key == "http2") {
      bool http2 = false;
      Status status = ReadYamlBool(value, ctx + ".http2", &http2);
      if (status.ok() && http2) out.warnings.push_back("http_server_config.http2 is ignored: HTTP/1.1 only");
      return status;
    }
    return UnknownYamlKey(ctx, key, value);
  });
}

Status ParseBasicAuthUsers(const YAML::Node& node, WebConfig& out) {
  const std::string ctx = "basic_auth_users";
  return ForEachYamlEntry(node, ctx, [&](const std::string& user, const YAML::Node& value) {
    std::string hash;
    Status status = ReadYamlString(value, ctx + "." + user, &hash);
    if (!status.ok()) return status;
    if (user.empty()) return Status::InvalidArgument(ctx + ": empty user name");
    if (user.find(':') != std::string::npos) {
      return Status::InvalidArgument(ctx + ": user name \"" + user + "\" contains ':'");
    }
    if (!LooksLikeBcrypt(hash)) {
      return Status::InvalidArgument(ctx + "." + user + ": not a bcrypt hash ($2y$, $2b$ or $2a$, 60 chars)");
    }
    out.basic_auth_users[user] = hash;
    return Status::Ok();
  });
}

}  // namespace

Status ParseWebConfig(std::string_view yaml, WebConfig& out) {
  out = WebConfig{};
  if (yaml.size() > kMaxConfigBytes) return Status::InvalidArgument("web config: file larger than 1 MiB");
  return WalkYamlDocument(yaml, "web config", [&](const YAML::Node& root) {
    return ForEachYamlEntry(root, "web config", [&](const std::string& key, const YAML::Node& value) {
      if (key == "tls_server_config") return ParseTls(value, &out.tls, out.warnings);
      if (key == "http_server_config") return ParseHttpServerConfig(value, out);
      if (key == "basic_auth_users") return ParseBasicAuthUsers(value, out);
      return UnknownYamlKey("web config", key, value);
    });
  });
}

Status LoadWebConfigFile(const std::string& path, WebConfig& out) {
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text) return Status::NotFound("web config: cannot read " + path);
  Status status = ParseWebConfig(*text, out);
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
