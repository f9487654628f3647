#include "src/agent/profiling_api.h"

#include <openssl/crypto.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "src/core/log.h"
#include "src/node/profiling_pause.h"
#include "src/platform/file.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"

namespace gpuscope {
namespace {

constexpr char kPausePath[] = "/api/v1/profiling/pause";
constexpr char kResumePath[] = "/api/v1/profiling/resume";
constexpr char kStatePath[] = "/api/v1/profiling";
constexpr size_t kMaxBodyBytes = 4096;
// How long a pause or resume waits for DCGM to apply it before answering.
constexpr std::chrono::milliseconds kDcgmWait{3000};

void Json(HttpResponse& response, int status, const nlohmann::json& body) {
  response.status = status;
  response.content_type = "application/json";
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void Error(HttpResponse& response, int status, const std::string& message) {
  Json(response, status, {{"error", message}});
}

void State(HttpResponse& response, const ProfilingPause& pause) {
  const ProfilingPauseState state = pause.State();
  Json(response, 200,
       {{"paused", state.paused},
        {"until_unix", state.until_unix},
        {"reason", state.reason},
        {"dcgm", state.dcgm},
        {"pauses_total", state.pauses_total}});
}

// Whether the request may change the pause; fills the response when not.
bool Authorized(const HttpRequestHead& request, HttpResponse& response, bool basic_auth,
                const std::string& token_file) {
  if (basic_auth) return true;  // the server already checked the credentials
  std::string token = ReadWholeFile(token_file, 4096).value_or("");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  if (token.empty()) {
    Error(
        response, 403,
        "profiling control is off: the agent has no credentials (basic auth in --web.config.file, or a token "
        "in --profiling.token-file " +
            token_file + ")");
    return false;
  }
  const std::string_view header = request.Header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const bool match = header.starts_with(kBearer) && header.size() - kBearer.size() == token.size() &&
                     CRYPTO_memcmp(header.data() + kBearer.size(), token.data(), token.size()) == 0;
  if (!match) {
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    Error(response, 401, "a valid bearer token (the content of --profiling.token-file) is required");
    return false;
  }
  return true;
}

}  // namespace

Status ParseProfilingPauseRequest(std::string_view body, ProfilingPauseRequest* out) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return Status::InvalidArgument("the body must be a JSON object such as {\"duration_seconds\": 600}");
  }
  const auto duration = json.find("duration_seconds");
  if (duration == json.end() || !duration->is_number()) {
    return Status::InvalidArgument("duration_seconds (a number of seconds) is required");
  }
  const double seconds = duration->get<double>();
  if (!std::isfinite(seconds)) return Status::InvalidArgument("duration_seconds must be finite");
  out->seconds = seconds;
  out->reason.clear();
  if (const auto reason = json.find("reason"); reason != json.end() && !reason->is_null()) {
    if (!reason->is_string()) return Status::InvalidArgument("reason must be a string");
    out->reason = reason->get<std::string>();
  }
  return Status::Ok();
}

void RegisterProfilingApi(PrometheusEndpoint* endpoint, ProfilingPause* pause,
                          const std::string& token_file) {
  const bool basic_auth = endpoint->basic_auth();
  endpoint->HandlePost(
      kPausePath, kMaxBodyBytes,
      [pause, basic_auth, token_file](const HttpRequestHead& request, HttpResponse& response) {
        if (!Authorized(request, response, basic_auth, token_file)) return;
        ProfilingPauseRequest parsed;
        Status status = ParseProfilingPauseRequest(request.body, &parsed);
        if (status.ok()) status = pause->Pause(parsed.seconds, parsed.reason);
        if (!status.ok()) {
          Error(response, 400, status.message());
          return;
        }
        pause->WaitForDcgm(pause->State().generation, kDcgmWait);
        State(response, *pause);
      });
  endpoint->HandlePost(
      kResumePath, kMaxBodyBytes,
      [pause, basic_auth, token_file](const HttpRequestHead& request, HttpResponse& response) {
        if (!Authorized(request, response, basic_auth, token_file)) return;
        pause->Resume();
        pause->WaitForDcgm(pause->State().generation, kDcgmWait);
        State(response, *pause);
      });
  endpoint->Handle(kStatePath,
                   [pause](const HttpRequestHead&, HttpResponse& response) { State(response, *pause); });
}

}  // namespace gpuscope
