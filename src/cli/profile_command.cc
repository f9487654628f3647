#include "src/cli/profile_command.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/prometheus_flags.h"
#include "src/cli/text_format.h"
#include "src/core/duration.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"
#include "src/platform/host.h"
#include "src/platform/http_client.h"

namespace gpuscope {
namespace {

constexpr std::string_view kStatePath = "/api/v1/profiling";
constexpr std::string_view kPausePath = "/api/v1/profiling/pause";
constexpr std::string_view kResumePath = "/api/v1/profiling/resume";
constexpr size_t kMaxErrorTextBytes = 300;

// What the command sends the agent to prove who it is, and what people are told about it on a 401.
struct Credentials {
  std::string username;  // basic auth when not empty
  std::string password;
  std::string token;  // bearer token when not empty
  std::string note;   // why no token is sent (the default token file unreadable), for a 401's message
};

// The agent's URL without a trailing "/" or "/metrics" (people paste the scrape URL).
std::string AgentBase(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  const std::string suffix = "/metrics";
  if (url.size() > suffix.size() && url.compare(url.size() - suffix.size(), suffix.size(), suffix) == 0) {
    url.resize(url.size() - suffix.size());
  }
  return url;
}

// Why the token file at `path` gives no token.
std::string UnreadableTokenNote(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return path + " does not exist";
  return "cannot read " + path + " (run as root, or as a user allowed to read it)";
}

Status CredentialsFromFlags(const CommandLine& line, bool send_token, Credentials* out) {
  const auto& f = line.flags;
  out->username = f.at("agent.username");
  if (!f.at("agent.password-file").empty()) {
    if (out->username.empty()) return Status::InvalidArgument("--agent.password-file needs --agent.username");
    Status s = ReadSecretFile("agent.password-file", f.at("agent.password-file"), &out->password);
    if (!s.ok()) return s;
  }
  // Basic auth replaces the token: the agent takes one or the other (basic auth when its web config has
  // users). The status endpoint is open: no token is read for it.
  if (!out->username.empty() || !send_token) return Status::Ok();
  const std::string path = f.at("agent.token-file");
  if (path.empty()) {
    out->note = "--agent.token-file is empty";
    return Status::Ok();
  }
  std::optional<std::string> text = ReadWholeFile(path, 64 << 10);
  if (!text) {
    // The default file is often root's only: go on without it and say so if the agent asks for it. A
    // file named on the command line must be readable.
    if (path != kDefaultProfilingTokenFile)
      return Status::InvalidArgument("--agent.token-file: cannot read " + path);
    out->note = UnreadableTokenNote(path);
    return Status::Ok();
  }
  // Trailing newlines and spaces are not part of the token (the agent drops them too).
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r' || text->back() == ' '))
    text->pop_back();
  out->token = *text;
  if (out->token.empty()) out->note = path + " is empty";
  return Status::Ok();
}

// The agent's own words from an error answer: its JSON "error" when it has one, else the body's first
// line; shortened.
std::string ErrorText(std::string_view body) {
  std::string out;
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_string()) {
    out = doc["error"].get<std::string>();
  } else {
    body = text::Trim(body);
    out = std::string(body.substr(0, body.find('\n')));
  }
  if (out.size() > kMaxErrorTextBytes) out = out.substr(0, kMaxErrorTextBytes) + "...";
  return out;
}

// The message for an answer other than 200.
std::string RefusalMessage(int status, std::string_view body, const std::string& base, std::string_view path,
                           const Credentials& sent) {
  const std::string agent = "the agent at " + base;
  const std::string said = ErrorText(body);
  const std::string detail = said.empty() ? "" : " (" + said + ")";
  switch (status) {
    case 401: {
      std::string why;
      if (!sent.username.empty()) {
        why = "user " + sent.username +
              " or its password (--agent.password-file) is not one of its web config's users";
      } else if (!sent.token.empty()) {
        why = "the token sent is not the one in its --profiling.token-file";
      } else {
        why = "no credentials were sent: " + sent.note;
      }
      return agent + " refused the credentials (HTTP 401" + (said.empty() ? "" : ": " + said) + "): " + why +
             ". With basic_auth_users in its --web.config.file, give --agent.username and "
             "--agent.password-file; "
             "otherwise --agent.token-file must hold the token of its --profiling.token-file";
    }
    case 403:
      return agent +
             " refused: no credentials configured; set --profiling.token-file on the agent (a file holding a "
             "secret token, default " +
             std::string(kDefaultProfilingTokenFile) + ") or basic_auth_users in its --web.config.file" +
             (said.empty() ? "" : ". The agent says: " + said);
    case 404:
    case 405:
      return agent + " has no profiling control (HTTP " + std::to_string(status) + " for " +
             std::string(path) + "): it is older than this gpuscope, or --agent.url names something else" +
             detail;
    case 400:
      return agent + " rejected the request (HTTP 400)" + (said.empty() ? "" : ": " + said);
    default:
      return "HTTP " + std::to_string(status) + " from " + base + std::string(path) + detail;
  }
}

// One request to the agent: POST `body` to `path`, or GET it when `body` is empty. Ok with the parsed
// state (and the raw JSON) on 200; otherwise Unavailable with the message for people.
Status CallAgent(const std::string& base, std::string_view path, const std::string& body,
                 double timeout_seconds, const std::string& ca_file, const Credentials& credentials,
                 ProfilingState* state, nlohmann::json* raw) {
  HttpClientOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeout_seconds * 1000));
  options.ca_file = ca_file;
  options.username = credentials.username;
  options.password = credentials.password;
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"}};
  if (!credentials.token.empty()) headers.emplace_back("Authorization", "Bearer " + credentials.token);
  const bool post = !body.empty();
  std::unique_ptr<HttpClient> client;
  Status status = HttpClient::Create(post ? base + std::string(path) : base, options, &client);
  if (!status.ok()) return status;  // a bad URL or CA file (InvalidArgument), or no libcurl
  HttpClientResponse response;
  if (post) {
    headers.emplace_back("Content-Type", "application/json");
    status = client->Post(body, headers, &response);
  } else {
    status = client->Get(path, headers, &response);
  }
  if (!status.ok()) {
    if (status.code() == Status::Code::kInvalidArgument) {
      return Status::InvalidArgument("the token or password cannot be sent: " + status.message());
    }
    return Status::Unavailable("cannot reach the agent at " + base + ": " + status.message() +
                               " (is gpuscope-agent running there? see --agent.url)");
  }
  if (response.status != 200) {
    return Status::Unavailable(RefusalMessage(response.status, response.body, base, path, credentials));
  }
  status = ParseProfilingState(response.body, state);
  if (!status.ok()) {
    return Status::Unavailable("the agent at " + base + " answered " + std::string(path) +
                               " with something that is not a profiling state: " + status.message());
  }
  *raw = nlohmann::json::parse(response.body);
  return Status::Ok();
}

std::string UserName() {
  for (const char* name : {"SUDO_USER", "USER", "LOGNAME"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "";
}

// "14:32:05 UTC", with the date when it is not `now`'s day.
std::string WhenForPeople(double until, double now) {
  const bool same_day = FormatUtc(until, "%Y-%m-%d") == FormatUtc(now, "%Y-%m-%d");
  return FormatUtc(until, same_day ? "%H:%M:%S UTC" : "%Y-%m-%d %H:%M:%S UTC");
}

std::string DcgmPart(const ProfilingState& state) {
  return state.dcgm.empty() ? "" : "; DCGM: " + state.dcgm;
}

}  // namespace

Status ParseProfilingState(std::string_view body, ProfilingState* state) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object()) return Status::InvalidArgument("not a JSON object");
  if (!doc.contains("paused") || !doc["paused"].is_boolean()) {
    return Status::InvalidArgument("no boolean \"paused\"");
  }
  ProfilingState out;
  out.paused = doc["paused"].get<bool>();
  if (doc.contains("until_unix") && !doc["until_unix"].is_null()) {
    if (!doc["until_unix"].is_number()) return Status::InvalidArgument("\"until_unix\" is not a number");
    out.until_unix = doc["until_unix"].get<double>();
  }
  for (auto [key, field] : {std::pair{"reason", &out.reason}, std::pair{"dcgm", &out.dcgm}}) {
    if (!doc.contains(key) || doc[key].is_null()) continue;
    if (!doc[key].is_string()) return Status::InvalidArgument("\"" + std::string(key) + "\" is not a string");
    *field = doc[key].get<std::string>();
  }
  *state = std::move(out);
  return Status::Ok();
}

Status ParsePauseSeconds(std::string_view text, int64_t* seconds) {
  if (text.empty()) return Status::InvalidArgument("--for is required: how long to pause, e.g. --for 30m");
  std::optional<std::chrono::milliseconds> parsed = ParseDuration(text);
  if (!parsed) {
    return Status::InvalidArgument("--for: '" + std::string(text) +
                                   "' is not a duration (e.g. 90s, 10m, 1h30m)");
  }
  if (parsed->count() % 1000 != 0)
    return Status::InvalidArgument("--for: give whole seconds (not '" + std::string(text) + "')");
  const int64_t s = parsed->count() / 1000;
  if (s < 1 || s > kMaxProfilingPauseSeconds) {
    return Status::InvalidArgument("--for: '" + std::string(text) +
                                   "' is outside 1s..24h (the agent's limits)");
  }
  *seconds = s;
  return Status::Ok();
}

bool DcgmAgrees(std::string_view dcgm, bool paused) {
  return dcgm.empty() || dcgm == (paused ? "paused" : "resumed") || dcgm == "not in use" ||
         dcgm.starts_with("not connected");
}

std::string AgentHostForPeople(std::string_view agent_url) {
  std::string_view rest = agent_url;
  const size_t scheme = rest.find("://");
  if (scheme != std::string_view::npos) rest.remove_prefix(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {
    host = rest.substr(
        1, rest.find(']') == std::string_view::npos ? std::string_view::npos : rest.find(']') - 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 || host.empty()) {
    std::string own = ShortHostName();
    if (!own.empty()) return own;
  }
  return host.empty() ? std::string(agent_url) : std::string(host);
}

std::string RenderPaused(const ProfilingState& state, const std::string& host, std::chrono::seconds asked,
                         double now) {
  std::string out = "Profiling paused on " + host;
  if (state.until_unix > 0) out += " until " + WhenForPeople(state.until_unix, now);
  out +=
      " (" + FormatDuration(asked) + ")" + DcgmPart(state) + ". Run `gpuscope profile-resume` when done.\n";
  return out;
}

std::string RenderResumed(const ProfilingState& state, const std::string& host) {
  return "Profiling resumed on " + host + DcgmPart(state) + "; the agent collects profiling metrics again.\n";
}

std::string RenderStatus(const ProfilingState& state, const std::string& host, double now) {
  std::string out = "Profiling on " + host + ": ";
  if (!state.paused)
    return out + "not paused (the agent collects profiling metrics)" + DcgmPart(state) + ".\n";
  out += "paused";
  if (state.until_unix > 0) {
    const double left = std::max(0.0, std::ceil(state.until_unix - now));
    out += " until " + WhenForPeople(state.until_unix, now) + " (" +
           FormatDuration(std::chrono::seconds(static_cast<int64_t>(left))) + " left)";
  }
  if (!state.reason.empty()) out += ", reason: " + state.reason;
  return out + DcgmPart(state) + ".\n";
}

int RunProfileCommand(ProfileAction action, const CommandLine& line, std::ostream& out, std::ostream& err) {
  static constexpr const char* kNames[] = {"profile-pause", "profile-resume", "profile-status"};
  const std::string name = kNames[static_cast<int>(action)];
  auto usage = [&](const std::string& message) {
    err << "gpuscope " << name << ": " << message << "\n";
    return kExitUsage;
  };
  if (!line.positional.empty()) return usage("takes no arguments (got '" + line.positional[0] + "')");
  const auto& f = line.flags;
  double timeout = 0;
  if (!ParsePositiveSeconds(f.at("agent.timeout"), &timeout)) {
    return usage("--agent.timeout must be a positive number of seconds");
  }
  const std::string format = f.at("format");
  if (format != "text" && format != "json") return usage("--format must be text or json");

  std::string body;
  int64_t seconds = 0;
  if (action == ProfileAction::kPause) {
    Status status = ParsePauseSeconds(f.at("for"), &seconds);
    if (!status.ok()) return usage(status.message());
    std::string reason = f.at("reason");
    if (reason.empty() && !UserName().empty()) reason = "by " + UserName();
    if (reason.size() > kMaxProfilingReasonBytes) {
      return usage("--reason is longer than " + std::to_string(kMaxProfilingReasonBytes) + " bytes");
    }
    nlohmann::json request = {{"duration_seconds", seconds}};
    if (!reason.empty()) request["reason"] = reason;
    body = request.dump();
  } else if (action == ProfileAction::kResume) {
    body = "{}";
  }
  Credentials credentials;
  Status status = CredentialsFromFlags(line, action != ProfileAction::kStatus, &credentials);
  if (!status.ok()) return usage(status.message());

  const std::string base = AgentBase(f.at("agent.url"));
  const std::string_view path = action == ProfileAction::kPause    ? kPausePath
                                : action == ProfileAction::kResume ? kResumePath
                                                                   : kStatePath;
  ProfilingState state;
  nlohmann::json raw;
  status = CallAgent(base, path, body, timeout, f.at("agent.ca-file"), credentials, &state, &raw);
  if (status.code() == Status::Code::kInvalidArgument) return usage(status.message());
  if (!status.ok()) {
    err << "gpuscope " << name << ": " << status.message() << "\n";
    return kExitFailed;
  }

  const std::string host = AgentHostForPeople(base);
  const double now = UnixNow();
  if (format == "json") {
    raw["agent_url"] = base;
    raw["host"] = host;
    if (state.until_unix > 0) raw["until"] = FormatUtc(state.until_unix);
    out << raw.dump(2) << "\n";
  } else if (action == ProfileAction::kPause) {
    out << RenderPaused(state, host, std::chrono::seconds(seconds), now);
  } else if (action == ProfileAction::kResume) {
    out << RenderResumed(state, host);
  } else {
    out << RenderStatus(state, host, now);
  }
  if (action == ProfileAction::kPause && !state.paused) {
    err << "gpuscope " << name << ": the agent at " << base << " answered but is not paused\n";
    return kExitFailed;
  }
  if (action == ProfileAction::kResume && state.paused) {
    err << "gpuscope " << name << ": the agent at " << base << " answered but is still paused\n";
    return kExitFailed;
  }
  if (action == ProfileAction::kPause && !DcgmAgrees(state.dcgm, true)) {
    // The agent's own GPM sampling stopped, but DCGM may still hold the profiling counters: Nsight would
    // find them in use.
    err << "gpuscope " << name << ": warning: DCGM did not confirm the pause (" << state.dcgm
        << "); Nsight may find the counters in use. See `gpuscope profile-status` in a few seconds, or "
           "retry.\n";
    return kExitFailed;
  }
  if (action == ProfileAction::kResume && !DcgmAgrees(state.dcgm, false)) {
    err << "gpuscope " << name << ": warning: DCGM did not confirm the resume (" << state.dcgm
        << "); its profiling fields may stay missing. See `gpuscope profile-status` in a few seconds, or "
           "retry.\n";
    return kExitFailed;
  }
  return kExitOk;
}

namespace {

std::vector<FlagSpec> AgentFlags(std::vector<FlagSpec> own, bool credentials) {
  std::vector<FlagSpec> flags = {
      {"agent.url", "the node's agent (its metrics listener)", "http://127.0.0.1:9400"},
      {"agent.timeout", "seconds the agent may take to answer", "10"},
      {"agent.ca-file", "PEM CA bundle to verify an https:// agent with", ""},
      {"agent.username", "basic auth user name (when the agent's --web.config.file has basic_auth_users)",
       ""},
      {"agent.password-file", "file holding the basic auth password", ""},
  };
  if (credentials) {
    flags.push_back({"agent.token-file",
                     "file holding the bearer token (the agent's --profiling.token-file; empty: send none)",
                     std::string(kDefaultProfilingTokenFile)});
  }
  flags.push_back({"format", "text (one line) or json (the agent's answer)", "text"});
  flags.insert(flags.begin(), own.begin(), own.end());
  return flags;
}

}  // namespace

Command ProfilePauseCommand() {
  Command command;
  command.name = "profile-pause";
  command.usage = "profile-pause --for DURATION [--reason TEXT] [flags]";
  command.summary = "pause the local agent's GPU profiling (DCGM, GPM) so that Nsight can run";
  command.details =
      "Asks the node's gpuscope-agent to stop profiling the GPUs for DURATION (1s to 24h: 90s, 10m,\n"
      "1h30m), so that Nsight Compute or Nsight Systems can take the performance counters: the agent has\n"
      "DCGM pause its profiling module (when it uses DCGM) and stops its own NVML GPM sampling. The\n"
      "DCGM_FI_PROF_* metrics stop meanwhile but PCIe bytes (from NVML's PCIe counters); the dashboards\n"
      "mark the pause; every other metric goes on.\n"
      "The agent resumes by itself when DURATION is over; `gpuscope profile-resume` ends the pause\n"
      "earlier. Needs the agent's credentials: the token of its --profiling.token-file (often readable by\n"
      "root only: run with sudo), or basic auth when its --web.config.file has users. Exit 0 paused, 1\n"
      "refused or unreachable (or DCGM did not pause), 2 usage.\n";
  command.flags = AgentFlags(
      {
          {"for", "how long to pause (required): 1s to 24h", ""},
          {"reason",
           "why, up to 200 bytes: kept by the agent, in its event and in profile-status "
           "(default: \"by <your user name>\")",
           ""},
      },
      true);
  command.run = [](const CommandLine& line) {
    return RunProfileCommand(ProfileAction::kPause, line, std::cout, std::cerr);
  };
  return command;
}

Command ProfileResumeCommand() {
  Command command;
  command.name = "profile-resume";
  command.usage = "profile-resume [flags]";
  command.summary = "end the local agent's profiling pause now";
  command.details =
      "Asks the node's gpuscope-agent to end a pause of `gpuscope profile-pause` now: DCGM's profiling\n"
      "module and the agent's GPM sampling start again. A node that is not paused stays as it is. Same\n"
      "credentials as profile-pause. Exit 0 resumed, 1 refused or unreachable, 2 usage.\n";
  command.flags = AgentFlags({}, true);
  command.run = [](const CommandLine& line) {
    return RunProfileCommand(ProfileAction::kResume, line, std::cout, std::cerr);
  };
  return command;
}

Command ProfileStatusCommand() {
  Command command;
  command.name = "profile-status";
  command.usage = "profile-status [flags]";
  command.summary = "whether the local agent's profiling is paused, until when and why";
  command.details =
      "Reads the node's gpuscope-agent's profiling pause: paused or not, until when, the reason, and what\n"
      "DCGM answered. Needs no token. Exit 0 when the agent answered (paused or not), 1 unreachable, 2 "
      "usage.\n";
  command.flags = AgentFlags({}, false);
  command.run = [](const CommandLine& line) {
    return RunProfileCommand(ProfileAction::kStatus, line, std::cout, std::cerr);
  };
  return command;
}

}  // namespace gpuscope
