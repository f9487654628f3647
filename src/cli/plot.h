// Plot: `gpuscope job --plot FILE` — a JobSeries drawn with cairo as a PNG or SVG picture: a title with
// the job id, one panel per metric (stacked, sharing the time axis), one line per GPU in the same colour
// in every panel, value ticks and grid lines, time ticks in UTC, and a legend of the GPUs. The layout
// (where every panel, tick and legend entry goes) is a pure function, so tests can check the picture
// against it.
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <vector>

#include "src/cli/job_series.h"
#include "src/core/status.h"

namespace gpuscope {

enum class PlotFormat { kPng, kSvg };

// The format named by the file's extension (.png or .svg, any case); InvalidArgument naming the file
// and the formats otherwise.
Status PlotFormatFromPath(const std::string& path, PlotFormat* format);

struct PlotBox {
  double x = 0, y = 0, width = 0, height = 0;  // pixels from the top left
};

struct AxisTick {
  double value = 0;  // data units: Unix seconds on the time axis, the panel's unit on the value axis
  std::string label;
};

struct PanelLayout {
  std::string heading;  // "SM active (%)"
  PlotBox area;         // the plotting area, inside the axes
  double time_min = 0, time_max = 0;
  double value_max = 1;  // the value axis runs 0 .. value_max
  std::vector<AxisTick> time_ticks, value_ticks;
};

struct LegendEntry {
  std::string label;
  double x = 0, y = 0;  // baseline start of the label
};

struct PlotLayout {
  double width = 0, height = 0;
  std::string title;
  std::vector<PanelLayout> panels;  // in the order of series.panels
  std::vector<LegendEntry> legend;  // in the order of the first panel's lines
};

// Ticks at "nice" values (1, 2 or 5 times a power of ten) from 0 to at least `max` (which becomes the
// last tick), at most `max_ticks` + 1 of them. A max <= 0 is taken as 1.
std::vector<double> NiceTicks(double max, int max_ticks);

// Time ticks at whole multiples (in UTC) of a step from 1 s to days chosen so that at most `max_ticks`
// fall in start..end, labelled "%H:%M:%S" under a minute's step, "%H:%M" under a day's, else "%m-%d".
std::vector<AxisTick> TimeTicks(double start, double end, int max_ticks);

// Where everything goes for `series` under `title`.
PlotLayout LayoutPlot(const JobSeries& series, const std::string& title);

// The colour of line `index` (0-based), the same in every panel and the legend: r, g, b in 0..1.
void LineColor(int index, double* r, double* g, double* b);

// Draws `series` into `path` in the format its extension names. InvalidArgument for another extension
// or a series with no panel; Unavailable (with cairo's reason) when the file cannot be written.
Status WritePlot(const JobSeries& series, const std::string& title, const std::string& path);

}  // namespace gpuscope
