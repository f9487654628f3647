#include "src/agent/agent.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "src/agent/agent_node.h"
#include "src/agent/events.h"
#include "src/agent/metrics_docs.h"
#include "src/agent/registry.h"
#include "src/attribution/kubernetes/kubelet_pod_source.h"
#include "src/attribution/kubernetes/pod_metadata_source.h"
#include "src/attribution/mapping_dir_source.h"
#include "src/attribution/slurm_job_source.h"
#include "src/attribution/sources_collector.h"
#include "src/core/log.h"
#include "src/core/scheduler.h"
#include "src/node/node_state.h"
#include "src/platform/systemd.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"

namespace gpuscope {
namespace {

int PrintMetricsDocs(const AgentConfig& config) {
  std::vector<CollectorDocs> docs;
  NodeState node;
  CollectorContext context{&node, nullptr, nullptr, nullptr};
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

// Waits until every collector has completed its first cycle (what /readyz answers) or `limit` passed,
// whichever is first; returns a termination signal that came meanwhile, else 0.
int WaitUntilReady(const AgentNode& node, std::chrono::milliseconds limit) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!node.Health().ready && std::chrono::steady_clock::now() < deadline) {
    const timespec poll{0, 20 * 1000 * 1000};
    const int received = sigtimedwait(&signals, nullptr, &poll);
    if (received > 0) return received;
  }
  return 0;
}

}  // namespace

int RunAgent(const AgentConfig& config) {
  SetLogLevel(config.log_level);
  SetJournalWriter(WriteJournalRecord);
  if (config.log_format == "auto") {
    SetLogFormat(StderrIsJournal() ? "journal" : "logfmt");
  } else {
    SetLogFormat(config.log_format);
  }
  if (config.print_metrics_docs) return PrintMetricsDocs(config);

  Status status;
  std::unique_ptr<AgentNode> node = AgentNode::Create(config, AgentNodeSeams{}, &status);
  if (!node) {
    Log(LogLevel::kError, "cannot start", {{"error", status.ToString()}});
    return 1;
  }
  if (config.once) return node->RunOnce();

  // The daemon: the metrics endpoint, the collectors' threads and the event path until a termination
  // signal, then everything stopped in reverse order. 0 after a clean shutdown, 1 when it cannot start.
  status = node->Start();
  if (!status.ok()) {
    Log(LogLevel::kError, "cannot start", {{"error", status.ToString()}});
    return 1;
  }
  // Type=notify: `systemctl start` returns, and units ordered after this one start, once every collector
  // has run once, so that the first scrape gets a whole snapshot; after 30 s (NVML's first call can be
  // slow on a node without the persistence daemon) READY=1 is sent anyway, as /metrics already serves.
  int received = WaitUntilReady(*node, std::chrono::seconds(30));
  if (received == 0) {
    const std::string serving = "serving " + config.telemetry_path + " on " + config.listen_address;
    NotifyServiceManager(
        "READY=1\nSTATUS=" + serving +
        (node->Health().ready ? "" : " (a collector has not completed its first cycle yet)"));
    received = WaitForTerminationSignal();
  }
  NotifyServiceManager("STOPPING=1\nSTATUS=shutting down");
  Log(LogLevel::kInfo, "shutting down", {{"signal", received == SIGTERM ? "SIGTERM" : "SIGINT"}});
  node->Stop();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace gpuscope
