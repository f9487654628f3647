// gpuscope: the command-line reader of what the agents exported, through Prometheus. Subcommands come
// from one table (kCommands); each names its flags, its help and the function that runs it. Exit codes:
// 0 done, 1 the query failed or found nothing, 2 a usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/command_line.h"
#include "src/cli/job_command.h"
#include "src/cli/job_report.h"
#include "src/cli/prometheus_client.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Flags every subcommand that reads Prometheus takes (`check`, reading the local agent, will not).
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

bool ParsePositiveSeconds(const std::string& text, double* seconds) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0)) return false;
  *seconds = value;
  return true;
}

// Reads a secret file, less trailing newlines.
Status ReadSecret(const std::string& flag, const std::string& path, std::string* secret) {
  std::optional<std::string> text = ReadWholeFile(path, 64 << 10);
  if (!text) return Status::InvalidArgument("--" + flag + ": cannot read " + path);
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
  *secret = *text;
  return Status::Ok();
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
    Status s =
        ReadSecret("prometheus.password-file", line.flags.at("prometheus.password-file"), &options.password);
    if (!s.ok()) return s;
  }
  if (!line.flags.at("prometheus.bearer-token-file").empty()) {
    if (!options.username.empty()) {
      return Status::InvalidArgument(
          "--prometheus.username and --prometheus.bearer-token-file exclude each other");
    }
    Status s = ReadSecret("prometheus.bearer-token-file", line.flags.at("prometheus.bearer-token-file"),
                          &options.bearer_token);
    if (!s.ok()) return s;
  }
  return PrometheusClient::Create(options, client);
}

std::vector<FlagSpec> WithPrometheusFlags(std::vector<FlagSpec> own) {
  own.insert(own.end(), PrometheusFlags().begin(), PrometheusFlags().end());
  return own;
}

struct Command {
  std::string name;
  std::string usage;    // after "gpuscope "
  std::string summary;  // one line for the command list
  std::string details;  // more help after the usage line
  std::vector<FlagSpec> flags;
  std::function<int(const CommandLine&)> run;
};

int RunJob(const CommandLine& line) {
  if (line.positional.size() != 1) {
    std::cerr << "gpuscope job: give exactly one job id (see gpuscope job --help)\n";
    return kExitUsage;
  }
  const std::string format = line.flags.at("format");
  if (format != "text" && format != "json") {
    std::cerr << "gpuscope job: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  JobQueryOptions query;
  if (!ParsePositiveSeconds(line.flags.at("lookback"), &query.lookback_seconds)) {
    std::cerr << "gpuscope job: --lookback must be a positive number of seconds\n";
    return kExitUsage;
  }
  query.now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::unique_ptr<PrometheusClient> prometheus;
  Status status = MakePrometheusClient(line, &prometheus);
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitUsage;
  }
  JobFacts facts;
  status = CollectJobFacts(*prometheus, line.positional[0], query, &facts);
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitFailed;
  }
  const JobReport report = BuildJobReport(facts);
  std::cout << (format == "json" ? RenderJobReportJson(facts, report) : RenderJobReportText(facts, report));
  return 0;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"job", "job [flags] JOBID",
       "one job's GPUs over its life: use, memory, power, idle time, errors, grade",
       "Finds the job's life (first to last sample of its gpuscope_job_info) and reports per GPU its\n"
       "utilisation, memory peak against the GPU's memory, power and energy, the share of time it was\n"
       "allocated and idle, XID and ECC errors; then a grade (A busy .. F idle) and notes to act on.\n",
       WithPrometheusFlags({{"format", "text or json", "text"},
                            {"lookback", "seconds back from now to look for the job", "604800"}}),
       RunJob},
  };
  return commands;
}

std::string MainHelp() {
  std::string out =
      "gpuscope: read the GPU fleet's metrics (as gpuscope-agent exports them) from Prometheus.\n\n"
      "Usage: gpuscope COMMAND [flags] [arguments]\n\nCommands:\n";
  for (const Command& c : Commands()) {
    std::string left = "  " + c.name;
    left.resize(12, ' ');
    out += left + c.summary + "\n";
  }
  out += "\nRun 'gpuscope COMMAND --help' for a command's flags.\n";
  return out;
}

int Main(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << MainHelp();
    return args.empty() ? kExitUsage : 0;
  }
  for (const Command& command : Commands()) {
    if (command.name != args[0]) continue;
    const std::vector<FlagSpec>& specs = command.flags;
    CommandLine line;
    Status status = ParseCommandLine(std::vector<std::string>(args.begin() + 1, args.end()), specs, &line);
    if (!status.ok()) {
      std::cerr << "gpuscope " << command.name << ": " << status.message() << "\n";
      return kExitUsage;
    }
    if (line.help) {
      std::cout << "Usage: gpuscope " << command.usage << "\n\n"
                << command.details << "\nFlags:\n"
                << FlagsHelp(specs);
      return 0;
    }
    return command.run(line);
  }
  std::cerr << "gpuscope: unknown command '" << args[0] << "'\n\n" << MainHelp();
  return kExitUsage;
}

}  // namespace
}  // namespace gpuscope

int main(int argc, char** argv) { return gpuscope::Main(std::vector<std::string>(argv + 1, argv + argc)); }
