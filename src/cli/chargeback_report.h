// The pure parts of `gpuscope chargeback`: the cost table (costs.yaml: a price per GPU-hour and
// optionally per kWh for each GPU model, like the seeds' dim_gpu_sku_cost), the time range (--from/--to
// or --month), the plan that splits a long range into windows and range queries Prometheus answers
// within its limits, the PromQL of each figure per window, the sums over the windows' answers, and the
// table people read. No I/O: chargeback_command.cc runs the queries; the unit tests feed answers.
//
// How the figures are computed (docs/cli/chargeback.md says it for people): the range is cut into
// windows of --step seconds (the last one shorter); each window's figure is a *_over_time() over the raw
// samples of that window alone, so every sample counts once and windows add up exactly.
// - GPU-hours allocated: the samples of gpuscope_gpu_allocation_info (whole GPUs, GPU_I_ID="") times the
//   scrape interval. Counting samples, not presence at step boundaries, makes scrape gaps and agent
//   restarts count as the time they cover (nothing), and jobs that start or end inside a window count
//   from their first to their last sample: the tolerance is one scrape interval per allocation.
// - GPU-hours used: the utilisation (SM active where the GPU reports it, else GPU utilisation / 100, as
//   the mixin's gpuscope:gpu_utilisation:ratio) of each allocated sample times the scrape interval.
// - Idle GPU-hours: the samples where the agent's gpuscope_gpu_allocated_idle was 1 (below 5 % for 60 s)
//   times the scrape interval.
// - Energy: per series of gpuscope_gpu_energy_joules_total (its hpc_job label says whose it is) and
//   window, the counter's last value in the window minus its last value in the hour before it (exact
//   across scrape gaps and agent restarts up to an hour, which do not reset it); increase() where the
//   series starts in the window or the counter reset (a driver reload): a reset counts as a new start.
// - Cost: per GPU model, GPU-hours allocated x price per GPU-hour + kWh x price per kWh.
// Slurm groups (account, user, partition) come from gpuscope_job_info joined on hpc_job per window.
// Kubernetes namespaces come from gpuscope_k8s_gpu_allocation_info joined to the GPU's series scrape by
// scrape (a subquery at the scrape interval; a time-sliced GPU's n replicas get 1/n each); a GPU's energy
// in a window is split among its pods by the scrapes each held it.
//
// Thread-safety: value types and free functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/cli/prometheus_client.h"
#include "src/cli/table_output.h"
#include "src/cli/text_format.h"
#include "src/core/status.h"

namespace gpuscope {

// The price of one GPU model.
struct GpuPrice {
  double per_gpu_hour = 0;
  std::optional<double> per_kwh;  // energy priced on top when set
};

// costs.yaml:
//   currency: USD            # optional, shown in the cost column's name
//   models:
//     "NVIDIA H100 80GB HBM3": {gpu_hour: 4.0, kwh: 0.15}
//     "NVIDIA A100-SXM4-80GB": {gpu_hour: 2.0}
// Model names are the GPU's modelName label (its NVML name).
struct CostTable {
  std::string currency = "USD";
  std::map<std::string, GpuPrice> models;

  const GpuPrice* Find(const std::string& model) const;  // nullptr when the model is not listed
};

// Parses costs.yaml text. InvalidArgument naming the model and field for YAML that does not parse, a
// missing or empty `models` map, a price that is not a number or is negative, an unknown key.
Status ParseCostTable(std::string_view yaml, CostTable* table);

enum class ChargebackGrouping { kAccount, kUser, kPartition, kNamespace };

// "account", "user", "partition", "namespace". InvalidArgument naming the accepted values otherwise.
Status ParseGrouping(std::string_view text, ChargebackGrouping* grouping);
std::string GroupingLabel(ChargebackGrouping grouping);

// One range query: windows ending at first_end, first_end + step, ..., last_end, each `step` seconds
// long (a single window when first_end == last_end).
struct WindowBatch {
  double first_end = 0;
  double last_end = 0;
  double step = 0;

  int Windows() const;
};

// Cuts `range` into windows of `step` seconds (the last one shorter when the range is not a multiple)
// and those into batches of at most `max_windows` windows (Prometheus refuses range queries of more than
// 11,000 points, and a batch bounds the samples one query loads).
std::vector<WindowBatch> PlanWindows(const TimeRange& range, double step, int max_windows);

// The four figures each window yields, per (group, modelName).
enum class ChargebackFigure { kAllocatedSamples, kUsedSamples, kIdleSamples, kEnergyJoules };
inline constexpr ChargebackFigure kChargebackFigures[] = {
    ChargebackFigure::kAllocatedSamples, ChargebackFigure::kUsedSamples, ChargebackFigure::kIdleSamples,
    ChargebackFigure::kEnergyJoules};

// The PromQL of `figure` over windows of `window_seconds`, summed by the grouping's label and modelName.
// `scrape_interval` is the resolution of the namespace grouping's subqueries. `selector` is extra label
// matchers for every raw series (e.g. `cluster="a"`), empty for none.
std::string ChargebackQuery(ChargebackFigure figure, ChargebackGrouping grouping, double window_seconds,
                            double scrape_interval, const std::string& selector);

// Sums over windows, per (group, modelName).
struct UsageSums {
  double allocated_samples = 0;
  double used_samples = 0;  // utilisation-weighted samples
  double idle_samples = 0;
  double energy_joules = 0;
};
using Usage = std::map<std::pair<std::string, std::string>, UsageSums>;

// Adds every point of a query's answer to `usage` under (series' `group_label`, modelName).
void AddAnswer(ChargebackFigure figure, const std::string& group_label, const std::vector<PromSeries>& answer,
               Usage* usage);

// One group's line of the report.
struct ChargebackRow {
  std::string group;  // "" when the job's info never named one
  double gpu_hours_allocated = 0;
  double gpu_hours_used = 0;
  double gpu_hours_idle = 0;
  double energy_kwh = 0;
  std::optional<double> cost;                // absent when a model of the group has no price
  std::vector<std::string> models;           // the GPU models its hours ran on
  std::vector<std::string> unpriced_models;  // models missing from the cost table
  std::optional<double> sacct_gpu_hours;     // Slurm's accounting, with --sacct
};

// Rows per group (sorted by cost, then GPU-hours, descending), with samples x `scrape_interval` as hours.
std::vector<ChargebackRow> SummariseUsage(const Usage& usage, double scrape_interval, const CostTable& costs);

// The report as a table: group, GPU-hours allocated/used/idle, kWh, cost, models, and (with_sacct) Slurm's
// GPU-hours and the difference in percent. Text output ends with a total line; CSV and JSON hold only
// the groups' rows.
Table ChargebackTable(const std::vector<ChargebackRow>& rows, ChargebackGrouping grouping,
                      const std::string& currency, bool with_sacct, bool with_total);

// Slurm's GPU-hours per group from `sacct -X -n -P -a --format=JobID,Account,User,Partition,AllocTRES,
// Start,End`: gres/gpu count x the part of [Start, End] inside `range` (a job still running, End
// "Unknown", runs until range.to). Lines without GPUs count nothing. InvalidArgument for a line that
// does not have seven fields.
Status ParseSacctGpuHours(std::string_view sacct_output, ChargebackGrouping grouping, const TimeRange& range,
                          std::map<std::string, double>* gpu_hours);

}  // namespace gpuscope
