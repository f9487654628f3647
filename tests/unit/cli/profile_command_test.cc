#include "src/cli/profile_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "src/platform/host.h"
#include "tests/tools/push_receiver/test_http_server.h"

namespace gpuscope {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using testing::MakeHttpResponse;
using ::testing::StartsWith;
using testing::TestHttpReply;
using testing::TestHttpRequest;
using testing::TestHttpServer;

// 2026-12-02T14:32:05Z and 14:22:05Z on the same day.
constexpr double kUntil = 1796221925;
constexpr double kNow = kUntil - 600;

// A stand-in for the agent's control endpoints: answers every request with `status` and `body`, and keeps
// the requests it saw.
class FakeAgent {
 public:
  explicit FakeAgent(int status, const std::string& body)
      : server_({}, [this, status, body](const TestHttpRequest& request) {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(request);
          return TestHttpReply{MakeHttpResponse(status, "application/json", body)};
        }) {
    EXPECT_TRUE(server_.Start().ok());
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  std::vector<TestHttpRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  std::mutex mu_;
  std::vector<TestHttpRequest> requests_;
  TestHttpServer server_;
};

// A file holding `text`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/gpuscope-profile-test-XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Result {
  int code = 0;
  std::string out;
  std::string err;
};

// Runs `action` with `args`, parsed with `command`'s flags; its exit code and what it wrote.
Result RunProfile(const Command& command, ProfileAction action, const std::vector<std::string>& args) {
  CommandLine line;
  EXPECT_TRUE(ParseCommandLine(args, command.flags, &line).ok());
  std::ostringstream out, err;
  Result result;
  result.code = RunProfileCommand(action, line, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

const char* kPausedBody =
    R"({"paused": true, "until_unix": 1796221925.25, "dcgm": "paused", "reason": "ncu by alice"})";

TEST(ProfilePause, PostsTheDurationReasonAndTokenAndSaysUntilWhen) {
  FakeAgent agent(200, kPausedBody);
  TempFile token("s3cret\n");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m",
                         "--reason", "ncu by alice"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(agent.requests().size(), 1u);
  const TestHttpRequest request = agent.requests()[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/api/v1/profiling/pause");
  EXPECT_EQ(request.Header("authorization"), "Bearer s3cret");
  EXPECT_EQ(request.Header("content-type"), "application/json");
  const nlohmann::json body = nlohmann::json::parse(request.body);
  EXPECT_EQ(body["duration_seconds"], 600);
  EXPECT_EQ(body["reason"], "ncu by alice");
  EXPECT_THAT(r.out, StartsWith("Profiling paused on " + AgentHostForPeople(agent.url()) + " until "));
  EXPECT_THAT(r.out, EndsWith(" UTC (10m); DCGM: paused. Run `gpuscope profile-resume` when done.\n"));
}

TEST(ProfilePause, ScrapeUrlIsAcceptedAndBasicAuthReplacesTheToken) {
  FakeAgent agent(200, R"({"paused": true, "until_unix": 1796221925, "dcgm": "not in use"})");
  TempFile password("pw\n");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url() + "/metrics", "--agent.username", "ops",
                         "--agent.password-file", password.path(), "--for", "90s"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(agent.requests().size(), 1u);
  EXPECT_EQ(agent.requests()[0].path, "/api/v1/profiling/pause");
  EXPECT_EQ(agent.requests()[0].Header("authorization"), "Basic b3BzOnB3");  // ops:pw
  EXPECT_EQ(nlohmann::json::parse(agent.requests()[0].body)["duration_seconds"], 90);
  EXPECT_THAT(r.out, HasSubstr("(1m30s); DCGM: not in use."));
}

TEST(ProfilePause, JsonOutputIsTheAgentsAnswerWithTheAgentAndTheEndAsRfc3339) {
  FakeAgent agent(200, kPausedBody);
  TempFile token("t");
  Result r = RunProfile(
      ProfilePauseCommand(), ProfileAction::kPause,
      {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "1h", "--format", "json"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["paused"], true);
  EXPECT_EQ(doc["dcgm"], "paused");
  EXPECT_EQ(doc["agent_url"], agent.url());
  EXPECT_EQ(doc["until"], "2026-12-02T14:32:05Z");
}

TEST(ProfilePause, UnauthorizedSaysTheTokenIsNotTheAgentsAndExitsOne) {
  FakeAgent agent(401, R"({"error": "bad credentials"})");
  TempFile token("wrong");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("the agent at " + agent.url() +
                               " refused the credentials (HTTP 401: bad credentials)"));
  EXPECT_THAT(r.err, HasSubstr("the token sent is not the one in its --profiling.token-file"));
}

TEST(ProfilePause, UnauthorizedWithoutATokenSaysWhyNoneWasSent) {
  FakeAgent agent(401, "");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", "", "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  ASSERT_EQ(agent.requests().size(), 1u);
  EXPECT_EQ(agent.requests()[0].Header("authorization"), "");
  EXPECT_THAT(r.err, HasSubstr("no credentials were sent: --agent.token-file is empty"));
}

TEST(ProfilePause, ForbiddenSaysTheAgentHasNoCredentialsConfigured) {
  FakeAgent agent(403, R"({"error": "profiling control is off: no credentials configured"})");
  TempFile token("t");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.err,
              HasSubstr("the agent at " + agent.url() +
                        " refused: no credentials configured; set --profiling.token-file on the agent"));
}

TEST(ProfilePause, ABadRequestCarriesTheAgentsReason) {
  FakeAgent agent(400, R"({"error": "reason: control characters are not allowed"})");
  TempFile token("t");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.err,
              HasSubstr("the agent at " + agent.url() +
                        " rejected the request (HTTP 400): reason: control characters are not allowed"));
}

TEST(ProfilePause, AnAgentWithoutTheEndpointIsToldApart) {
  FakeAgent agent(404, "404 page not found\n");
  TempFile token("t");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.err, HasSubstr("has no profiling control (HTTP 404 for /api/v1/profiling/pause)"));
}

TEST(ProfilePause, BadDurationsAreUsageErrorsAndNothingIsSent) {
  FakeAgent agent(200, kPausedBody);
  TempFile token("t");
  for (const char* duration : {"", "ten minutes", "0s", "25h", "1500ms", "-5m"}) {
    Result r = RunProfile(
        ProfilePauseCommand(), ProfileAction::kPause,
        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for=" + std::string(duration)});
    EXPECT_EQ(r.code, kExitUsage) << duration;
    EXPECT_THAT(r.err, StartsWith("gpuscope profile-pause: --for")) << duration;
  }
  EXPECT_TRUE(agent.requests().empty());
}

TEST(ProfilePause, TooLongAReasonAndAnUnreadableNamedTokenFileAreUsageErrors) {
  Result r =
      RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                 {"--agent.url", "http://127.0.0.1:1", "--for", "10m", "--reason", std::string(201, 'x')});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--reason is longer than 200 bytes"));
  r = RunProfile(
      ProfilePauseCommand(), ProfileAction::kPause,
      {"--agent.url", "http://127.0.0.1:1", "--for", "10m", "--agent.token-file", "/nonexistent/token"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--agent.token-file: cannot read /nonexistent/token"));
}

TEST(ProfilePause, UnreachableAgentSaysSoAndExitsOne) {
  TempFile token("t");
  Result r =
      RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                 {"--agent.url", "http://127.0.0.1:1", "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("cannot reach the agent at http://127.0.0.1:1: "));
  EXPECT_THAT(r.err, HasSubstr("is gpuscope-agent running there?"));
}

TEST(ProfilePause, DcgmThatDidNotPauseIsAWarningAndExitsOne) {
  FakeAgent agent(200,
                  R"({"paused": true, "until_unix": 1796221925, "dcgm": "dcgmProfPause: DCGM_ST_IN_USE"})");
  TempFile token("t");
  Result r = RunProfile(ProfilePauseCommand(), ProfileAction::kPause,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path(), "--for", "10m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.out, HasSubstr("DCGM: dcgmProfPause: DCGM_ST_IN_USE."));
  EXPECT_THAT(r.err, HasSubstr("warning: DCGM did not confirm the pause (dcgmProfPause: DCGM_ST_IN_USE)"));
}

TEST(ProfilePause, DcgmNotInUseOrNotConnectedAgreesAndAnUnappliedChangeDoesNot) {
  EXPECT_TRUE(DcgmAgrees("paused", true));
  EXPECT_TRUE(DcgmAgrees("not in use", true));
  EXPECT_TRUE(DcgmAgrees("not connected: the pause is applied when DCGM is back", true));
  EXPECT_TRUE(DcgmAgrees("", false));
  EXPECT_TRUE(DcgmAgrees("resumed", false));
  EXPECT_FALSE(DcgmAgrees("resumed", true));  // DCGM has not applied the pause yet
  EXPECT_FALSE(DcgmAgrees("paused", false));
  EXPECT_FALSE(DcgmAgrees("dcgmProfResume: Error", false));
}

TEST(ProfileResume, PostsAnEmptyObjectAndSaysResumed) {
  FakeAgent agent(200, R"({"paused": false, "until_unix": 0, "dcgm": "resumed"})");
  TempFile token("t");
  Result r = RunProfile(ProfileResumeCommand(), ProfileAction::kResume,
                        {"--agent.url", agent.url(), "--agent.token-file", token.path()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(agent.requests().size(), 1u);
  EXPECT_EQ(agent.requests()[0].method, "POST");
  EXPECT_EQ(agent.requests()[0].path, "/api/v1/profiling/resume");
  EXPECT_EQ(agent.requests()[0].body, "{}");
  EXPECT_EQ(agent.requests()[0].Header("authorization"), "Bearer t");
  EXPECT_EQ(r.out, "Profiling resumed on " + AgentHostForPeople(agent.url()) +
                       "; DCGM: resumed; the agent collects profiling metrics again.\n");
}

TEST(ProfileStatus, GetsTheStateWithoutAToken) {
  FakeAgent agent(200, R"({"paused": false, "until_unix": 0, "reason": "", "dcgm": "not in use"})");
  Result r = RunProfile(ProfileStatusCommand(), ProfileAction::kStatus, {"--agent.url", agent.url()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(agent.requests().size(), 1u);
  EXPECT_EQ(agent.requests()[0].method, "GET");
  EXPECT_EQ(agent.requests()[0].path, "/api/v1/profiling");
  EXPECT_EQ(agent.requests()[0].Header("authorization"), "");
  EXPECT_THAT(r.out, HasSubstr(": not paused (the agent collects profiling metrics); DCGM: not in use.\n"));
}

TEST(ProfileStatus, AnAnswerThatIsNotAStateIsAnError) {
  FakeAgent agent(200, "<html>hello</html>");
  Result r = RunProfile(ProfileStatusCommand(), ProfileAction::kStatus, {"--agent.url", agent.url()});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.err, HasSubstr("with something that is not a profiling state: not a JSON object"));
}

TEST(ProfilingState, ParsesTheAgentsAnswerAndRefusesOtherShapes) {
  ProfilingState state;
  ASSERT_TRUE(ParseProfilingState(kPausedBody, &state).ok());
  EXPECT_TRUE(state.paused);
  EXPECT_DOUBLE_EQ(state.until_unix, 1796221925.25);
  EXPECT_EQ(state.reason, "ncu by alice");
  EXPECT_EQ(state.dcgm, "paused");
  ASSERT_TRUE(ParseProfilingState(R"({"paused": false})", &state).ok());
  EXPECT_FALSE(state.paused);
  EXPECT_EQ(state.until_unix, 0);
  for (const char* body : {"", "[]", R"({"paused": 1})", R"({"until_unix": 5})",
                           R"({"paused": true, "until_unix": "soon"})", R"({"paused": true, "dcgm": 3})"}) {
    EXPECT_EQ(ParseProfilingState(body, &state).code(), Status::Code::kInvalidArgument) << body;
  }
}

TEST(ProfilePauseSeconds, WholeSecondsFromOneSecondToADay) {
  int64_t seconds = 0;
  ASSERT_TRUE(ParsePauseSeconds("10m", &seconds).ok());
  EXPECT_EQ(seconds, 600);
  ASSERT_TRUE(ParsePauseSeconds("1h30m", &seconds).ok());
  EXPECT_EQ(seconds, 5400);
  ASSERT_TRUE(ParsePauseSeconds("1d", &seconds).ok());
  EXPECT_EQ(seconds, 86400);
  ASSERT_TRUE(ParsePauseSeconds("1s", &seconds).ok());
  EXPECT_EQ(seconds, 1);
  EXPECT_THAT(ParsePauseSeconds("", &seconds).message(), HasSubstr("--for is required"));
  EXPECT_THAT(ParsePauseSeconds("24h1s", &seconds).message(), HasSubstr("outside 1s..24h"));
  EXPECT_THAT(ParsePauseSeconds("2.5m", &seconds).message(), HasSubstr("is not a duration"));
}

TEST(ProfileText, PauseEndsAreUtcTimesWithTheDateOnlyOnAnotherDay) {
  ProfilingState state{true, kUntil, "", "paused"};
  EXPECT_EQ(
      RenderPaused(state, "n1", std::chrono::seconds(600), kNow),
      "Profiling paused on n1 until 14:32:05 UTC (10m); DCGM: paused. Run `gpuscope profile-resume` when "
      "done.\n");
  EXPECT_EQ(RenderPaused(state, "n1", std::chrono::seconds(86400), kUntil - 86400),
            "Profiling paused on n1 until 2026-12-02 14:32:05 UTC (24h); DCGM: paused. Run `gpuscope "
            "profile-resume` when done.\n");
  state.reason = "ncu by alice";
  EXPECT_EQ(
      RenderStatus(state, "n1", kNow - 12),
      "Profiling on n1: paused until 14:32:05 UTC (10m12s left), reason: ncu by alice; DCGM: paused.\n");
  EXPECT_EQ(RenderStatus(ProfilingState{}, "n1", kNow),
            "Profiling on n1: not paused (the agent collects profiling metrics).\n");
}

TEST(ProfileText, LoopbackAgentsGoByThisHostsName) {
  const std::string own = ShortHostName().empty() ? "127.0.0.1" : ShortHostName();
  EXPECT_EQ(AgentHostForPeople("http://127.0.0.1:9400"), own);
  EXPECT_EQ(AgentHostForPeople("http://localhost:9400"), ShortHostName().empty() ? "localhost" : own);
  EXPECT_EQ(AgentHostForPeople("https://gpu-node-03.example.org:9400"), "gpu-node-03.example.org");
  EXPECT_EQ(AgentHostForPeople("http://[fd00::3]:9400"), "fd00::3");
}

TEST(ProfileCommands, TakeTheAgentFlagsAndOnlyPauseAndResumeReadAToken) {
  for (const Command& command : {ProfilePauseCommand(), ProfileResumeCommand(), ProfileStatusCommand()}) {
    CommandLine line;
    EXPECT_TRUE(ParseCommandLine({"--agent.url=http://n1:9400", "--format=json"}, command.flags, &line).ok())
        << command.name;
    EXPECT_EQ(line.flags.at("agent.timeout"), "10") << command.name;
  }
  CommandLine line;
  ASSERT_TRUE(ParseCommandLine({}, ProfilePauseCommand().flags, &line).ok());
  EXPECT_EQ(line.flags.at("agent.token-file"), "/etc/gpuscope/profiling.token");
  EXPECT_EQ(line.flags.at("agent.url"), "http://127.0.0.1:9400");
  const Command status = ProfileStatusCommand();
  EXPECT_EQ(status.flags.end(), std::find_if(status.flags.begin(), status.flags.end(),
                                             [](const FlagSpec& f) { return f.name == "agent.token-file"; }));
}

}  // namespace
}  // namespace gpuscope
