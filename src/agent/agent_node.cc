#include "src/agent/agent_node.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "src/agent/event_registry.h"
#include "src/agent/events.h"
#include "src/agent/profiling_api.h"
#include "src/agent/registry.h"
#include "src/attribution/kubernetes/kubelet_pod_source.h"
#include "src/attribution/kubernetes/pod_metadata_collector.h"
#include "src/attribution/kubernetes/pod_metadata_source.h"
#include "src/attribution/mapping_dir_source.h"
#include "src/attribution/slurm_job_source.h"
#include "src/attribution/sources_collector.h"
#include "src/core/log.h"
#include "src/core/scheduler.h"
#include "src/core/snapshot.h"
#include "src/core/version.h"
#include "src/events/classifiers/xid_catalog.h"
#include "src/events/sources/posted_source.h"
#include "src/events/sources/security_source.h"
#include "src/node/node_state.h"
#include "src/parsers/text.h"
#include "src/platform/host.h"
#include "src/platform/memory.h"
#include "src/sinks/prometheus/exposition.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"

namespace gpuscope {
namespace {

// The node state every component shares (GPU inventory, JobTable, GPU processes, XID ledger), and the
// device map the Slurm prolog reads, written from the GPU inventory when attribution is set up.
NodeStateOptions NodeOptionsFor(const AgentConfig& config) {
  NodeStateOptions options;
  options.device_map_file = config.device_map_file;
  if (options.device_map_file.empty() && !config.hpc_job_mapping_dir.empty()) {
    options.device_map_file = "/run/gpuscope/devices";
  }
  options.xid_action = [](uint32_t xid) { return std::string(XidActionName(LookupXid(xid).action)); };
  return options;
}

// Falco's http_output (--events.falco-http): one JSON event per request, POSTed to the metrics listener.
constexpr char kFalcoPostPath[] = "/api/v1/falco";
constexpr size_t kMaxFalcoPostBytes = size_t{1} << 20;

// Queues a POSTed body's events for the falco source: 200 when all were queued, 400 when one does not
// parse (nothing queued), 503 when the queue is full (the lost ones are counted by it).
HttpHandler FalcoPostHandler(PostedEvents* queue, std::string procfs) {
  return [queue, procfs = std::move(procfs)](const HttpRequestHead& request, HttpResponse& response) {
    const Status status = PostFalcoEvents(request.body, procfs, queue);
    if (status.ok()) {
      response.body = "ok\n";
      return;
    }
    response.status = status.code() == Status::Code::kInvalidArgument ? 400 : 503;
    response.body = status.message() + "\n";
  };
}

// A profiling pause's change as a profiling_paused or profiling_resumed event.
PostedEvent ProfilingPauseEvent(const ProfilingPauseChange& change) {
  PostedEvent posted;
  char until[32];
  std::snprintf(until, sizeof(until), "%.0f", change.until_unix);
  posted.event.event_class = change.paused ? "profiling_paused" : "profiling_resumed";
  posted.event.severity = EventSeverity::kInfo;
  posted.event.summary = change.paused    ? "GPU profiling paused for a user's profiler: " + change.reason
                         : change.expired ? std::string("GPU profiling resumed: the pause expired")
                                          : std::string("GPU profiling resumed");
  posted.event.fields = {{"until_unix", until}, {"reason", change.reason}};
  if (!change.paused) posted.event.fields.emplace_back("expired", change.expired ? "true" : "false");
  posted.line = posted.event.summary;
  posted.origin = "profiling";
  return posted;
}

// The Kubernetes node this agent runs on: --kubernetes.node-name, else $NODE_NAME (the DaemonSet sets it
// from the downward API), else the host name.
std::string KubernetesNodeName(const AgentConfig& config) {
  if (!config.kubernetes_node_name.empty()) return config.kubernetes_node_name;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') return env;
  return HostName();
}

}  // namespace

std::vector<std::string> SplitPodLabels(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string_view name : text::Split(list, ',')) {
    if (!name.empty()) out.emplace_back(name);
  }
  return out;
}

// Declared in the order they are built; destroyed in reverse, so that every component outlives those
// that point at it.
struct AgentNode::Parts {
  AgentConfig config;
  AgentNodeSeams seams;
  NodeState node;
  // The training collector posts its hung ranks here, the event path's "training" source reads them.
  PostedEvents training_events;
  // The ebpf collector posts unexpected connections, foreign file opens and CUDA allocation failures here,
  // the event path's "ebpf" source reads them.
  PostedEvents ebpf_events;
  // The gpu collector's DCGM health incidents and the profiling pause's changes; the "gpu" source reads them.
  PostedEvents gpu_events;
  // Falco's http_output events (POST /api/v1/falco with --events.falco-http), the "falco" source reads them.
  PostedEvents falco_events;
  // The JobTable's and PodTable's long-running sources; any may be absent.
  std::unique_ptr<MappingDirSource> mapping;
  std::unique_ptr<SlurmJobSource> slurm;
  std::unique_ptr<KubeletPodSource> kubelet;
  std::unique_ptr<PodMetadataSource> pod_metadata;  // with --kubernetes
  SnapshotStore store;
  // Created before the collectors, which hand their spans to its traces sink. --once sends nothing.
  std::unique_ptr<EventPath> events;
  Scheduler scheduler{&store};
  std::unique_ptr<PrometheusEndpoint> endpoint;
  bool started = false;
  bool stopped = false;

  Parts(const AgentConfig& c, AgentNodeSeams s) : config(c), seams(std::move(s)), node(NodeOptionsFor(c)) {}

  void StartAttribution();
  void AddCollectors();
  void StopAttribution() {
    if (pod_metadata) pod_metadata->Stop();
    if (kubelet) kubelet->Stop();
    if (slurm) slurm->Stop();
    if (mapping) mapping->Stop();
  }
};

// Starts the configured attribution sources, before the first GPU cycle. With --once (or without a
// watcher) the mapping directory is scanned once, synchronously, instead of watched.
void AgentNode::Parts::StartAttribution() {
  if (!config.hpc_job_mapping_dir.empty()) {
    MappingDirOptions options;
    ParseMappingFormatOption(config.mapping_format, &options.format);
    options.gpus = &node.gpus();
    mapping = std::make_unique<MappingDirSource>(config.hpc_job_mapping_dir, &node.jobs(), options);
    Status status = Status::Ok();
    if (config.once || !seams.watch_mapping_dir) {
      mapping->ScanNow();  // --once must see the mappings in its only cycles
    } else {
      status = mapping->Start();
    }
    if (!status.ok()) {
      Log(LogLevel::kWarn, "mapping directory not watched",
          {{"dir", config.hpc_job_mapping_dir}, {"error", status.ToString()}});
    }
  }
  if (config.attribution_slurm) {
    SlurmJobSourceOptions options;
    options.scontrol_path = config.scontrol;
    options.interval = config.slurm_interval;
    options.timeout = config.slurm_timeout;
    slurm = std::make_unique<SlurmJobSource>(options, &node.jobs());
    slurm->Start();
  }
  if (config.kubernetes) {
    const std::string node_name = KubernetesNodeName(config);
    KubeletPodSourceOptions kubelet_options;
    kubelet_options.socket_path = config.kubernetes_pod_resources_socket;
    kubelet_options.interval = config.collectors.at("gpu").interval;  // pod labels follow within one cycle
    kubelet_options.gpus = &node.gpus();
    kubelet = std::make_unique<KubeletPodSource>(kubelet_options, &node.pods());
    if (config.once) {
      kubelet->QueryOnce();  // --once: the pods as the kubelet has them now, before both cycles
    } else {
      kubelet->Start();
    }
    Log(LogLevel::kInfo, "kubernetes: pod-resources source started",
        {{"socket", kubelet_options.socket_path}, {"node", node_name}});

    PodMetadataSourceOptions metadata;
    metadata.api_server =
        ResolveApiServerUrl(config.kubernetes_api_server, [](const char* name) { return std::getenv(name); });
    metadata.token_file = config.kubernetes_token_file;
    metadata.ca_file = config.kubernetes_ca_file;
    metadata.pod_labels = SplitPodLabels(config.kubernetes_pod_labels);
    metadata.node_name = node_name;
    pod_metadata = std::make_unique<PodMetadataSource>(metadata, &node.pods());
    Log(LogLevel::kInfo, "kubernetes: pod metadata",
        {{"api_server", metadata.api_server.empty() ? "off" : metadata.api_server}, {"node", node_name}});
    if (!config.once) pod_metadata->Start();
  }
}

// Adds the attribution sources' collector and every enabled built-in collector to the scheduler.
void AgentNode::Parts::AddCollectors() {
  if (mapping || slurm || kubelet) {
    scheduler.Add(std::make_unique<AttributionSourcesCollector>(mapping.get(), slurm.get(), kubelet.get()),
                  std::chrono::seconds(5));
  }
  if (pod_metadata) {
    scheduler.Add(std::make_unique<PodMetadataCollector>(pod_metadata.get(),
                                                         SplitPodLabels(config.kubernetes_pod_labels)),
                  std::chrono::seconds(5));
  }
  CollectorContext context{&node, events ? events->spans() : nullptr, &training_events, seams.nvml};
  context.ebpf_events = &ebpf_events;
  context.gpu_events = &gpu_events;
  for (const CollectorEntry& entry : BuiltinCollectors().entries()) {
    const CollectorConfig& settings = config.collectors.at(entry.name);
    if (!settings.enabled) continue;
    scheduler.Add(entry.create(config, context), settings.interval);
    if (seams.log_startup) {
      Log(LogLevel::kInfo, "collector enabled",
          {{"collector", entry.name}, {"interval_ms", std::to_string(settings.interval.count())}});
    }
  }
}

std::unique_ptr<AgentNode> AgentNode::Create(const AgentConfig& config, AgentNodeSeams seams,
                                             Status* status) {
  auto parts = std::make_unique<Parts>(config, std::move(seams));
  parts->StartAttribution();
  PostedEvents* gpu_events = &parts->gpu_events;
  parts->node.profiling_pause().SetObserver(
      [gpu_events](const ProfilingPauseChange& change) { gpu_events->Post(ProfilingPauseEvent(change)); });
  if (!config.once) {
    // Events: kernel log, job logs and the journal -> classifiers -> counters, XID ledger, push sinks.
    // Stays null when no event source or sink is configured.
    const std::string host = config.hostname.empty() ? HostName() : config.hostname;
    EventSourceContext detectors;
    detectors.training_events = &parts->training_events;
    detectors.ebpf_events = &parts->ebpf_events;
    detectors.falco_events = &parts->falco_events;
    detectors.gpu_events = &parts->gpu_events;
    Status created = EventPath::Create(config, host, &parts->node.xids(), &parts->node.jobs(),
                                       &parts->node.gpus(), &parts->store, &detectors, &parts->events);
    if (!created.ok()) {
      parts->StopAttribution();
      *status = Status::Internal("cannot set up the event path: " + created.ToString());
      return nullptr;
    }
  }
  // Each cycle replaces a snapshot's worth of small allocations; hand the freed pages back so resident
  // memory shows what the agent holds, not its high-water mark.
  if (parts->seams.release_freed_memory) parts->scheduler.SetAfterCycle(ReleaseFreedMemory);
  parts->AddCollectors();
  if (!config.once && parts->events) {
    parts->scheduler.Add(parts->events->MakeCollector(), std::chrono::seconds(5));
  }
  if (!config.once) {
    EndpointOptions options;
    options.listen_address = config.listen_address;
    options.telemetry_path = config.telemetry_path;
    options.web_config_file = config.web_config_file;
    options.max_connections = static_cast<size_t>(config.max_connections);
    Scheduler* scheduler = &parts->scheduler;
    Status endpoint_status;
    parts->endpoint = PrometheusEndpoint::Create(
        options, &parts->store, [scheduler] { return scheduler->Health(); }, endpoint_status);
    if (!parts->endpoint) {
      parts->StopAttribution();
      *status = Status::Internal("cannot set up the metrics endpoint: " + endpoint_status.ToString());
      return nullptr;
    }
    if (config.events_falco_http) {
      parts->endpoint->HandlePost(kFalcoPostPath, kMaxFalcoPostBytes,
                                  FalcoPostHandler(&parts->falco_events, config.procfs));
    }
    RegisterProfilingApi(parts->endpoint.get(), &parts->node.profiling_pause(), config.profiling_token_file);
    for (const std::string& warning : parts->endpoint->warnings()) {
      Log(LogLevel::kWarn, "web config", {{"warning", warning}});
    }
    parts->scheduler.Add(std::make_unique<EndpointSelfCollector>(parts->endpoint.get()),
                         std::chrono::seconds(5));
  }
  *status = Status::Ok();
  return std::unique_ptr<AgentNode>(new AgentNode(std::move(parts)));
}

AgentNode::AgentNode(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

AgentNode::~AgentNode() { Stop(); }

Status AgentNode::Start() {
  Parts& p = *parts_;
  p.scheduler.Start();
  p.started = true;
  if (p.events) {
    Status status = p.events->Start();
    if (!status.ok()) {
      Stop();
      return Status::Internal("cannot start the event path: " + status.ToString());
    }
  }
  Status status = p.endpoint->Start();
  if (!status.ok()) {
    Stop();
    return Status::Internal("cannot start the metrics endpoint: " + status.ToString());
  }
  if (p.seams.log_startup) {
    Log(LogLevel::kInfo, "gpuscope-agent listening",
        {{"version", Version()},
         {"address", p.config.listen_address},
         {"port", std::to_string(p.endpoint->port())},
         {"path", p.config.telemetry_path}});
  }
  return Status::Ok();
}

HealthReport AgentNode::Health() const { return parts_->scheduler.Health(); }

// Two cycles one interval apart (at most 1 s), so that values computed between two samples (GPM
// profiling metrics) are present too, then the exposition on stdout. 0 when healthy.
int AgentNode::RunOnce() {
  Parts& p = *parts_;
  p.scheduler.RunOnce();
  // Files named by a GPU or MIG UUID resolve through the GPU directory the first cycle published.
  if (p.mapping) p.mapping->ScanNow();
  std::this_thread::sleep_for(
      std::min<std::chrono::milliseconds>(p.config.collectors.at("gpu").interval, std::chrono::seconds(1)));
  p.scheduler.RunOnce();
  p.StopAttribution();
  std::string text = RenderSnapshot(*p.store.Current(), ExpositionFormat::kText004, nullptr);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return p.scheduler.Health().healthy ? 0 : 1;
}

void AgentNode::RescanMappings() {
  if (parts_->mapping) parts_->mapping->ScanNow();
}

void AgentNode::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  if (p.started) {
    if (p.endpoint) p.endpoint->Stop();
    if (p.events) p.events->Stop();
    p.scheduler.Stop();
  }
  p.StopAttribution();
}

int AgentNode::port() const { return parts_->endpoint ? parts_->endpoint->port() : 0; }

}  // namespace gpuscope
