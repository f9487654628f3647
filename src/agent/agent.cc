#include "src/agent/agent.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "src/agent/events.h"
#include "src/agent/metrics_docs.h"
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
#include "src/node/node_state.h"
#include "src/platform/host.h"
#include "src/platform/memory.h"
#include "src/sinks/prometheus/exposition.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"

namespace gpuscope {
namespace {

// --kubernetes.pod-labels "team,app.kubernetes.io/name" as its names.
std::vector<std::string> SplitPodLabels(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int PrintMetricsDocs(const AgentConfig& config) {
  std::vector<CollectorDocs> docs;
  NodeState node;
  CollectorContext context{&node};
  for (const CollectorEntry& entry : BuiltinCollectors().entries()) {
    docs.push_back({entry.name, entry.help, entry.create(config, context)->Describe()});
  }
  MappingDirSource mapping("/nonexistent", &node.jobs());
  SlurmJobSource slurm(SlurmJobSourceOptions{}, &node.jobs());
  KubeletPodSource kubelet(KubeletPodSourceOptions{}, &node.pods());
  docs.push_back({"attribution",
                  "The JobTable's and PodTable's sources: mapping-file watcher, Slurm queries, the kubelet's "
                  "pod-resources API (--kubernetes)",
                  AttributionSourcesCollector(&mapping, &slurm, &kubelet).Describe()});
  docs.push_back({"kubernetes_api",
                  "Pods holding this node's devices, with owner and labels from the Kubernetes API server "
                  "(--kubernetes)",
                  PodMetadataSource::Describe(SplitPodLabels(config.kubernetes_pod_labels))});
  docs.push_back({"events", EventPath::Help(), EventPath::Describe()});
  docs.push_back({"scheduler", "Self-metrics the scheduler emits for every collector",
                  Scheduler::SelfMetricDescriptions()});
  docs.push_back({"prometheus_endpoint", "The /metrics endpoint's own requests and renders (always on)",
                  PrometheusEndpoint::DescribeSelfMetrics()});
  std::string text = RenderMetricsDocs(docs);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

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

// The Kubernetes node this agent runs on: --kubernetes.node-name, else $NODE_NAME (the DaemonSet sets it
// from the downward API), else the host name.
std::string KubernetesNodeName(const AgentConfig& config) {
  if (!config.kubernetes_node_name.empty()) return config.kubernetes_node_name;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') return env;
  return HostName();
}

// The JobTable's and PodTable's long-running sources; any may be absent.
struct AttributionSources {
  std::unique_ptr<MappingDirSource> mapping;
  std::unique_ptr<SlurmJobSource> slurm;
  std::unique_ptr<KubeletPodSource> kubelet;
  std::unique_ptr<PodMetadataSource> pod_metadata;  // with --kubernetes

  void Stop() {
    if (pod_metadata) pod_metadata->Stop();
    if (kubelet) kubelet->Stop();
    if (slurm) slurm->Stop();
    if (mapping) mapping->Stop();
  }
};

// Starts the configured attribution sources, before the first GPU cycle. With --once the mapping
// directory is scanned once, synchronously, instead of watched.
AttributionSources StartAttribution(const AgentConfig& config, NodeState& node) {
  AttributionSources sources;
  if (!config.hpc_job_mapping_dir.empty()) {
    MappingDirOptions options;
    ParseMappingFormatOption(config.mapping_format, &options.format);
    options.gpus = &node.gpus();
    sources.mapping = std::make_unique<MappingDirSource>(config.hpc_job_mapping_dir, &node.jobs(), options);
    Status status = Status::Ok();
    if (config.once) {
      sources.mapping->ScanNow();  // one synchronous scan: --once must see the mappings in its only cycles
    } else {
      status = sources.mapping->Start();
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
    sources.slurm = std::make_unique<SlurmJobSource>(options, &node.jobs());
    sources.slurm->Start();
  }
  if (config.kubernetes) {
    const std::string node_name = KubernetesNodeName(config);
    KubeletPodSourceOptions kubelet;
    kubelet.socket_path = config.kubernetes_pod_resources_socket;
    kubelet.interval = config.collectors.at("gpu").interval;  // pod labels follow within one cycle
    kubelet.gpus = &node.gpus();
    sources.kubelet = std::make_unique<KubeletPodSource>(kubelet, &node.pods());
    if (config.once) {
      sources.kubelet->QueryOnce();  // --once: the pods as the kubelet has them now, before both cycles
    } else {
      sources.kubelet->Start();
    }
    Log(LogLevel::kInfo, "kubernetes: pod-resources source started",
        {{"socket", kubelet.socket_path}, {"node", node_name}});

    PodMetadataSourceOptions metadata;
    metadata.api_server =
        ResolveApiServerUrl(config.kubernetes_api_server, [](const char* name) { return std::getenv(name); });
    metadata.token_file = config.kubernetes_token_file;
    metadata.ca_file = config.kubernetes_ca_file;
    metadata.pod_labels = SplitPodLabels(config.kubernetes_pod_labels);
    metadata.node_name = node_name;
    sources.pod_metadata = std::make_unique<PodMetadataSource>(metadata, &node.pods());
    Log(LogLevel::kInfo, "kubernetes: pod metadata",
        {{"api_server", metadata.api_server.empty() ? "off" : metadata.api_server}, {"node", node_name}});
    if (!config.once) sources.pod_metadata->Start();
  }
  return sources;
}

// Adds the attribution sources' collector and every enabled built-in collector to `scheduler`; `spans`
// (may be null) takes the spans of the collectors that make them, `training_events` the training
// collector's hung ranks.
void AddCollectors(const AgentConfig& config, NodeState& node, PostedEvents& training_events,
                   const AttributionSources& attribution, SpanExporter* spans, Scheduler& scheduler) {
  if (attribution.mapping || attribution.slurm || attribution.kubelet) {
    scheduler.Add(std::make_unique<AttributionSourcesCollector>(
                      attribution.mapping.get(), attribution.slurm.get(), attribution.kubelet.get()),
                  std::chrono::seconds(5));
  }
  if (attribution.pod_metadata) {
    scheduler.Add(std::make_unique<PodMetadataCollector>(attribution.pod_metadata.get(),
                                                         SplitPodLabels(config.kubernetes_pod_labels)),
                  std::chrono::seconds(5));
  }
  CollectorContext context{&node, spans, &training_events};
  for (const CollectorEntry& entry : BuiltinCollectors().entries()) {
    const CollectorConfig& settings = config.collectors.at(entry.name);
    if (!settings.enabled) continue;
    scheduler.Add(entry.create(config, context), settings.interval);
    Log(LogLevel::kInfo, "collector enabled",
        {{"collector", entry.name}, {"interval_ms", std::to_string(settings.interval.count())}});
  }
}

// Events: kernel log, job logs and the journal -> classifiers -> counters, XID ledger, push sinks.
// `events` stays null when no event source is configured.
Status CreateEventPath(const AgentConfig& config, NodeState& node, const SnapshotStore& store,
                       PostedEvents& training_events, std::unique_ptr<EventPath>* events) {
  const std::string host = config.hostname.empty() ? HostName() : config.hostname;
  return EventPath::Create(config, host, &node.xids(), &node.jobs(), &node.gpus(), &store, &training_events,
                           events);
}

// --once: two cycles one interval apart (at most 1 s), so that values computed between two samples
// (GPM profiling metrics) are present too, then the exposition on stdout. 0 when healthy.
int RunCyclesOnce(const AgentConfig& config, Scheduler& scheduler, const SnapshotStore& store,
                  AttributionSources& attribution) {
  scheduler.RunOnce();
  // Files named by a GPU or MIG UUID resolve through the GPU directory the first cycle published.
  if (attribution.mapping) attribution.mapping->ScanNow();
  std::this_thread::sleep_for(
      std::min<std::chrono::milliseconds>(config.collectors.at("gpu").interval, std::chrono::seconds(1)));
  scheduler.RunOnce();
  attribution.Stop();
  std::string text = RenderSnapshot(*store.Current(), ExpositionFormat::kText004, nullptr);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return scheduler.Health().healthy ? 0 : 1;
}

// Blocks until SIGTERM or SIGINT (blocked in every thread by main) and returns it.
int WaitForTerminationSignal() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int received = 0;
  sigwait(&signals, &received);
  return received;
}

// The daemon: the metrics endpoint, the collectors' threads and the event path until a termination
// signal, then everything stopped in reverse order. 0 after a clean shutdown, 1 when it cannot start.
int Serve(const AgentConfig& config, SnapshotStore& store, Scheduler& scheduler, EventPath* events,
          AttributionSources& attribution) {
  EndpointOptions options;
  options.listen_address = config.listen_address;
  options.telemetry_path = config.telemetry_path;
  options.web_config_file = config.web_config_file;
  options.max_connections = static_cast<size_t>(config.max_connections);
  Status status;
  auto endpoint = PrometheusEndpoint::Create(
      options, &store, [&scheduler] { return scheduler.Health(); }, status);
  if (!endpoint) {
    Log(LogLevel::kError, "cannot set up the metrics endpoint", {{"error", status.ToString()}});
    return 1;
  }
  for (const std::string& warning : endpoint->warnings()) {
    Log(LogLevel::kWarn, "web config", {{"warning", warning}});
  }
  scheduler.Add(std::make_unique<EndpointSelfCollector>(endpoint.get()), std::chrono::seconds(5));
  scheduler.Start();
  if (events) {
    status = events->Start();
    if (!status.ok()) {
      Log(LogLevel::kError, "cannot start the event path", {{"error", status.ToString()}});
      scheduler.Stop();
      return 1;
    }
  }
  status = endpoint->Start();
  if (!status.ok()) {
    Log(LogLevel::kError, "cannot start the metrics endpoint", {{"error", status.ToString()}});
    if (events) events->Stop();
    scheduler.Stop();
    return 1;
  }
  Log(LogLevel::kInfo, "gpuscope-agent listening",
      {{"version", Version()},
       {"address", config.listen_address},
       {"port", std::to_string(endpoint->port())},
       {"path", config.telemetry_path}});

  int received = WaitForTerminationSignal();
  Log(LogLevel::kInfo, "shutting down", {{"signal", received == SIGTERM ? "SIGTERM" : "SIGINT"}});
  endpoint->Stop();
  if (events) events->Stop();
  scheduler.Stop();
  attribution.Stop();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace

int RunAgent(const AgentConfig& config) {
  SetLogLevel(config.log_level);
  SetLogFormat(config.log_format);
  if (config.print_metrics_docs) return PrintMetricsDocs(config);

  NodeState node(NodeOptionsFor(config));
  // The training collector posts its hung ranks here, the event path's "training" source reads them.
  PostedEvents training_events;
  // Declared before the scheduler: its attribution collector points at them.
  AttributionSources attribution = StartAttribution(config, node);
  SnapshotStore store;
  // Created before the collectors, which hand their spans to its traces sink, and declared before the
  // scheduler, so that it outlives them. --once sends nothing.
  std::unique_ptr<EventPath> events;
  if (!config.once) {
    Status status = CreateEventPath(config, node, store, training_events, &events);
    if (!status.ok()) {
      Log(LogLevel::kError, "cannot set up the event path", {{"error", status.ToString()}});
      return 1;
    }
  }
  Scheduler scheduler(&store);
  // Each cycle replaces a snapshot's worth of small allocations; hand the freed pages back so resident
  // memory shows what the agent holds, not its high-water mark.
  scheduler.SetAfterCycle(ReleaseFreedMemory);
  AddCollectors(config, node, training_events, attribution, events ? events->spans() : nullptr, scheduler);
  if (config.once) return RunCyclesOnce(config, scheduler, store, attribution);

  if (events) scheduler.Add(events->MakeCollector(), std::chrono::seconds(5));
  return Serve(config, store, scheduler, events.get(), attribution);
}

}  // namespace gpuscope
