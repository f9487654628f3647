#include "src/sinks/prometheus/web_config.h"

#include <gtest/gtest.h>

#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

TEST(PrometheusWebConfig, ParsesAFullExporterToolkitConfig) {
  WebConfig config;
  Status status = ParseWebConfig(R"(
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_AES_128_GCM_SHA256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  prometheus: $2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy
)",
                                 config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(config.tls.has_value());
  EXPECT_EQ(config.tls->cert_file, "server.crt");
  EXPECT_EQ(config.tls->key_file, "server.key");
  EXPECT_EQ(config.tls->client_auth_type, ClientAuthType::kRequireAndVerifyClientCert);
  EXPECT_EQ(config.tls->client_ca_file, "ca.crt");
  EXPECT_EQ(config.tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(config.tls->max_version, TlsVersion::kTls13);
  EXPECT_EQ(config.headers.at("X-Frame-Options"), "deny");
  EXPECT_EQ(config.basic_auth_users.size(), 1u);
  ASSERT_EQ(config.warnings.size(), 1u);  // cipher_suites is ignored
  EXPECT_NE(config.warnings[0].find("cipher_suites"), std::string::npos);
}

TEST(PrometheusWebConfig, EmptyDocumentAndEmptyTlsSectionMeanPlainHttp) {
  WebConfig config;
  ASSERT_TRUE(ParseWebConfig("", config).ok());
  EXPECT_FALSE(config.tls.has_value());
  ASSERT_TRUE(ParseWebConfig("tls_server_config:\n", config).ok());
  EXPECT_FALSE(config.tls.has_value());
  EXPECT_TRUE(config.basic_auth_users.empty());
}

// Returns the error message of a config that must be rejected.
std::string ErrorOf(const std::string& yaml) {
  WebConfig config;
  Status status = ParseWebConfig(yaml, config);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << yaml;
  return status.message();
}

TEST(PrometheusWebConfig, RejectsUnknownKeysWithTheirName) {
  EXPECT_NE(ErrorOf("tls_server_confg: {}\n").find("tls_server_confg"), std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_fil: a\n").find("cert_fil"), std::string::npos);
  EXPECT_NE(ErrorOf("http_server_config:\n  header: {}\n").find("header"), std::string::npos);
}

TEST(PrometheusWebConfig, RejectsInconsistentTlsSettings) {
  EXPECT_NE(ErrorOf("tls_server_config:\n  key_file: k\n").find("missing cert_file"), std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_file: c\n").find("missing key_file"), std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: Sometimes\n")
                .find("client_auth_type"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: "
                    "RequireAndVerifyClientCert\n")
                .find("requires client_ca_file"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n")
                .find("NoClientCert"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS11\n").find("TLS11"),
      std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS13\n  max_version: "
                    "TLS12\n")
                .find("max_version"),
            std::string::npos);
}

TEST(PrometheusWebConfig, RejectsBadUsersHeadersAndYaml) {
  EXPECT_NE(ErrorOf("basic_auth_users:\n  alice: plaintext\n").find("bcrypt"), std::string::npos);
  EXPECT_NE(ErrorOf("basic_auth_users: [alice]\n").find("mapping"), std::string::npos);
  EXPECT_NE(ErrorOf("http_server_config:\n  headers:\n    Set-Cookie: x\n").find("Set-Cookie"),
            std::string::npos);
  EXPECT_NE(ErrorOf("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n").find("nosniff"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tls_server_config: [\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(ErrorOf("- a\n- b\n").find("mapping"), std::string::npos);
  EXPECT_NE(ErrorOf("basic_auth_users:\n  a: $2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy\n"
                    "  a: $2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy\n")
                .find("duplicate"),
            std::string::npos);
}

TEST(PrometheusWebConfig, LoadResolvesRelativePathsAgainstTheConfigDirectory) {
  testing::TempDir dir;
  std::string file =
      dir.Write("web.yml", "tls_server_config:\n  cert_file: tls/c.pem\n  key_file: /abs/k.pem\n");
  WebConfig config;
  ASSERT_TRUE(LoadWebConfigFile(file, config).ok());
  EXPECT_EQ(config.tls->cert_file, dir.path() + "/tls/c.pem");
  EXPECT_EQ(config.tls->key_file, "/abs/k.pem");
  EXPECT_EQ(LoadWebConfigFile(dir.path() + "/missing.yml", config).code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace gpuscope
