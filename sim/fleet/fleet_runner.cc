#include "sim/fleet/fleet_runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "sim/control.h"
#include "sim/fleet/job_mix.h"
#include "sim/prng.h"
#include "sim/scenario.h"
#include "src/agent/agent_node.h"
#include "src/core/json_string.h"
#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/platform/nvml/nvml_library.h"

namespace gpuscope::fleet {
namespace {

using NodeCreateFn = decltype(&gpuscopeSimNodeCreate);
using NodeDestroyFn = decltype(&gpuscopeSimNodeDestroy);

// A scenario file of the description, read and checked once for all the nodes that run it.
struct LoadedScenario {
  std::string text;
  unsigned gpus = 0;
  double start_offset = 0;
};

Status LoadScenario(const std::string& path, LoadedScenario* out) {
  std::optional<std::string> text = ReadWholeFile(path, 1 << 20);
  if (!text) return Status::InvalidArgument("cannot read scenario " + path);
  auto parsed = sim::ParseScenario(*text);
  if (auto* error = std::get_if<sim::ScenarioError>(&parsed)) {
    return Status::InvalidArgument(path + ": " + error->message);
  }
  const sim::Scenario& scenario = std::get<sim::Scenario>(parsed);
  if (scenario.proc_processes.enabled) {
    return Status::InvalidArgument(path +
                                   ": proc_processes scenarios watch this machine's real processes and "
                                   "cannot be shared by a fleet's nodes");
  }
  out->text = std::move(*text);
  out->gpus = static_cast<unsigned>(scenario.gpus.size());
  out->start_offset = scenario.start_offset;
  return Status::Ok();
}

}  // namespace

std::string RenderFileSd(const std::vector<FleetTarget>& targets) {
  std::string out = "[\n";
  for (size_t i = 0; i < targets.size(); ++i) {
    out += "  {\"targets\": [";
    AppendJsonString(out, targets[i].address);
    out += "], \"labels\": {\"node\": ";
    AppendJsonString(out, targets[i].hostname);
    out += "}}";
    out += i + 1 < targets.size() ? ",\n" : "\n";
  }
  out += "]\n";
  return out;
}

struct FleetRunner::State {
  FleetOptions options;
  void* library = nullptr;  // our own reference to the simulator library, for the node functions
  NodeCreateFn create_node = nullptr;
  NodeDestroyFn destroy_node = nullptr;
  std::vector<LoadedScenario> scenarios;

  struct Node {
    std::string hostname;
    std::string mapping_dir;
    unsigned gpus = 0;
    gpuscopeSimNode* sim = nullptr;
    std::unique_ptr<AgentNode> agent;
    std::string record;  // the mapping record file written now; empty: none
  };
  std::vector<Node> nodes;
  std::vector<FleetTarget> targets;
  std::unique_ptr<JobMix> jobs;
  bool stopped = false;

  Status CreateNode(int index, size_t group);
  void WriteRecords(const std::vector<int>& changed);
  void StopAll();
};

Status FleetRunner::State::CreateNode(int index, size_t group) {
  const FleetDescription& d = options.description;
  const LoadedScenario& scenario = scenarios[group];
  Node node;
  node.hostname = NodeHostname(d.hostname_prefix, index);
  node.gpus = scenario.gpus;
  const std::filesystem::path dir = std::filesystem::path(options.state_dir) / node.hostname;
  node.mapping_dir = (dir / "mapping").string();
  std::error_code error;
  std::filesystem::create_directories(node.mapping_dir, error);
  if (!error) std::filesystem::create_directories(dir / "state", error);
  if (error) return Status::Unavailable("cannot create " + dir.string() + ": " + error.message());
  // A stale record of an earlier run would attribute this run's GPUs to an old job.
  for (const auto& entry : std::filesystem::directory_iterator(node.mapping_dir, error)) {
    std::filesystem::remove(entry.path(), error);
  }

  const uint64_t seed = static_cast<uint64_t>(d.seed) * 100003u + static_cast<uint64_t>(index) + 1;
  const double spread_s = std::chrono::duration<double>(d.start_offset_spread).count();
  const double offset = scenario.start_offset + spread_s * sim::Unit(seed, 0x6f6666, 0, 0);
  char why[512] = {};
  node.sim = create_node(scenario.text.c_str(), seed, offset, options.speed, why, sizeof(why));
  if (node.sim == nullptr) return Status::InvalidArgument(node.hostname + ": " + why);

  AgentNodeSeams seams;
  Status status =
      NvmlLibrary::OpenBound(options.nvml_library, sim::kSimBindThreadSymbol, node.sim, &seams.nvml);
  if (!status.ok()) {
    destroy_node(node.sim);
    return status;
  }
  seams.release_freed_memory = false;
  seams.watch_mapping_dir = false;
  seams.log_startup = false;

  AgentConfig config = options.agent;
  config.hostname = node.hostname;
  const int port = options.base_port > 0 ? options.base_port + index : 0;
  config.listen_address = options.listen_host + ":" + std::to_string(port);
  config.nvml_library = options.nvml_library;
  config.hpc_job_mapping_dir = node.mapping_dir;
  config.mapping_format = "auto";
  config.device_map_file = (dir / "devices").string();
  config.events_state_dir = (dir / "state").string();
  config.queue_dir.clear();
  // A push carries what a scrape would add; without a per-node instance the nodes' self-metrics would be
  // the same series from a thousand writers (a store refuses them as out of order). A given one is kept.
  bool has_instance = false;
  for (const std::string& label : config.remote_write_external_labels) {
    has_instance = has_instance || label.rfind("instance=", 0) == 0;
  }
  if (!has_instance) config.remote_write_external_labels.push_back("instance=" + node.hostname);
  node.agent = AgentNode::Create(config, std::move(seams), &status);
  if (!node.agent) {
    destroy_node(node.sim);
    return Status::Internal(node.hostname + ": " + status.ToString());
  }
  nodes.push_back(std::move(node));
  return Status::Ok();
}

void FleetRunner::State::WriteRecords(const std::vector<int>& changed) {
  for (int index : changed) {
    Node& node = nodes[static_cast<size_t>(index)];
    const FleetJob* job = jobs->JobOn(index);
    const std::string record = job == nullptr ? "" : "gpuscope-job." + std::to_string(job->id);
    if (record == node.record) continue;
    if (!node.record.empty()) {
      std::error_code ignored;
      std::filesystem::remove(node.mapping_dir + "/" + node.record, ignored);  // the epilog's part
    }
    node.record.clear();
    if (job != nullptr) {
      Status status = WriteFileAtomically(node.mapping_dir + "/" + record,
                                          JobRecord(*job, options.description.jobs.partition, node.gpus));
      if (status.ok()) {
        node.record = record;
      } else {
        Log(LogLevel::kWarn, "cannot write a job record",
            {{"node", node.hostname}, {"error", status.ToString()}});
      }
    }
    node.agent->RescanMappings();
  }
}

void FleetRunner::State::StopAll() {
  if (stopped) return;
  stopped = true;
  // Each agent's stop and destruction waits up to about a second for its XID and worker threads (the GPU
  // collector's destructor ends them): stop and destroy them side by side. The agents (and the NVML
  // bindings their collectors hold) go before the simulated nodes they call.
  constexpr size_t kStoppers = 64;
  std::vector<std::thread> stoppers;
  for (size_t t = 0; t < std::min(kStoppers, nodes.size()); ++t) {
    stoppers.emplace_back([this, t] {
      for (size_t i = t; i < nodes.size(); i += kStoppers) {
        if (nodes[i].agent) nodes[i].agent->Stop();
        nodes[i].agent.reset();
      }
    });
  }
  for (std::thread& stopper : stoppers) stopper.join();
  for (Node& node : nodes) {
    if (node.sim != nullptr) destroy_node(node.sim);
    node.sim = nullptr;
  }
  if (library != nullptr) dlclose(library);
  library = nullptr;
}

std::unique_ptr<FleetRunner> FleetRunner::Start(FleetOptions options, Status* status) {
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  State& s = *state;
  const FleetDescription& d = s.options.description;
  if (d.groups.empty()) {
    *status =
        Status::InvalidArgument("the fleet has no scenario (give --scenario or a description's groups)");
    return nullptr;
  }
  for (const FleetGroup& group : d.groups) {
    LoadedScenario loaded;
    *status = LoadScenario(group.scenario, &loaded);
    if (!status->ok()) return nullptr;
    s.scenarios.push_back(std::move(loaded));
  }
  s.library = dlopen(s.options.nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (s.library == nullptr) {
    const char* why = dlerror();
    *status =
        Status::Unavailable("cannot load the simulator " + s.options.nvml_library + ": " + (why ? why : "?"));
    return nullptr;
  }
  s.create_node = reinterpret_cast<NodeCreateFn>(dlsym(s.library, sim::kSimNodeCreateSymbol));
  s.destroy_node = reinterpret_cast<NodeDestroyFn>(dlsym(s.library, sim::kSimNodeDestroySymbol));
  if (s.create_node == nullptr || s.destroy_node == nullptr) {
    dlclose(s.library);
    s.library = nullptr;
    *status = Status::Unavailable(s.options.nvml_library + " is not the gpuscope simulator (no " +
                                  sim::kSimNodeCreateSymbol + ")");
    return nullptr;
  }

  const std::vector<size_t> groups = AssignGroups(d.groups, d.nodes);
  s.nodes.reserve(groups.size());
  for (int i = 0; i < d.nodes; ++i) {
    *status = s.CreateNode(i, groups[static_cast<size_t>(i)]);
    if (!status->ok()) {
      s.StopAll();
      return nullptr;
    }
  }
  // Jobs before the first GPU cycle, as on a cluster where the agent starts on a busy node.
  s.jobs = std::make_unique<JobMix>(d.jobs, d.nodes, static_cast<uint64_t>(d.seed));
  s.WriteRecords(s.jobs->Advance(std::chrono::milliseconds(0)));
  // Agents on a real cluster do not start in the same millisecond: spreading the starts over one GPU
  // interval (at most 15 s) spreads every later cycle too, and the first cycles' catch-up of each node's
  // simulated clock does not pile onto one moment.
  const auto gpu = s.options.agent.collectors.find("gpu");
  const auto spread = std::min<std::chrono::milliseconds>(
      gpu != s.options.agent.collectors.end() ? gpu->second.interval : std::chrono::seconds(15),
      std::chrono::seconds(15));
  const auto step =
      s.nodes.empty() ? std::chrono::milliseconds(0) : spread / static_cast<long>(s.nodes.size());
  for (State::Node& node : s.nodes) {
    if (&node != &s.nodes.front()) std::this_thread::sleep_for(step);
    *status = node.agent->Start();
    if (!status->ok()) {
      *status = Status::Internal(node.hostname + ": " + status->ToString());
      s.StopAll();
      return nullptr;
    }
    s.targets.push_back({node.hostname, s.options.listen_host + ":" + std::to_string(node.agent->port())});
  }
  if (!s.options.file_sd.empty()) {
    *status = WriteFileAtomically(s.options.file_sd, RenderFileSd(s.targets));
    if (!status->ok()) {
      s.StopAll();
      return nullptr;
    }
  }
  *status = Status::Ok();
  return std::unique_ptr<FleetRunner>(new FleetRunner(std::move(state)));
}

FleetRunner::FleetRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}

FleetRunner::~FleetRunner() { Stop(); }

size_t FleetRunner::Advance(std::chrono::milliseconds since_start) {
  const std::vector<int> changed = state_->jobs->Advance(since_start);
  state_->WriteRecords(changed);
  return changed.size();
}

void FleetRunner::Stop() { state_->StopAll(); }

const std::vector<FleetTarget>& FleetRunner::targets() const { return state_->targets; }
size_t FleetRunner::running_jobs() const { return state_->jobs->running(); }
uint64_t FleetRunner::started_jobs() const { return state_->jobs->started(); }

}  // namespace gpuscope::fleet
