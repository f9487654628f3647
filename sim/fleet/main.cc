// gpuscope-fleet: many simulated GPU nodes in one process, each running the agent's own collection,
// attribution, exposition and push code (sim/fleet/fleet_runner.h), for scale tests, benchmarks and a
// larger demo. Wiring only.
//
//   gpuscope-fleet --nodes 100 --scenario sim/scenarios/h100-training.yaml --file-sd /tmp/fleet.json
//   gpuscope-fleet --fleet sim/fleets/mixed.yaml --file-sd targets.json -- --sink.remote-write.url=http://...
//
// Flags of its own are listed by --help; every other flag (or any after "--") is an agent flag applied to
// every node (gpuscope-agent --help lists them). Without agent flags a node runs the GPU collector every
// 15 s and the attribution from its mapping directory; other collectors read this machine, not the node,
// and are off unless enabled with their agent flags.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/fleet/fleet_description.h"
#include "sim/fleet/fleet_runner.h"
#include "src/agent/config.h"
#include "src/agent/registry.h"
#include "src/core/duration.h"
#include "src/core/log.h"
#include "src/core/version.h"
#include "src/platform/file.h"
#include "src/platform/process_limits.h"

namespace {

using gpuscope::Status;
using gpuscope::fleet::FleetOptions;

constexpr const char* kUsage =
    "Usage: gpuscope-fleet [flags] [agent flags] [-- agent flags]\n"
    "\n"
    "Runs many simulated GPU nodes in one process, each with the agent's own collection, attribution,\n"
    "/metrics endpoint and push sinks, on its own port.\n"
    "\n"
    "  --nodes N               how many nodes (default: the description's, else 10)\n"
    "  --fleet FILE            fleet description: scenarios by weight, start spread, job mix\n"
    "                          (sim/fleets/mixed.yaml; sim/fleet/fleet_description.h)\n"
    "  --scenario FILE         every node runs this scenario (instead of the description's groups)\n"
    "  --file-sd FILE          write the nodes' scrape targets as Prometheus file_sd JSON once all listen\n"
    "  --listen-address HOST   address the nodes listen on (default 127.0.0.1)\n"
    "  --base-port P           node i listens on P + i (default 0: an ephemeral port each)\n"
    "  --state-dir DIR         per-node mapping files, queues and checkpoints (default: a new directory\n"
    "                          under $TMPDIR, removed at exit)\n"
    "  --nvml.library PATH     the simulator library (default: libnvidia-ml.so.1 beside this program's\n"
    "                          folder, as in the build tree)\n"
    "  --speed N               simulated seconds per real second on every node (default: each scenario's)\n"
    "  --duration D            stop after D (default: run until SIGTERM or SIGINT)\n"
    "  --log.level LEVEL       debug, info, warn, error (default info)\n"
    "  --version, --help\n"
    "\n"
    "Any other flag is an agent flag (gpuscope-agent --help) applied to every node, e.g.\n"
    "--sink.remote-write.url=URL, --collector.gpu.interval=5s, --collector.host, --config FILE (the\n"
    "agent's YAML file, read once for all nodes). Per node the runner sets the Hostname, the listen\n"
    "address, the mapping directory, the device map, the state directory and, for pushes,\n"
    "instance=<hostname>.\n";

// The simulator beside the build tree's program: build/sim/fleet/gpuscope-fleet ->
// build/sim/libnvidia-ml.so.1.
std::string DefaultSimulatorPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "libnvidia-ml.so.1";
  return (self.parent_path().parent_path() / "libnvidia-ml.so.1").string();
}

struct Flags {
  int nodes = 0;  // 0: the description's
  std::string fleet_file;
  std::string scenario;
  std::string file_sd;
  std::string listen_host = "127.0.0.1";
  int base_port = 0;
  std::string state_dir;
  std::string nvml_library;
  std::chrono::milliseconds duration{0};
  double speed = 0;
  std::string log_level = "info";
  std::vector<std::string> agent_flags;
  bool help = false;
  bool version = false;
};

Status ParseInt(const std::string& flag, const std::string& text, int min, int max, int* out) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max) {
    return Status::InvalidArgument(flag + ": expected an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got '" + text + "'");
  }
  *out = static_cast<int>(value);
  return Status::Ok();
}

Status ParseFlags(const std::vector<std::string>& args, Flags* flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      flags->agent_flags.insert(flags->agent_flags.end(), args.begin() + static_cast<long>(i) + 1,
                                args.end());
      break;
    }
    if (arg == "--help" || arg == "-h") {
      flags->help = true;
      continue;
    }
    if (arg == "--version") {
      flags->version = true;
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    static const char* kOwn[] = {"--nodes",          "--fleet",     "--scenario",  "--file-sd",
                                 "--listen-address", "--base-port", "--state-dir", "--nvml.library",
                                 "--duration",       "--log.level", "--speed"};
    bool own = false;
    for (const char* o : kOwn) own = own || name == o;
    if (!own) {
      flags->agent_flags.push_back(arg);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument(name + " needs a value");
      value = args[++i];
    }
    Status status = Status::Ok();
    if (name == "--nodes") {
      status = ParseInt(name, value, 1, gpuscope::fleet::kMaxNodes, &flags->nodes);
    } else if (name == "--fleet") {
      flags->fleet_file = value;
    } else if (name == "--scenario") {
      flags->scenario = value;
    } else if (name == "--file-sd") {
      flags->file_sd = value;
    } else if (name == "--listen-address") {
      flags->listen_host = value;
    } else if (name == "--base-port") {
      status = ParseInt(name, value, 0, 65535, &flags->base_port);
    } else if (name == "--state-dir") {
      flags->state_dir = value;
    } else if (name == "--nvml.library") {
      flags->nvml_library = value;
    } else if (name == "--duration") {
      status = gpuscope::ParseDurationSetting(value, name, &flags->duration);
    } else if (name == "--speed") {
      char* end = nullptr;
      flags->speed = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(flags->speed > 0) || flags->speed > 1e6) {
        status = Status::InvalidArgument("--speed: expected a positive number, got '" + value + "'");
      }
    } else if (name == "--log.level") {
      flags->log_level = value;
    }
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

// The agent settings every node shares: the fleet's defaults (GPU collector every 15 s, nothing that reads
// this machine), then the agent's own --config file if one is named, then the agent flags given.
Status NodeAgentConfig(const std::vector<std::string>& agent_flags, gpuscope::AgentConfig* config) {
  gpuscope::BuiltinCollectors().FillDefaults(config);
  for (auto& [name, collector] : config->collectors) collector.enabled = name == "gpu";
  config->collectors["gpu"].interval = std::chrono::seconds(15);
  Status status = gpuscope::LoadConfig(agent_flags, config);
  if (!status.ok()) return Status::InvalidArgument("agent settings: " + status.message());
  return Status::Ok();
}

Status BuildOptions(const Flags& flags, FleetOptions* options) {
  gpuscope::fleet::FleetDescription& d = options->description;
  if (!flags.fleet_file.empty()) {
    std::optional<std::string> text = gpuscope::ReadWholeFile(flags.fleet_file, 1 << 20);
    if (!text) return Status::InvalidArgument("cannot read the fleet description " + flags.fleet_file);
    Status status = gpuscope::fleet::ParseFleetDescription(*text, &d);
    if (!status.ok()) return Status::InvalidArgument(flags.fleet_file + ": " + status.message());
    gpuscope::fleet::ResolveScenarioPaths(std::filesystem::path(flags.fleet_file).parent_path().string(), &d);
  }
  if (!flags.scenario.empty()) d.groups = {{flags.scenario, 1}};
  if (d.groups.empty()) return Status::InvalidArgument("give --scenario FILE or --fleet FILE (see --help)");
  if (flags.nodes > 0) d.nodes = flags.nodes;
  options->nvml_library = flags.nvml_library.empty() ? DefaultSimulatorPath() : flags.nvml_library;
  options->state_dir = flags.state_dir;
  options->listen_host = flags.listen_host;
  options->base_port = flags.base_port;
  options->speed = flags.speed;
  if (flags.base_port > 0 && flags.base_port + d.nodes - 1 > 65535) {
    return Status::InvalidArgument("--base-port: " + std::to_string(d.nodes) + " nodes from port " +
                                   std::to_string(flags.base_port) + " run past 65535");
  }
  options->file_sd = flags.file_sd;
  return NodeAgentConfig(flags.agent_flags, &options->agent);
}

int WaitForSignal(const sigset_t& signals, std::chrono::milliseconds timeout) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec wait{
      static_cast<time_t>(s.count()),
      static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout - s).count())};
  return sigtimedwait(&signals, nullptr, &wait);
}

}  // namespace

int main(int argc, char** argv) {
  // Up to 1,000 nodes of about 17 threads each: smaller thread stacks than glibc's 8 MiB keep the address
  // space modest (the agent's threads use little stack).
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setstacksize(&attr, 512 * 1024);
    pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
  }
  gpuscope::RaiseOpenFileLimit();
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Flags flags;
  Status status = ParseFlags(std::vector<std::string>(argv + 1, argv + argc), &flags);
  if (flags.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (flags.version) {
    std::printf("gpuscope-fleet %s\n", std::string(gpuscope::Version()).c_str());
    return 0;
  }
  FleetOptions options;
  if (status.ok()) status = BuildOptions(flags, &options);
  if (!status.ok()) {
    std::fprintf(stderr, "gpuscope-fleet: %s\n", status.message().c_str());
    return 2;
  }
  gpuscope::SetLogLevel(flags.log_level);
  bool remove_state_dir = false;
  if (options.state_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpuscope-fleet.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "gpuscope-fleet: cannot create a state directory %s\n", pattern.c_str());
      return 1;
    }
    options.state_dir = pattern;
    remove_state_dir = true;
  }

  const auto start = std::chrono::steady_clock::now();
  const int nodes = options.description.nodes;
  const std::string state_dir = options.state_dir;
  std::unique_ptr<gpuscope::fleet::FleetRunner> fleet =
      gpuscope::fleet::FleetRunner::Start(std::move(options), &status);
  if (!fleet) {
    std::fprintf(stderr, "gpuscope-fleet: %s\n", status.message().c_str());
    if (remove_state_dir) {
      std::error_code ignored;
      std::filesystem::remove_all(state_dir, ignored);
    }
    return 1;
  }
  const double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  gpuscope::Log(gpuscope::LogLevel::kInfo, "gpuscope-fleet ready",
                {{"nodes", std::to_string(nodes)},
                 {"jobs", std::to_string(fleet->running_jobs())},
                 {"first", fleet->targets().front().address},
                 {"started_in_s", std::to_string(ready_s)}});

  auto next_report = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int received = 0;
  for (;;) {
    received = WaitForSignal(signals, std::chrono::seconds(1));
    if (received == SIGTERM || received == SIGINT) break;
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    if (flags.duration.count() > 0 && elapsed >= flags.duration) break;
    fleet->Advance(elapsed);
    if (now >= next_report) {
      next_report = now + std::chrono::minutes(1);
      gpuscope::Log(gpuscope::LogLevel::kInfo, "fleet",
                    {{"nodes", std::to_string(nodes)},
                     {"running_jobs", std::to_string(fleet->running_jobs())},
                     {"jobs_started", std::to_string(fleet->started_jobs())}});
    }
  }
  fleet->Stop();
  if (remove_state_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(state_dir, ignored);
  }
  gpuscope::Log(gpuscope::LogLevel::kInfo, "gpuscope-fleet stopped", {});
  return 0;
}
