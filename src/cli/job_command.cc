#include "src/cli/job_command.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/cli/job_series.h"
#include "src/cli/plot.h"
#include "src/cli/prometheus_flags.h"
#include "src/cli/text_chart.h"

namespace gpuscope {
namespace {

// Identity of one GPU or MIG instance across the queries.
std::string GpuKey(const PromSeries& series) {
  std::string gpu = series.Label("gpu");
  if (!series.Label("GPU_I_ID").empty()) gpu += ":" + series.Label("GPU_I_ID");
  std::string host = series.Label("Hostname");
  if (host.empty()) host = series.Label("hostname");
  return host + "\n" + gpu;
}

}  // namespace

std::string JobSelector(const std::string& job) {
  std::string escaped;
  for (char c : job) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return "hpc_job=\"" + escaped + "\"";
}

Status CollectJobFacts(PrometheusClient& prometheus, const std::string& job, const JobQueryOptions& options,
                       JobFacts* facts) {
  *facts = JobFacts();
  facts->job = job;
  const std::string sel = "{" + JobSelector(job) + "}";
  const double start = options.now - options.lookback_seconds;
  const double step = std::max(1.0, std::ceil(options.lookback_seconds / options.max_points));

  std::vector<PromSeries> series;
  Status status = prometheus.QueryRange("gpuscope_job_info" + sel, start, options.now, step, &series);
  if (!status.ok()) return status;
  double first = 0, last = 0;
  bool found = false;
  for (const PromSeries& s : series) {
    for (const auto& [t, v] : s.points) {
      if (!found || t < first) first = t;
      if (!found || t > last) last = t;
      found = true;
    }
    if (!s.points.empty() && s.points.back().first >= last) {
      facts->user = s.Label("user");
      facts->account = s.Label("account");
      facts->partition = s.Label("partition");
      facts->job_name = s.Label("job_name");
    }
  }
  if (!found) {
    return Status::NotFound("no gpuscope_job_info for job " + job + " in Prometheus over the last " +
                            std::to_string(std::lround(options.lookback_seconds)) + " s (see --lookback)");
  }
  facts->first_seen = first;
  facts->last_seen = last;

  // Every figure is an instant query at the last sighting over a window covering the whole life.
  facts->window_seconds = std::ceil(last - first + step);
  const std::string window = "[" + std::to_string(std::lround(facts->window_seconds)) + "s]";
  std::map<std::string, JobGpuFigures> gpus;
  auto figure = [&](const std::string& expr, double scale, double JobGpuFigures::*field) -> Status {
    std::vector<PromSeries> answer;
    Status s = prometheus.Query(expr, last, &answer);
    if (!s.ok()) return s;
    for (const PromSeries& one : answer) {
      if (one.points.empty() || std::isnan(one.points.front().second)) continue;
      JobGpuFigures& g = gpus[GpuKey(one)];
      if (g.gpu.empty()) {
        g.hostname = one.Label("Hostname").empty() ? one.Label("hostname") : one.Label("Hostname");
        g.gpu = one.Label("gpu");
        if (!one.Label("GPU_I_ID").empty()) g.gpu += ":" + one.Label("GPU_I_ID");
        g.uuid = one.Label("UUID");
        g.model = one.Label("modelName");
      }
      g.*field = scale * one.points.front().second;
    }
    return Status::Ok();
  };
  const std::pair<std::string, std::pair<double, double JobGpuFigures::*>> queries[] = {
      {"avg_over_time(DCGM_FI_DEV_GPU_UTIL" + sel + window + ")", {1, &JobGpuFigures::utilization_percent}},
      {"avg_over_time(DCGM_FI_PROF_SM_ACTIVE" + sel + window + ")", {100, &JobGpuFigures::sm_active_percent}},
      {"max_over_time(DCGM_FI_DEV_FB_USED" + sel + window + ")", {1, &JobGpuFigures::memory_peak_mib}},
      {"last_over_time(DCGM_FI_DEV_FB_USED" + sel + window + ") + last_over_time(DCGM_FI_DEV_FB_FREE" + sel +
           window + ")",
       {1, &JobGpuFigures::memory_total_mib}},
      {"avg_over_time(DCGM_FI_DEV_POWER_USAGE" + sel + window + ")", {1, &JobGpuFigures::power_mean_watts}},
      {"increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + sel + window + ")",
       {0.001, &JobGpuFigures::energy_joules}},
      {"avg_over_time(gpuscope_gpu_allocated_idle" + sel + window + ")", {1, &JobGpuFigures::idle_fraction}},
      {"sum without (xid, action) (increase(gpuscope_xid_errors_total" + sel + window + "))",
       {1, &JobGpuFigures::xid_errors}},
      {"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + sel + window + ")", {1, &JobGpuFigures::ecc_dbe_errors}},
  };
  for (const auto& [expr, target] : queries) {
    status = figure(expr, target.first, target.second);
    if (!status.ok()) return status;
  }
  for (auto& [key, g] : gpus) facts->gpus.push_back(std::move(g));
  // By host, then GPU index as a number (GPU 10 after GPU 2), then MIG instance.
  auto order = [](const JobGpuFigures& g) {
    char* rest = nullptr;
    const long index = std::strtol(g.gpu.c_str(), &rest, 10);
    return std::make_tuple(g.hostname, index, std::string(rest));
  };
  std::sort(facts->gpus.begin(), facts->gpus.end(),
            [&](const JobGpuFigures& a, const JobGpuFigures& b) { return order(a) < order(b); });
  return Status::Ok();
}

namespace {

int RunJob(const CommandLine& line) {
  if (line.positional.size() != 1) {
    std::cerr << "gpuscope job: give exactly one job id (see gpuscope job --help)\n";
    return kExitUsage;
  }
  const std::string format = line.flags.at("format");
  if (format != "text" && format != "json") {
    std::cerr << "gpuscope job: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  JobQueryOptions query;
  if (!ParsePositiveSeconds(line.flags.at("lookback"), &query.lookback_seconds)) {
    std::cerr << "gpuscope job: --lookback must be a positive number of seconds\n";
    return kExitUsage;
  }
  query.now = UnixNow();
  std::unique_ptr<PrometheusClient> prometheus;
  Status status = MakePrometheusClient(line, &prometheus);
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitUsage;
  }
  JobFacts facts;
  status = CollectJobFacts(*prometheus, line.positional[0], query, &facts);
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitFailed;
  }
  const JobReport report = BuildJobReport(facts);
  std::cout << (format == "json" ? RenderJobReportJson(facts, report) : RenderJobReportText(facts, report));

  // The drawing: the "Over time" section under the text report on a terminal, and --plot's picture.
  const Terminal terminal = DetectTerminal(1, line.flags.at("no-color") == "true");
  const std::string plot = line.flags.at("plot");
  const bool over_time = format == "text" && terminal.is_tty;
  if (!over_time && plot.empty()) return kExitOk;
  PlotFormat plot_format;
  if (!plot.empty() && !(status = PlotFormatFromPath(plot, &plot_format)).ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitUsage;
  }
  JobSeries series;
  status = CollectJobSeries(*prometheus, "{" + JobSelector(facts.job) + "}", facts, 300, &series);
  if (status.ok() && over_time) std::cout << RenderOverTime(series, terminal.style, terminal.columns);
  if (status.ok() && !plot.empty()) {
    status = WritePlot(
        series, "Job " + facts.job + (facts.job_name.empty() ? "" : " (" + facts.job_name + ")"), plot);
  }
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

Command JobCommand() {
  return {"job",
          "job [flags] JOBID",
          "one job's GPUs over its life: use, memory, power, idle time, errors, grade",
          "Finds the job's life (first to last sample of its gpuscope_job_info) and reports per GPU its\n"
          "utilisation, memory peak against the GPU's memory, power and energy, the share of time it was\n"
          "allocated and idle, XID and ECC errors; then a grade (A busy .. F idle) and notes to act on.\n",
          WithPrometheusFlags({{"format", "text or json", "text"},
                               {"lookback", "seconds back from now to look for the job", "604800"},
                               {"plot", "also draw the time series into FILE.png or FILE.svg", ""},
                               {"no-color", "plain numbers, no charts (as NO_COLOR)", "false", false}}),
          RunJob};
}

}  // namespace gpuscope
