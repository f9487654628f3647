#include "src/sinks/prometheus/prometheus_endpoint.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

using testing::ParsedResponse;
using testing::TempDir;
using testing::TestClient;

using testing::kHtpasswdLine;
constexpr const char* kAuthorization = testing::kBasicAuthorization;

std::vector<MetricFamily> SampleFamilies(double temperature) {
  return {
      {"DCGM_FI_DEV_GPU_TEMP",
       "GPU temperature (in C).",
       MetricType::kGauge,
       "",
       {{{{"gpu", "0"}, {"UUID", "GPU-a"}}, temperature}}},
      {"gpuscope_gpu_info", "GPU identity.", MetricType::kInfo, "", {{{{"uuid", "GPU-a"}}, 1}}},
  };
}

double SelfMetric(const PrometheusEndpoint& endpoint, std::string_view name, const Labels& labels = {}) {
  std::vector<MetricFamily> families;
  endpoint.CollectSelfMetrics(families);
  for (const MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const Sample& sample : family.samples) {
      if (sample.labels == labels) return sample.value;
    }
  }
  return -1;
}

class PrometheusEndpointTest : public ::testing::Test {
 protected:
  std::unique_ptr<PrometheusEndpoint> StartEndpoint(
      const std::string& web_config = "", size_t max_connections = 64,
      const std::function<void(PrometheusEndpoint&)>& before_start = nullptr) {
    EndpointOptions options;
    options.listen_address = "127.0.0.1:0";
    options.max_connections = max_connections;
    if (!web_config.empty()) options.web_config_file = dir_.Write("web.yml", web_config);
    Status status;
    auto endpoint = PrometheusEndpoint::Create(
        options, &store_,
        [this] {
          std::lock_guard<std::mutex> lock(health_mu_);
          return health_;
        },
        status);
    EXPECT_TRUE(status.ok()) << status.ToString();
    if (!endpoint) return nullptr;
    if (before_start) before_start(*endpoint);
    status = endpoint->Start();
    EXPECT_TRUE(status.ok()) << status.ToString();
    return endpoint;
  }

  TempDir dir_;
  SnapshotStore store_;
  void SetHealth(HealthReport report) {
    std::lock_guard<std::mutex> lock(health_mu_);
    health_ = std::move(report);
  }

  std::mutex health_mu_;
  HealthReport health_{true, true, ""};
};

TEST_F(PrometheusEndpointTest, ServesTextFormatByDefault) {
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  ParsedResponse response = client.Get("/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.headers["vary"], "Accept, Accept-Encoding");
  EXPECT_EQ(response.body,
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\"} 45\n"
            "# HELP gpuscope_gpu_info GPU identity.\n# TYPE gpuscope_gpu_info gauge\n"
            "gpuscope_gpu_info{uuid=\"GPU-a\"} 1\n");
}

TEST_F(PrometheusEndpointTest, ServesOpenMetricsWhenPrometheusAsksForIt) {
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  ParsedResponse response = client.Get(
      "/metrics", "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n");
  EXPECT_EQ(response.headers["content-type"], "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_NE(response.body.find("# TYPE gpuscope_gpu info\n"), std::string::npos);
  EXPECT_TRUE(response.body.ends_with("# EOF\n"));
}

TEST_F(PrometheusEndpointTest, GzipsWhenAcceptedAndTheBodyInflatesToThePlainOne) {
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  ParsedResponse plain = client.Get("/metrics");
  ParsedResponse gzipped = client.Get("/metrics", "Accept-Encoding: gzip, deflate\r\n");
  EXPECT_EQ(plain.headers.count("content-encoding"), 0u);
  EXPECT_EQ(gzipped.headers["content-encoding"], "gzip");
  EXPECT_EQ(testing::Gunzip(gzipped.body), plain.body);
}

TEST_F(PrometheusEndpointTest, RendersEachSnapshotOncePerFormatAndFollowsNewSnapshots) {
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  ParsedResponse first = client.Get("/metrics");
  ParsedResponse second = client.Get("/metrics");
  EXPECT_EQ(first.body, second.body);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_exposition_renders_total"), 1);
  store_.Update("gpu", SampleFamilies(50));
  ParsedResponse third = client.Get("/metrics");
  EXPECT_NE(third.body.find("} 50\n"), std::string::npos);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_exposition_renders_total"), 2);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_requests_total", {{"path", "/metrics"}, {"code", "200"}}),
            3);
}

TEST_F(PrometheusEndpointTest, HealthAndReadinessFollowTheHealthProvider) {
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  EXPECT_EQ(client.Get("/healthz").body, "ok\n");
  EXPECT_EQ(client.Get("/readyz").status, 200);
  SetHealth(HealthReport{false, false, "collector gpu: NVML lost"});
  ParsedResponse health = client.Get("/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.body.find("NVML lost"), std::string::npos);
  EXPECT_EQ(client.Get("/readyz").status, 503);
}

TEST_F(PrometheusEndpointTest, LandingPageLinksTheMetricsPath) {
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  ParsedResponse response = client.Get("/");
  EXPECT_EQ(response.status, 200);
  EXPECT_NE(response.body.find("href=\"/metrics\""), std::string::npos);
  EXPECT_EQ(client.Get("/other").status, 404);
}

TEST_F(PrometheusEndpointTest, BasicAuthProtectsEveryPath) {
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint(std::string("basic_auth_users:\n  ") + kHtpasswdLine);
  TestClient client(endpoint->port());
  for (const char* path : {"/metrics", "/healthz", "/readyz", "/"}) {
    ParsedResponse response = client.Get(path);
    EXPECT_EQ(response.status, 401) << path;
    EXPECT_EQ(response.headers["www-authenticate"], "Basic") << path;
  }
  EXPECT_EQ(client.Get("/metrics", "Authorization: Basic cHJvbWV0aGV1czp3cm9uZw==\r\n").status,
            401);  // wrong
  EXPECT_EQ(client.Get("/metrics", kAuthorization).status, 200);
  EXPECT_EQ(client.Get("/healthz", kAuthorization).status, 200);
}

TEST_F(PrometheusEndpointTest, ServesAPostRouteBehindBasicAuthAndCountsItsResponsesByPath) {
  auto endpoint =
      StartEndpoint(std::string("basic_auth_users:\n  ") + kHtpasswdLine, 64, [](PrometheusEndpoint& e) {
        e.HandlePost("/api/v1/in", 64, [](const HttpRequestHead& request, HttpResponse& response) {
          response.body = std::string(request.body);
        });
      });
  TestClient client(endpoint->port());
  ParsedResponse response;
  ASSERT_TRUE(client.SendRaw("POST /api/v1/in HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
  ASSERT_TRUE(client.ReadResponse(response));
  EXPECT_EQ(response.status, 401);
  ASSERT_TRUE(client.SendRaw(std::string("POST /api/v1/in HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n") +
                             kAuthorization + "\r\n{}"));
  ASSERT_TRUE(client.ReadResponse(response));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "{}");
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_requests_total", {{"path", "/api/v1/in"}, {"code", "200"}}),
            1);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_requests_total", {{"path", "/api/v1/in"}, {"code", "401"}}),
            1);
}

TEST_F(PrometheusEndpointTest, ServesOverTlsWithASelfSignedCertificate) {
  std::string cert = dir_.path() + "/server.crt", key = dir_.path() + "/server.key";
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(cert, key));
  store_.Update("gpu", SampleFamilies(45));
  auto endpoint = StartEndpoint("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_NE(endpoint, nullptr);
  SSL_CTX* ctx = testing::NewClientContext(cert);
  {
    TestClient client(endpoint->port(), ctx);
    ASSERT_TRUE(client.ok());
    ParsedResponse response = client.Get("/metrics");
    EXPECT_EQ(response.status, 200);
    EXPECT_NE(response.body.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
    EXPECT_EQ(client.Get("/metrics").status, 200);  // keep-alive over TLS
  }
  {
    TestClient plain(endpoint->port());  // plain HTTP to a TLS port gets no HTTP response
    EXPECT_EQ(plain.Get("/metrics").status, -1);
  }
  SSL_CTX_free(ctx);
}

TEST_F(PrometheusEndpointTest, RequiresAVerifiedClientCertificateWhenConfigured) {
  std::string cert = dir_.path() + "/server.crt", key = dir_.path() + "/server.key";
  std::string client_cert = dir_.path() + "/client.crt", client_key = dir_.path() + "/client.key";
  std::string stranger_cert = dir_.path() + "/stranger.crt", stranger_key = dir_.path() + "/stranger.key";
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(cert, key));
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(client_cert, client_key));
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(stranger_cert, stranger_key));
  auto endpoint = StartEndpoint(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: client.crt\n");
  ASSERT_NE(endpoint, nullptr);
  SSL_CTX* trusted = testing::NewClientContext(cert, client_cert, client_key);
  SSL_CTX* anonymous = testing::NewClientContext(cert);
  SSL_CTX* stranger = testing::NewClientContext(cert, stranger_cert, stranger_key);
  {
    TestClient client(endpoint->port(), trusted);
    EXPECT_EQ(client.Get("/healthz").status, 200);
  }
  {
    // With TLS 1.3 the server's rejection may arrive after the client's handshake completes.
    TestClient client(endpoint->port(), anonymous);
    EXPECT_TRUE(!client.ok() || client.Get("/healthz").status == -1);
  }
  {
    TestClient client(endpoint->port(), stranger);
    EXPECT_TRUE(!client.ok() || client.Get("/healthz").status == -1);
  }
  SSL_CTX_free(trusted);
  SSL_CTX_free(anonymous);
  SSL_CTX_free(stranger);
}

TEST_F(PrometheusEndpointTest, CreateFailsWithAClearMessageForABadWebConfig) {
  EndpointOptions options;
  options.listen_address = "127.0.0.1:0";
  options.web_config_file = dir_.Write("bad.yml", "basic_auth_users:\n  alice: plaintext\n");
  Status status;
  EXPECT_EQ(PrometheusEndpoint::Create(options, &store_, nullptr, status), nullptr);
  EXPECT_NE(status.message().find("bcrypt"), std::string::npos) << status.ToString();
  options.web_config_file = dir_.path() + "/missing.yml";
  EXPECT_EQ(PrometheusEndpoint::Create(options, &store_, nullptr, status), nullptr);
  EXPECT_EQ(status.code(), Status::Code::kNotFound);
  options.web_config_file = "";
  options.telemetry_path = "metrics";
  EXPECT_EQ(PrometheusEndpoint::Create(options, &store_, nullptr, status), nullptr);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
}

TEST_F(PrometheusEndpointTest, TlsFilesThatCannotBeLoadedFailStart) {
  EndpointOptions options;
  options.listen_address = "127.0.0.1:0";
  options.web_config_file =
      dir_.Write("web.yml", "tls_server_config:\n  cert_file: none.crt\n  key_file: none.key\n");
  Status status;
  auto endpoint = PrometheusEndpoint::Create(options, &store_, nullptr, status);
  ASSERT_NE(endpoint, nullptr);
  status = endpoint->Start();
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(status.message().find("none.crt"), std::string::npos) << status.ToString();
}

TEST_F(PrometheusEndpointTest, SelfCollectorPublishesRequestCounts) {
  auto endpoint = StartEndpoint();
  TestClient client(endpoint->port());
  client.Get("/healthz");
  client.Get("/does/not/exist");
  EndpointSelfCollector collector(endpoint.get());
  std::vector<MetricFamily> families;
  ASSERT_TRUE(collector.Collect(families).ok());
  EXPECT_EQ(collector.Name(), "prometheus_endpoint");
  EXPECT_EQ(families.size(), collector.Describe().size());
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_requests_total", {{"path", "/healthz"}, {"code", "200"}}),
            1);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_requests_total", {{"path", "other"}, {"code", "404"}}), 1);
}

TEST_F(PrometheusEndpointTest, SelfMetricsCountSlowConnectionsEvictedAtTheCap) {
  auto endpoint = StartEndpoint("", /*max_connections=*/1);
  TestClient slow(endpoint->port());
  ASSERT_TRUE(slow.SendRaw("GET /metrics HTTP/1.1\r\nHo"));
  TestClient scraper(endpoint->port());
  EXPECT_EQ(scraper.Get("/healthz").status, 200);
  std::string raw;
  EXPECT_TRUE(slow.ReadUntilClosed(raw));
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections_evicted_total", {{"state", "header"}}), 1);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections_evicted_total", {{"state", "idle"}}), 0);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections_timed_out_total", {{"state", "header"}}), 0);
  // The scraper's connection stays, idle between requests, once the worker has handed it back.
  for (int i = 0; i < 1000 && SelfMetric(*endpoint, "gpuscope_http_connections", {{"state", "idle"}}) != 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections", {{"state", "idle"}}), 1);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections", {{"state", "header"}}), 0);
  EXPECT_EQ(SelfMetric(*endpoint, "gpuscope_http_connections", {{"state", "serving"}}), 0);
}

}  // namespace
}  // namespace gpuscope
