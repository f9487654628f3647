// JobSeries: one job's per-GPU time series over its life, from Prometheus range queries, for the
// "Over time" section of `gpuscope job` and its --plot. Four panels: SM active (or GPU utilisation where
// no GPU reports SM active), memory used, power and temperature; one line per GPU (or MIG instance).
// The step bounds the points of a series (at most max_points); when a step is longer than a scrape
// interval could be (over 15 s), each point is the mean over its step (avg_over_time) instead of the
// sample in force at that instant, so a long job's chart still shows its whole life.
//
// Thread-safety: value types and free functions; CollectJobSeries() uses the caller's PrometheusClient.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/cli/job_report.h"
#include "src/cli/prometheus_client.h"
#include "src/cli/text_chart.h"
#include "src/core/status.h"

namespace gpuscope {

// One GPU's values at the panel's times (NaN where Prometheus had no value: a gap).
struct GpuLine {
  std::string label;  // "gpu-node-01/3", or "gpu-node-01/3:1" for a MIG instance
  std::vector<double> values;
};

struct SeriesPanel {
  std::string title;  // "SM active"
  std::string unit;   // "%"
  std::string expr;   // the PromQL that was run
  // Top of the value axis: 100 for percentages, the largest GPU memory for memory, else the largest
  // value seen.
  double scale_max = 0;
  std::vector<GpuLine> lines;  // sorted by host, then GPU index as a number
};

struct JobSeries {
  double start = 0;           // Unix seconds of the first point
  double step = 1;            // seconds between points
  std::vector<double> times;  // start, start + step, ... (the common time axis of every line)
  std::vector<SeriesPanel> panels;
};

// The step for a life from `first` to `last` with at most `max_points` points (>= 1 s, whole seconds).
double SeriesStep(double first, double last, int max_points);

// The query of one metric `metric` for the job selector `selector` ("{hpc_job=\"42\"}") at `step`:
// the bare selector, or avg_over_time over the step when the step is over 15 s; times `factor` if not 1.
std::string SeriesExpr(const std::string& metric, const std::string& selector, double step, double factor);

// Fills *series over facts.first_seen .. facts.last_seen for the series matching `selector`
// ("{hpc_job=\"42\"}"). A failed query is its Status (the message
// names the query); a panel no GPU reported is left out.
Status CollectJobSeries(PrometheusClient& prometheus, const std::string& selector, const JobFacts& facts,
                        int max_points, JobSeries* series);

// The "Over time" section: per panel a heading with its scale, per GPU a sparkline, a bar of its mean
// against the scale and the mean. `columns` bounds the line width. kPlain draws no chart: each GPU's
// min, mean, max and last value instead.
std::string RenderOverTime(const JobSeries& series, ChartStyle style, int columns);

}  // namespace gpuscope
