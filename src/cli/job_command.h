// `gpuscope job <jobid>`: finds the job's life (first and last sample of its gpuscope_job_info within
// the lookback), queries the agent's per-GPU series over it and prints the JobReport.
//
// Thread-safety: one call at a time (it uses the caller's PrometheusClient).
#pragma once

#include <string>

#include "src/cli/command.h"
#include "src/cli/job_report.h"
#include "src/cli/prometheus_client.h"
#include "src/core/status.h"

namespace gpuscope {

struct JobQueryOptions {
  double now = 0;                       // Unix seconds: end of the search
  double lookback_seconds = 7 * 86400;  // how far back to look for the job
  int max_points = 10000;               // bound on the life-finding range query (sets its step)
};

// The PromQL label matcher value for a job id (quotes and backslashes escaped).
std::string JobSelector(const std::string& job);

// Fills *facts for `job`. NotFound when Prometheus has no gpuscope_job_info for it in the lookback.
Status CollectJobFacts(PrometheusClient& prometheus, const std::string& job, const JobQueryOptions& options,
                       JobFacts* facts);

// The `gpuscope job` entry of the command table.
Command JobCommand();

}  // namespace gpuscope
