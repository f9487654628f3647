// The fleet as `gpuscope top` sees it at one refresh: every node with its GPUs, the chosen metric's value
// per GPU, the job (or Kubernetes pod) on each GPU, which GPUs are allocated and idle, and which GPUs and
// nodes have firing alerts. FetchFleetSnapshot fills it with a fixed number of PromQL queries whatever the
// fleet's size (kFleetQueriesPerRefresh: the metric across all GPUs, the jobs, the idle flags, ALERTS);
// the joining of their answers is pure and unit-tested with synthetic answers.
//
// Thread-safety: value types and free functions; FetchFleetSnapshot calls `query` from the caller's thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/cli/prometheus_client.h"
#include "src/core/status.h"

namespace gpuscope {

enum class TopMetric { kUtilization, kMemory, kPower, kTemperature };

struct TopMetricInfo {
  TopMetric metric;
  const char* name;    // "utilisation", shown in the header
  const char* flag;    // "util": the --metric value
  const char* unit;    // "%", "°C" is written "C" (ASCII terminals)
  const char* promql;  // one query: the value of every GPU
  double full_scale;   // the value shown as level 9 / the hottest colour
};

// The four metrics, in key order (u, m, p, t).
const std::vector<TopMetricInfo>& TopMetrics();
const TopMetricInfo& MetricInfo(TopMetric metric);
// "util", "memory", "power", "temperature" (and the names); false for anything else.
bool ParseTopMetric(const std::string& text, TopMetric* metric);

// Who holds a GPU: a Slurm job (gpuscope_job_info) or a Kubernetes pod (shown with its pod as the job and
// its namespace as the account).
struct TopJob {
  std::string id;  // Slurm job id, or the pod's name
  std::string user, account, partition, name;
};

struct TopGpu {
  std::string index;                // NVML index on the node, "0".."7"
  double value = -1;                // the metric; negative when the GPU has no sample
  std::string job;                  // key into TopNode::jobs; empty when not allocated
  bool allocated_idle = false;      // gpuscope_gpu_allocated_idle (or the pod's) is 1 (any MIG instance)
  std::vector<std::string> alerts;  // names of firing alerts on this GPU

  // A firing alert other than the mixin's allocated-idle ones (GpuAllocatedIdle, GpuPodAllocatedIdle),
  // which allocated_idle already shows.
  bool HasAlert() const;
};

struct TopNode {
  std::string hostname;
  std::string model;                   // modelName of its first GPU
  std::vector<TopGpu> gpus;            // by index as a number
  std::map<std::string, TopJob> jobs;  // by TopGpu::job
  std::vector<std::string> alerts;     // firing alerts on the node without a GPU (sorted, unique)

  int IdleGpus() const;
  bool HasAlert() const;     // on the node or any of its GPUs
  double MeanValue() const;  // over GPUs with a value; negative when none
};

struct FleetSnapshot {
  TopMetric metric = TopMetric::kUtilization;
  double time = 0;                        // Unix seconds the queries were evaluated at
  std::vector<TopNode> nodes;             // by hostname, numbers in names compared as numbers
  std::vector<std::string> fleet_alerts;  // firing alerts that name no node (e.g. a partition's)
};

inline constexpr int kFleetQueriesPerRefresh = 4;

// Runs one instant PromQL query; the real one wraps PrometheusClient::Query at a fixed time.
using PromQueryFunction = std::function<Status(const std::string& expr, std::vector<PromSeries>* series)>;

// The PromQL of the four queries, in the order FetchFleetSnapshot runs them.
std::vector<std::string> FleetQueries(TopMetric metric);

// Runs FleetQueries(metric) through `query` and joins the answers into *snapshot (its time is the
// caller's to set). The first failed query's Status is returned and *snapshot is then left unchanged.
Status FetchFleetSnapshot(const PromQueryFunction& query, TopMetric metric, FleetSnapshot* snapshot);

// Joins the four answers (as FleetQueries orders them) into a snapshot. Pure.
FleetSnapshot BuildFleetSnapshot(TopMetric metric, const std::vector<PromSeries>& values,
                                 const std::vector<PromSeries>& jobs, const std::vector<PromSeries>& idle,
                                 const std::vector<PromSeries>& alerts);

// a < b with runs of digits compared as numbers ("gpu-node-2" before "gpu-node-10").
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace gpuscope
