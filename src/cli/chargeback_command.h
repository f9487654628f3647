// `gpuscope chargeback`: GPU-hours allocated, used and idle, energy and cost per account, user,
// partition or Kubernetes namespace over a time range, from the agents' raw series in Prometheus (the
// PromQL and the sums are chargeback_report.h's), optionally beside Slurm's own accounting (sacct).
//
// Thread-safety: one call at a time (it uses the caller's PrometheusClient).
#pragma once

#include <string>

#include "src/cli/chargeback_report.h"
#include "src/cli/command.h"
#include "src/cli/prometheus_client.h"
#include "src/core/status.h"

namespace gpuscope {

struct ChargebackOptions {
  TimeRange range;
  ChargebackGrouping grouping = ChargebackGrouping::kAccount;
  double step = 3600;           // window length, seconds
  double scrape_interval = 30;  // the agents' scrape interval, seconds
  int windows_per_query = 168;  // a week of hourly windows per range query
  std::string selector;         // extra label matchers for every raw series
};

// Runs every figure's queries over the planned windows and sums their answers into *usage. The first
// failing query's Status (its message names the query) otherwise.
Status CollectChargebackUsage(PrometheusClient& prometheus, const ChargebackOptions& options, Usage* usage);

// The `gpuscope chargeback` entry of the command table.
Command ChargebackCommand();

}  // namespace gpuscope
