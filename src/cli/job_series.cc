#include "src/cli/job_series.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <tuple>

#include "src/cli/text_format.h"

namespace gpuscope {
namespace {

struct PanelSpec {
  const char* title;
  const char* unit;
  const char* metric;
  double factor;              // the metric times this is in `unit`
  double fixed_scale;         // top of the value axis, 0: the largest value seen
  bool memory_scale = false;  // the top is at least the largest GPU memory of the job (FB_USED + FB_FREE)
};

// SM active first; GPU utilisation stands in only where no GPU of the job reports SM active.
constexpr PanelSpec kSmActive{"SM active", "%", "DCGM_FI_PROF_SM_ACTIVE", 100, 100};
constexpr PanelSpec kUtilization{"GPU utilisation", "%", "DCGM_FI_DEV_GPU_UTIL", 1, 100};
constexpr PanelSpec kOtherPanels[] = {
    {"Memory used", "MiB", "DCGM_FI_DEV_FB_USED", 1, 0, true},
    {"Power", "W", "DCGM_FI_DEV_POWER_USAGE", 1, 0},
    {"Temperature", "C", "DCGM_FI_DEV_GPU_TEMP", 1, 0},
};

std::string FormatNumber(double v) { return FormatFixed(v, std::fabs(v) < 10 ? 1 : 0); }

std::string Pad(std::string text, int width) {
  const int shown = DisplayWidth(text);
  if (shown < width) text.append(width - shown, ' ');
  return text;
}

Status QueryPanel(PrometheusClient& prometheus, const PanelSpec& spec, const std::string& selector,
                  const JobSeries& series, double end, SeriesPanel* panel) {
  panel->title = spec.title;
  panel->unit = spec.unit;
  panel->expr = SeriesExpr(spec.metric, selector, series.step, spec.factor);
  std::vector<PromSeries> answer;
  Status status = prometheus.QueryRange(panel->expr, series.start, end, series.step, &answer);
  if (!status.ok()) return status;
  // By host, then GPU index as a number (GPU 10 after GPU 2), then MIG instance.
  std::map<std::tuple<std::string, long, std::string>, GpuLine> lines;
  double largest = 0;
  for (const PromSeries& s : answer) {
    const std::string host = s.Host();
    const std::string gpu = s.Label("gpu");
    const std::string instance = s.Label("GPU_I_ID");
    GpuLine& line = lines[{host, std::strtol(gpu.c_str(), nullptr, 10), instance}];
    line.label = host;
    line.label += "/" + gpu;
    if (!instance.empty()) line.label += ":" + instance;
    line.values.assign(series.times.size(), std::nan(""));
    for (const auto& [t, v] : s.points) {
      const long index = std::lround((t - series.start) / series.step);
      if (index < 0 || index >= static_cast<long>(line.values.size())) continue;
      line.values[index] = v;
      if (std::isfinite(v)) largest = std::max(largest, v);
    }
  }
  for (auto& [key, line] : lines) panel->lines.push_back(std::move(line));
  panel->scale_max = spec.fixed_scale > 0 ? spec.fixed_scale : largest;
  return Status::Ok();
}

}  // namespace

double SeriesStep(double first, double last, int max_points) {
  const double life = std::max(0.0, last - first);
  if (max_points < 2) return std::max(1.0, std::ceil(life));
  return std::max(1.0, std::ceil(life / (max_points - 1)));
}

std::string SeriesExpr(const std::string& metric, const std::string& selector, double step, double factor) {
  std::string expr = metric + selector;
  if (step > 15) expr = "avg_over_time(" + expr + "[" + std::to_string(std::lround(step)) + "s])";
  if (factor != 1) expr += " * " + FormatNumber(factor);
  return expr;
}

Status CollectJobSeries(PrometheusClient& prometheus, const std::string& selector, const JobFacts& facts,
                        int max_points, JobSeries* series) {
  *series = JobSeries();
  series->start = facts.first_seen;
  series->step = SeriesStep(facts.first_seen, facts.last_seen, max_points);
  for (double t = facts.first_seen; t <= facts.last_seen + 1e-6; t += series->step)
    series->times.push_back(t);
  const double end = series->times.back();

  SeriesPanel busy;
  Status status = QueryPanel(prometheus, kSmActive, selector, *series, end, &busy);
  if (!status.ok()) return status;
  if (busy.lines.empty()) {
    busy = SeriesPanel();
    status = QueryPanel(prometheus, kUtilization, selector, *series, end, &busy);
    if (!status.ok()) return status;
  }
  if (!busy.lines.empty()) series->panels.push_back(std::move(busy));
  for (const PanelSpec& spec : kOtherPanels) {
    SeriesPanel panel;
    status = QueryPanel(prometheus, spec, selector, *series, end, &panel);
    if (!status.ok()) return status;
    if (spec.memory_scale) {
      for (const JobGpuFigures& gpu : facts.gpus)
        panel.scale_max = std::max(panel.scale_max, gpu.memory_total_mib);
    }
    if (!panel.lines.empty()) series->panels.push_back(std::move(panel));
  }
  return Status::Ok();
}

std::string RenderOverTime(const JobSeries& series, ChartStyle style, int columns) {
  if (series.panels.empty() || series.times.empty()) return "";
  std::string out = "\nOver time (" + FormatUtc(series.times.front(), "%Y-%m-%d %H:%M:%S") + " to " +
                    FormatUtc(series.times.back(), "%Y-%m-%d %H:%M:%S") + " UTC, a point every " +
                    std::to_string(std::lround(series.step)) + " s)\n";
  int label_width = 0;
  for (const SeriesPanel& panel : series.panels) {
    for (const GpuLine& line : panel.lines) label_width = std::max(label_width, DisplayWidth(line.label));
  }
  constexpr int kBarWidth = 10;
  for (const SeriesPanel& panel : series.panels) {
    out += "  " + panel.title + " (" + panel.unit + ", scale 0.." + FormatNumber(panel.scale_max) + ")\n";
    for (const GpuLine& line : panel.lines) {
      double sum = 0, low = INFINITY, high = -INFINITY, last = std::nan("");
      int count = 0;
      for (double v : line.values) {
        if (!std::isfinite(v)) continue;
        sum += v;
        low = std::min(low, v);
        high = std::max(high, v);
        last = v;
        ++count;
      }
      std::string row = "    " + Pad(line.label, label_width) + "  ";
      if (count == 0) {
        out += row + "no samples\n";
        continue;
      }
      const double mean = sum / count;
      if (style == ChartStyle::kPlain) {
        out += row + "min " + FormatNumber(low) + "  mean " + FormatNumber(mean) + "  max " +
               FormatNumber(high) + "  last " + FormatNumber(last) + "\n";
        continue;
      }
      // "    label  <sparkline>  <bar> mean": the sparkline takes what the rest leaves.
      const std::string tail =
          "  " +
          Colored(Bar(panel.scale_max > 0 ? mean / panel.scale_max : 0, kBarWidth, style), "32", style) +
          " " + FormatNumber(mean);
      const int spark_width = std::clamp(columns - DisplayWidth(row) - DisplayWidth(tail) - 1, 8,
                                         std::max<int>(8, line.values.size()));
      out += row;
      out += Colored(Sparkline(line.values, 0, panel.scale_max, spark_width, style), "36", style);
      out += tail + "\n";
    }
  }
  return out;
}

}  // namespace gpuscope
