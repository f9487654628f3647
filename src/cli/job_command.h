// `gpuscope job <jobid>` (or `--pod NAMESPACE/NAME`): finds the job's life (first and last sample of its
// gpuscope_job_info, or of the pod's gpuscope_k8s_gpu_allocation_info, within the lookback), queries the
// agent's per-GPU series, event counters and training telemetry over it, asks Slurm accounting when
// reachable, and prints the JobReport.
//
// Thread-safety: one call at a time (it uses the caller's PrometheusClient).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/cli/command.h"
#include "src/cli/job_report.h"
#include "src/cli/prometheus_client.h"
#include "src/core/status.h"

namespace gpuscope {

struct JobQueryOptions {
  double now = 0;                       // Unix seconds: end of the search
  double lookback_seconds = 7 * 86400;  // how far back to look for the job
  int max_points = 10000;               // bound on each range query (sets its step)
};

// A job id names a Slurm job ("4104") or, as "pod/NAMESPACE/NAME", a Kubernetes pod.
bool IsPodTarget(const std::string& job);

// The PromQL label matchers for a job id (quotes and backslashes escaped): hpc_job="4104", or
// namespace="ns",pod="name" for "pod/ns/name".
std::string JobSelector(const std::string& job);

// How a counter rose during a job, from a range query's points over its life (from `start`, every `step`
// seconds): the first point that showed a rise and the rises summed (a drop is a counter reset: the new
// value counts). A series there at the start (its first point within a step of it) counts from its first
// value; one that appeared later, created by its first increment, from 0.
struct CounterRise {
  double first_time = -1;  // -1: it never rose
  double count = 0;
};
CounterRise CounterRiseDuring(const std::vector<std::pair<double, double>>& points, double start,
                              double step);

// Fills *facts for `job` (the accounting left unqueried). NotFound when Prometheus has no info series for
// it in the lookback.
Status CollectJobFacts(PrometheusClient& prometheus, const std::string& job, const JobQueryOptions& options,
                       JobFacts* facts);

// The `gpuscope job` entry of the command table.
Command JobCommand();

}  // namespace gpuscope
