#include "src/cli/job_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/cli/job_accounting.h"
#include "src/cli/job_series.h"
#include "src/cli/plot.h"
#include "src/cli/prometheus_flags.h"
#include "src/cli/text_chart.h"

namespace gpuscope {
namespace {

constexpr std::string_view kPodPrefix = "pod/";
// Node-level event classes of gpuscope_events_total a job report names (XIDs come per GPU and job from
// gpuscope_xid_errors_total; ECC and NVLink errors from their own counters).
constexpr const char* kNodeEventClasses =
    "nccl|nccl_watchdog|oom|cuda_oom|cuda|ib_completion|sxid|slurm_interruption|training_hang";

std::string Escape(std::string_view value) {
  std::string escaped;
  for (char c : value) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string GpuOf(const PromSeries& series) {
  std::string gpu = series.Label("gpu");
  if (!series.Label("GPU_I_ID").empty()) gpu += ":" + series.Label("GPU_I_ID");
  return gpu;
}

// Identity of one GPU or MIG instance across the queries.
std::string GpuKey(const PromSeries& series) { return series.Host() + "\n" + GpuOf(series); }

// The smallest gap between consecutive samples: the scrape interval, as Prometheus saw it.
double SampleInterval(const std::vector<std::pair<double, double>>& points) {
  double gap = -1;
  for (size_t i = 1; i < points.size(); ++i) {
    const double d = points[i].first - points[i - 1].first;
    if (d > 0 && (gap < 0 || d < gap)) gap = d;
  }
  return gap;
}

}  // namespace

CounterRise CounterRiseDuring(const std::vector<std::pair<double, double>>& points, double start,
                              double step) {
  CounterRise out;
  if (points.empty()) return out;
  const bool there_at_start = points.front().first <= start + step;
  double previous = there_at_start ? points.front().second : 0;
  for (size_t i = there_at_start ? 1 : 0; i < points.size(); ++i) {
    const auto& [t, v] = points[i];
    const double delta = v >= previous ? v - previous : v;
    if (delta > 0 && out.first_time < 0) out.first_time = t;
    out.count += delta;
    previous = v;
  }
  return out;
}

bool IsPodTarget(const std::string& job) { return job.starts_with(kPodPrefix); }

std::string JobSelector(const std::string& job) {
  if (IsPodTarget(job)) {
    const std::string rest = job.substr(kPodPrefix.size());
    const size_t slash = rest.find('/');
    return "namespace=\"" + Escape(rest.substr(0, slash)) + "\",pod=\"" +
           Escape(slash == std::string::npos ? "" : rest.substr(slash + 1)) + "\"";
  }
  return "hpc_job=\"" + Escape(job) + "\"";
}

Status CollectJobFacts(PrometheusClient& prometheus, const std::string& job, const JobQueryOptions& options,
                       JobFacts* facts) {
  *facts = JobFacts();
  facts->is_pod = IsPodTarget(job);
  facts->job = facts->is_pod ? job.substr(kPodPrefix.size()) : job;
  const std::string sel = "{" + JobSelector(job) + "}";
  const std::string info = facts->is_pod ? "gpuscope_k8s_gpu_allocation_info" : "gpuscope_job_info";
  const double step = std::max(1.0, std::ceil(options.lookback_seconds / options.max_points));

  // The life, on a step grid ending at now first: each point holds the latest sample of the step before it
  // (last_over_time: no sample falls between points, a job shorter than a step included), then to the
  // sample from the raw samples of the first and last points' steps.
  const double steps = std::ceil(options.lookback_seconds / step);
  const std::string step_window = "[" + std::to_string(std::lround(step)) + "s]";
  std::vector<PromSeries> series;
  Status status = prometheus.QueryRange("last_over_time(" + info + sel + step_window + ")",
                                        options.now - steps * step, options.now, step, &series);
  if (!status.ok()) return status;
  double first = 0, last = 0;
  bool found = false;
  for (const PromSeries& s : series) {
    for (const auto& [t, v] : s.points) {
      if (!found || t < first) first = t;
      if (!found || t > last) last = t;
      found = true;
    }
    if (!facts->is_pod && !s.points.empty() && s.points.back().first >= last) {
      facts->user = s.Label("user");
      facts->account = s.Label("account");
      facts->partition = s.Label("partition");
      facts->job_name = s.Label("job_name");
    }
  }
  if (!found) {
    return Status::NotFound("no " + info + " for " + (facts->is_pod ? "pod " : "job ") + facts->job +
                            " in Prometheus over the last " +
                            std::to_string(std::lround(options.lookback_seconds)) + " s (see --lookback)");
  }
  // The last point's step holds the last sample; five minutes before it give the scrape interval.
  const std::string edge = "[" + std::to_string(std::lround(std::max(step, 300.0))) + "s]";
  double interval = -1;
  std::vector<PromSeries> raw;
  status = prometheus.Query(info + sel + edge, last, &raw);
  if (!status.ok()) return status;
  double raw_last = -1;
  for (const PromSeries& s : raw) {
    if (!s.points.empty()) raw_last = std::max(raw_last, s.points.back().first);
    const double gap = SampleInterval(s.points);
    if (gap > 0 && (interval < 0 || gap < interval)) interval = gap;
  }
  if (raw_last > 0) last = raw_last;
  status = prometheus.Query(info + sel + step_window, first, &raw);
  if (!status.ok()) return status;
  double raw_first = -1;
  for (const PromSeries& s : raw) {
    if (!s.points.empty() && (raw_first < 0 || s.points.front().first < raw_first))
      raw_first = s.points.front().first;
  }
  if (raw_first > 0) first = raw_first;
  facts->first_seen = first;
  facts->last_seen = last;
  if (facts->is_pod) {
    // A pod's team and owner (from the API server; absent without one).
    status = prometheus.Query("gpuscope_k8s_pod_info" + sel, last, &raw);
    if (!status.ok()) return status;
    for (const PromSeries& s : raw) {
      facts->account = s.Label("label_team");
      if (!s.Label("owner_kind").empty())
        facts->job_name = s.Label("owner_kind") + " " + s.Label("owner_name");
    }
  }
  // Running: its info series was scraped within two scrape intervals of now.
  facts->running = interval > 0 && options.now - last <= 2 * interval;

  // Every figure is an instant query at the last sighting over a window covering the whole life.
  facts->window_seconds = std::ceil(last - first) + 1;
  const std::string window = "[" + std::to_string(std::lround(facts->window_seconds)) + "s]";
  std::map<std::string, JobGpuFigures> gpus;
  std::map<std::string, std::string> instance_hosts;  // scrape target -> Hostname of the job's nodes
  auto gpu_of = [&](const PromSeries& one) -> JobGpuFigures& {
    JobGpuFigures& g = gpus[GpuKey(one)];
    if (g.gpu.empty()) {
      g.hostname = one.Host();
      g.gpu = GpuOf(one);
      g.uuid = one.Label("UUID");
      g.model = one.Label("modelName");
    }
    if (!one.Label("instance").empty()) instance_hosts[one.Label("instance")] = one.Host();
    return g;
  };
  auto each = [&](const std::string& expr, auto&& use) -> Status {
    std::vector<PromSeries> answer;
    Status s = prometheus.Query(expr, last, &answer);
    if (!s.ok()) return s;
    for (const PromSeries& one : answer) {
      if (one.points.empty() || std::isnan(one.points.front().second)) continue;
      use(one, one.points.front().second);
    }
    return Status::Ok();
  };
  auto set = [&](double scale, double JobGpuFigures::*field) {
    return [&gpu_of, scale, field](const PromSeries& one, double v) { gpu_of(one).*field = scale * v; };
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
  };
  for (const auto& [expr, target] : queries) {
    status = each(expr, set(target.first, target.second));
    if (!status.ok()) return status;
  }
  // The board's memory: what the driver reserves for itself counts (an 80 GB H100 is 81920 MiB, of which
  // used + free show 81559).
  status = each("last_over_time(DCGM_FI_DEV_FB_RESERVED" + sel + window + ")",
                [&](const PromSeries& one, double v) {
                  JobGpuFigures& g = gpu_of(one);
                  if (g.memory_total_mib >= 0) g.memory_total_mib += v;
                });
  if (!status.ok()) return status;
  status =
      each("avg_over_time(gpuscope_gpu_clock_event_active{" + JobSelector(job) +
               ",reason!~\"gpu_idle|applications_clocks_setting|display_clock_setting\"}" + window + ")",
           [&](const PromSeries& one, double v) { gpu_of(one).throttle_fraction[one.Label("reason")] = v; });
  if (!status.ok()) return status;

  status =
      each("increase(gpuscope_gpu_clock_event_seconds_total" + sel + window + ")",
           [&](const PromSeries& one, double v) { gpu_of(one).throttle_seconds[one.Label("reason")] = v; });
  if (!status.ok()) return status;

  // Idle share from the samples: SM active where the GPU reports it (a ratio), else utilisation (percent).
  std::map<std::string, std::pair<int, int>> idle_samples;  // GPU key -> (idle, all)
  std::set<std::string> with_sm_active;
  for (const auto& [metric, threshold] :
       {std::pair<std::string, double>{"DCGM_FI_PROF_SM_ACTIVE", kIdleBusyPercent / 100},
        std::pair<std::string, double>{"DCGM_FI_DEV_GPU_UTIL", kIdleBusyPercent}}) {
    status = prometheus.Query(std::string(metric).append(sel).append(window), last, &raw);
    if (!status.ok()) return status;
    for (const PromSeries& s : raw) {
      const std::string key = GpuKey(s);
      if (s.points.empty() || with_sm_active.count(key) > 0) continue;
      if (metric == "DCGM_FI_PROF_SM_ACTIVE") with_sm_active.insert(key);
      auto& [idle, all] = idle_samples[key];
      for (const auto& [t, v] : s.points) {
        idle += v < threshold ? 1 : 0;
        ++all;
      }
      gpu_of(s);
    }
  }
  for (const auto& [key, counts] : idle_samples) {
    if (counts.second > 0) gpus[key].idle_fraction = static_cast<double>(counts.first) / counts.second;
  }

  // Events: the first time each counter rose during the life, from range queries over it.
  const double event_step = std::max(1.0, std::ceil((last - first) / options.max_points));
  auto events = [&](const std::string& expr, auto&& use) -> Status {
    std::vector<PromSeries> answer;
    Status s = prometheus.QueryRange(expr, first, last, event_step, &answer);
    if (!s.ok()) return s;
    for (const PromSeries& one : answer) {
      const CounterRise rise = CounterRiseDuring(one.points, first, event_step);
      if (rise.first_time >= 0) use(one, rise);
    }
    return Status::Ok();
  };
  status = events("gpuscope_xid_errors_total" + sel, [&](const PromSeries& one, const CounterRise& rise) {
    JobEvent e{rise.first_time,     "xid",     one.Host(), GpuOf(one), one.Label("xid"),
               one.Label("action"), rise.count};
    if (e.gpu.empty()) e.gpu = one.Label("pci_bus_id");
    facts->events.push_back(e);
    if (gpus.count(GpuKey(one)) > 0) gpus[GpuKey(one)].xid_errors += rise.count;
  });
  if (!status.ok()) return status;
  status = events("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + sel, [&](const PromSeries& one, const CounterRise& rise) {
    facts->events.push_back({rise.first_time, "ecc_dbe", one.Host(), GpuOf(one), "", "", rise.count});
    if (gpus.count(GpuKey(one)) > 0) gpus[GpuKey(one)].ecc_dbe_errors += rise.count;
  });
  if (!status.ok()) return status;
  status = events(
      "sum without (link, counter) (gpuscope_nvlink_errors_total" + sel + ")",
      [&](const PromSeries& one, const CounterRise& rise) {
        facts->events.push_back({rise.first_time, "nvlink", one.Host(), GpuOf(one), "", "", rise.count});
        if (gpus.count(GpuKey(one)) > 0) gpus[GpuKey(one)].nvlink_errors += rise.count;
      });
  if (!status.ok()) return status;
  if (!instance_hosts.empty()) {
    // gpuscope_events_total is the node's (its lines carry no job label): those of the job's nodes.
    std::string instances;
    for (const auto& [instance, host] : instance_hosts) {
      instances += (instances.empty() ? "" : "|") + Escape(instance);
    }
    status =
        events("sum without (source, severity) (gpuscope_events_total{instance=~\"" + instances +
                   "\",class=~\"" + kNodeEventClasses + "\",severity!~\"debug|info\"})",
               [&](const PromSeries& one, const CounterRise& rise) {
                 facts->events.push_back({rise.first_time, one.Label("class"),
                                          instance_hosts[one.Label("instance")], "", "", "", rise.count});
               });
    if (!status.ok()) return status;
  }
  std::sort(facts->events.begin(), facts->events.end(), [](const JobEvent& a, const JobEvent& b) {
    return std::tie(a.time, a.hostname, a.gpu, a.kind, a.code) <
           std::tie(b.time, b.hostname, b.gpu, b.kind, b.code);
  });

  // Training ranks: each rank's latest median time per step outside collectives, from the raw samples: a
  // rank whose labels changed during the job (its GPU learnt later) has several series, and the one
  // sampled last is the rank's.
  status = prometheus.Query("gpuscope_training_compute_seconds_median" + sel + window, last, &raw);
  if (!status.ok()) return status;
  std::map<std::pair<std::string, std::string>, std::pair<double, JobRank>>
      latest;  // (host, rank) -> (t, rank)
  for (const PromSeries& s : raw) {
    if (s.points.empty()) continue;
    const auto& [t, v] = s.points.back();
    auto [it, added] = latest.try_emplace({s.Host(), s.Label("rank")});
    if (added || t > it->second.first)
      it->second = {t, JobRank{s.Label("rank"), s.Host(), s.Label("gpu"), v}};
  }
  for (auto& [key, rank] : latest) facts->ranks.push_back(std::move(rank.second));
  std::sort(facts->ranks.begin(), facts->ranks.end(), [](const JobRank& a, const JobRank& b) {
    return std::make_pair(std::atol(a.rank.c_str()), a.rank) <
           std::make_pair(std::atol(b.rank.c_str()), b.rank);
  });

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
  const std::string pod = line.flags.at("pod");
  if (line.positional.size() != (pod.empty() ? 1u : 0u)) {
    std::cerr << "gpuscope job: give exactly one job id, or --pod NAMESPACE/NAME (see gpuscope job --help)\n";
    return kExitUsage;
  }
  std::string job = pod.empty() ? line.positional[0] : std::string(kPodPrefix) + pod;
  if (IsPodTarget(job)) {
    const std::string name = job.substr(kPodPrefix.size());
    const size_t slash = name.find('/');
    if (slash == 0 || slash == std::string::npos || slash + 1 == name.size() ||
        name.find('/', slash + 1) != std::string::npos) {
      std::cerr
          << "gpuscope job: a pod is NAMESPACE/NAME (--pod research/nb-alice or pod/research/nb-alice), "
             "not '"
          << name << "'\n";
      return kExitUsage;
    }
  }
  const std::string format = line.flags.at("format");
  if (format != "text" && format != "json") {
    std::cerr << "gpuscope job: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  const std::string plot = line.flags.at("plot");
  if (!plot.empty()) {
    PlotFormat plot_format;
    if (Status bad = PlotFormatFromPath(plot, &plot_format); !bad.ok()) {
      std::cerr << "gpuscope job: " << bad.message() << "\n";
      return kExitUsage;
    }
  }
  const std::string sacct = line.flags.at("sacct");
  if (sacct.empty()) {
    std::cerr << "gpuscope job: --sacct must be auto, off or the sacct program to run\n";
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
  status = CollectJobFacts(*prometheus, job, query, &facts);
  if (!status.ok()) {
    std::cerr << "gpuscope job: " << status.message() << "\n";
    return kExitFailed;
  }
  if (!facts.is_pod && sacct != "off") {
    facts.accounting =
        QuerySlurmAccounting(sacct == "auto" ? "sacct" : sacct, facts.job, std::chrono::seconds(10));
  }
  const JobReport report = BuildJobReport(facts);
  std::cout << (format == "json" ? RenderJobReportJson(facts, report) : RenderJobReportText(facts, report));

  // The drawing: the "Over time" section under the text report on a terminal, and --plot's picture.
  const Terminal terminal = DetectTerminal(1, line.flags.at("no-color") == "true");
  const bool over_time = format == "text" && terminal.is_tty;
  if (!over_time && plot.empty()) return kExitOk;
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
  return {
      "job",
      "job [flags] JOBID | job [flags] --pod NAMESPACE/NAME",
      "one job's GPUs over its life: use, memory, power, idle time, throttling, events, grade",
      "Finds the job's life (first to last sample of its gpuscope_job_info; for a pod, of its\n"
      "gpuscope_k8s_gpu_allocation_info) and reports per GPU its utilisation, memory peak against the\n"
      "GPU's memory, power and energy, the share of time it was idle, throttling by reason; the XIDs,\n"
      "ECC and NVLink errors and the node's NCCL/OOM/CUDA events during it with their time; straggler\n"
      "ranks from training telemetry; Slurm accounting (sacct) when reachable; then a grade (A busy ..\n"
      "F idle) and notes to act on. A job still running is reported so far. A pod may also be given as\n"
      "the argument pod/NAMESPACE/NAME.\n",
      WithPrometheusFlags({{"format", "text or json", "text"},
                           {"lookback", "seconds back from now to look for the job", "604800"},
                           {"pod", "report this Kubernetes pod (NAMESPACE/NAME) instead of a Slurm job", ""},
                           {"sacct",
                            "Slurm accounting: auto (run sacct, say when it is not reachable), off, "
                            "or the sacct program to run",
                            "auto"},
                           {"plot", "also draw the time series into FILE.png or FILE.svg", ""},
                           {"no-color", "plain numbers, no charts (as NO_COLOR)", "false", false}}),
      RunJob};
}

}  // namespace gpuscope
