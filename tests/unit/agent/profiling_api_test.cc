// The profiling pause API on a real endpoint (port 0): credentials (bearer token, basic auth, neither),
// pause, resume and state as JSON, bad bodies; and the request parser on its own.
#include "src/agent/profiling_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/core/snapshot.h"
#include "src/node/profiling_pause.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"
#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

using testing::ParsedResponse;
using testing::TempDir;
using testing::TestClient;

using testing::kHtpasswdLine;
constexpr const char* kBasic = testing::kBasicAuthorization;

class ProfilingApiTest : public ::testing::Test {
 protected:
  void Start(const std::string& token, const std::string& web_config = "") {
    token_file_ = dir_.path() + "/profiling.token";
    if (!token.empty()) dir_.Write("profiling.token", token);
    EndpointOptions options;
    options.listen_address = "127.0.0.1:0";
    if (!web_config.empty()) options.web_config_file = dir_.Write("web.yml", web_config);
    Status status;
    endpoint_ = PrometheusEndpoint::Create(options, &store_, nullptr, status);
    ASSERT_NE(endpoint_, nullptr) << status.ToString();
    RegisterProfilingApi(endpoint_.get(), &pause_, token_file_);
    ASSERT_TRUE(endpoint_->Start().ok());
  }
  ParsedResponse Post(const std::string& path, const std::string& body, const std::string& headers = "") {
    TestClient client(endpoint_->port());
    EXPECT_TRUE(client.SendRaw("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n" + headers + "\r\n" + body));
    ParsedResponse response;
    EXPECT_TRUE(client.ReadResponse(response));
    return response;
  }

  TempDir dir_;
  std::string token_file_;
  SnapshotStore store_;
  ProfilingPause pause_;
  std::unique_ptr<PrometheusEndpoint> endpoint_;
};

TEST_F(ProfilingApiTest, PausesAndResumesWithTheBearerTokenAndReportsTheStateAsJson) {
  Start("s3cret-token\n");
  const std::string auth = "Authorization: Bearer s3cret-token\r\n";
  ParsedResponse r =
      Post("/api/v1/profiling/pause", R"({"duration_seconds": 600, "reason": "ncu by alice"})", auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_TRUE(body["paused"].get<bool>());
  EXPECT_GT(body["until_unix"].get<double>(), 1e9);
  EXPECT_EQ(body["reason"], "ncu by alice");
  EXPECT_EQ(body["dcgm"], "not in use");
  EXPECT_TRUE(pause_.Paused());

  TestClient client(endpoint_->port());
  r = client.Get("/api/v1/profiling");  // reading the state needs no credentials
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(nlohmann::json::parse(r.body)["paused"].get<bool>());

  r = Post("/api/v1/profiling/resume", "{}", auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(nlohmann::json::parse(r.body)["paused"].get<bool>());
  EXPECT_FALSE(pause_.Paused());
  EXPECT_EQ(pause_.State().pauses_total, 1u);
}

TEST_F(ProfilingApiTest, RefusesAWrongOrMissingTokenWith401) {
  Start("s3cret-token");
  for (const std::string& headers :
       {std::string(), std::string("Authorization: Bearer wrong-token\r\n"),
        std::string("Authorization: Bearer s3cret-token-and-more\r\n"), std::string(kBasic)}) {
    ParsedResponse r = Post("/api/v1/profiling/pause", R"({"duration_seconds": 60})", headers);
    EXPECT_EQ(r.status, 401) << headers;
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
  }
  EXPECT_FALSE(pause_.Paused());
  EXPECT_EQ(Post("/api/v1/profiling/resume", "", "").status, 401);
}

TEST_F(ProfilingApiTest, WithoutAnyCredentialsConfiguredTheControlIsOff) {
  Start("");  // no token file, no basic auth: never open
  ParsedResponse r =
      Post("/api/v1/profiling/pause", R"({"duration_seconds": 60})", "Authorization: Bearer anything\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(nlohmann::json::parse(r.body)["error"].get<std::string>().find("--profiling.token-file"),
            std::string::npos);
  EXPECT_FALSE(pause_.Paused());
}

TEST_F(ProfilingApiTest, BasicAuthOfTheWebConfigGuardsItWhenConfigured) {
  Start("", std::string("basic_auth_users:\n  ") + kHtpasswdLine);
  EXPECT_EQ(Post("/api/v1/profiling/pause", R"({"duration_seconds": 60})").status, 401);
  ParsedResponse r = Post("/api/v1/profiling/pause", R"({"duration_seconds": 60})", kBasic);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(pause_.Paused());
}

TEST_F(ProfilingApiTest, BadBodiesAre400AndChangeNothing) {
  Start("t");
  const std::string auth = "Authorization: Bearer t\r\n";
  for (const std::string& body :
       {std::string("not json"), std::string("[]"), std::string("{}"),
        std::string(R"({"duration_seconds": "10m"})"), std::string(R"({"duration_seconds": 0})"),
        std::string(R"({"duration_seconds": 90000})"),
        std::string(R"({"duration_seconds": 60, "reason": 7})"),
        std::string(R"({"duration_seconds": 60, "reason": "a\nb"})")}) {
    ParsedResponse r = Post("/api/v1/profiling/pause", body, auth);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_TRUE(nlohmann::json::parse(r.body).contains("error")) << r.body;
  }
  EXPECT_EQ(Post("/api/v1/profiling/pause", std::string(5000, ' '), auth).status, 413);
  EXPECT_FALSE(pause_.Paused());
  EXPECT_EQ(pause_.State().pauses_total, 0u);
}

TEST(ProfilingPauseRequestTest, ParsesTheDurationAndAnOptionalReason) {
  ProfilingPauseRequest request;
  ASSERT_TRUE(ParseProfilingPauseRequest(R"({"duration_seconds": 90.5, "extra": true})", &request).ok());
  EXPECT_EQ(request.seconds, 90.5);
  EXPECT_EQ(request.reason, "");
  ASSERT_TRUE(ParseProfilingPauseRequest(R"({"duration_seconds": 60, "reason": null})", &request).ok());
  ASSERT_TRUE(ParseProfilingPauseRequest(R"({"reason": "x", "duration_seconds": 1})", &request).ok());
  EXPECT_EQ(request.reason, "x");
  EXPECT_FALSE(ParseProfilingPauseRequest("", &request).ok());
  EXPECT_FALSE(ParseProfilingPauseRequest("{\"duration_seconds\": 1e999}", &request).ok());
  EXPECT_FALSE(ParseProfilingPauseRequest("\xff", &request).ok());
}

}  // namespace
}  // namespace gpuscope
