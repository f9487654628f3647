#include "src/cli/plot.h"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>

#include "src/cli/text_format.h"

namespace gpuscope {
namespace {

// Picture geometry, in pixels.
constexpr double kWidth = 1000;
constexpr double kMarginLeft = 80;   // value tick labels
constexpr double kMarginRight = 40;  // half the last time tick's label
constexpr double kTitleHeight = 44;
constexpr double kHeadingHeight = 26;  // panel heading above its area
constexpr double kAreaHeight = 170;
constexpr double kBelowArea = 44;  // time tick labels and the axis label
constexpr double kLegendRow = 22;
constexpr double kLegendEntryWidth = 170;
constexpr double kSeriesLineWidth = 1.5;
constexpr double kTickFontSize = 11;

// Tick labels are drawn in this grey and nothing else is, so a picture can be checked for them.
constexpr double kTickGrey = 0.25;

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string FormatTickValue(double v, double step) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), step < 1 ? "%.1f" : "%.0f", v);
  return buffer;
}

double MapX(const PanelLayout& p, double t) {
  const double span = p.time_max > p.time_min ? p.time_max - p.time_min : 1;
  return p.area.x + (t - p.time_min) / span * p.area.width;
}

double MapY(const PanelLayout& p, double v) {
  return p.area.y + p.area.height - std::clamp(v / p.value_max, 0.0, 1.0) * p.area.height;
}

void SetGrey(cairo_t* cr, double grey) { cairo_set_source_rgb(cr, grey, grey, grey); }

void TextAt(cairo_t* cr, const std::string& text, double x, double y,
            double align /* 0 left, .5, 1 right */) {
  cairo_text_extents_t extents;
  cairo_text_extents(cr, text.c_str(), &extents);
  cairo_move_to(cr, x - align * extents.x_advance, y);
  cairo_show_text(cr, text.c_str());
}

void Draw(cairo_t* cr, const JobSeries& series, const PlotLayout& layout) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, 16);
  cairo_set_source_rgb(cr, 0, 0, 0);
  TextAt(cr, layout.title, kMarginLeft, 28, 0);

  for (size_t i = 0; i < layout.panels.size(); ++i) {
    const PanelLayout& p = layout.panels[i];
    const SeriesPanel& panel = series.panels[i];
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, 13);
    cairo_set_source_rgb(cr, 0, 0, 0);
    TextAt(cr, p.heading, p.area.x, p.area.y - 8, 0);

    // Grid lines at the ticks, then the tick labels (grey), then the axes' frame.
    cairo_set_line_width(cr, 1);
    SetGrey(cr, 0.88);
    for (const AxisTick& tick : p.value_ticks) {
      const double y = std::round(MapY(p, tick.value)) + 0.5;
      cairo_move_to(cr, p.area.x, y);
      cairo_line_to(cr, p.area.x + p.area.width, y);
    }
    for (const AxisTick& tick : p.time_ticks) {
      const double x = std::round(MapX(p, tick.value)) + 0.5;
      cairo_move_to(cr, x, p.area.y);
      cairo_line_to(cr, x, p.area.y + p.area.height);
    }
    cairo_stroke(cr);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, kTickFontSize);
    SetGrey(cr, kTickGrey);
    for (const AxisTick& tick : p.value_ticks)
      TextAt(cr, tick.label, p.area.x - 6, MapY(p, tick.value) + 4, 1);
    for (const AxisTick& tick : p.time_ticks) {
      TextAt(cr, tick.label, MapX(p, tick.value), p.area.y + p.area.height + 15, 0.5);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    TextAt(cr, "time (UTC)", p.area.x + p.area.width / 2, p.area.y + p.area.height + 32, 0.5);
    cairo_rectangle(cr, p.area.x + 0.5, p.area.y + 0.5, p.area.width, p.area.height);
    cairo_stroke(cr);

    // One path per GPU: a gap (NaN) lifts the pen; a lone point is a round dot.
    cairo_save(cr);
    cairo_rectangle(cr, p.area.x, p.area.y, p.area.width + 1, p.area.height + 1);
    cairo_clip(cr);
    cairo_set_line_width(cr, kSeriesLineWidth);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (size_t l = 0; l < panel.lines.size(); ++l) {
      double r, g, b;
      LineColor(static_cast<int>(l), &r, &g, &b);
      cairo_set_source_rgb(cr, r, g, b);
      bool pen_down = false;
      for (size_t k = 0; k < panel.lines[l].values.size() && k < series.times.size(); ++k) {
        const double v = panel.lines[l].values[k];
        if (!std::isfinite(v)) {
          pen_down = false;
          continue;
        }
        const double x = MapX(p, series.times[k]), y = MapY(p, v);
        if (pen_down) {
          cairo_line_to(cr, x, y);
        } else {
          cairo_move_to(cr, x, y);
          cairo_line_to(cr, x, y);  // a lone point still draws, as a dot
          pen_down = true;
        }
      }
      cairo_stroke(cr);
    }
    cairo_restore(cr);
  }

  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 12);
  for (size_t l = 0; l < layout.legend.size(); ++l) {
    const LegendEntry& entry = layout.legend[l];
    double r, g, b;
    LineColor(static_cast<int>(l), &r, &g, &b);
    cairo_set_source_rgb(cr, r, g, b);
    cairo_rectangle(cr, entry.x - 22, entry.y - 9, 16, 8);  // a swatch, filled: never taken for a series
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    TextAt(cr, entry.label, entry.x, entry.y, 0);
  }
}

cairo_status_t WriteToFile(void* closure, const unsigned char* data, unsigned int length) {
  return std::fwrite(data, 1, length, static_cast<FILE*>(closure)) == length ? CAIRO_STATUS_SUCCESS
                                                                             : CAIRO_STATUS_WRITE_ERROR;
}

}  // namespace

Status PlotFormatFromPath(const std::string& path, PlotFormat* format) {
  const std::string lower = Lower(path);
  auto ends_with = [&](const std::string& suffix) {
    return lower.size() > suffix.size() &&
           lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".png")) {
    *format = PlotFormat::kPng;
  } else if (ends_with(".svg")) {
    *format = PlotFormat::kSvg;
  } else {
    return Status::InvalidArgument("--plot " + path + ": the file name must end in .png or .svg");
  }
  return Status::Ok();
}

std::vector<double> NiceTicks(double max, int max_ticks) {
  if (!(max > 0)) max = 1;
  max_ticks = std::max(1, max_ticks);
  const double raw = max / max_ticks;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  }
  std::vector<double> ticks;
  const int count = static_cast<int>(std::ceil(max / step - 1e-9));
  for (int i = 0; i <= count; ++i) ticks.push_back(i * step);
  return ticks;
}

std::vector<AxisTick> TimeTicks(double start, double end, int max_ticks) {
  static constexpr double kSteps[] = {1,   2,    5,    10,   15,    30,    60,    120,   300,    600,
                                      900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  if (end <= start) end = start + 1;
  max_ticks = std::max(1, max_ticks);
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps) {
    if ((end - start) / s <= max_ticks) {
      step = s;
      break;
    }
  }
  const char* format = step < 60 ? "%H:%M:%S" : step < 86400 ? "%H:%M" : "%m-%d";
  std::vector<AxisTick> ticks;
  for (double t = std::ceil(start / step) * step; t <= end; t += step) {
    ticks.push_back({t, FormatUtc(t, format)});
  }
  return ticks;
}

PlotLayout LayoutPlot(const JobSeries& series, const std::string& title) {
  PlotLayout layout;
  layout.width = kWidth;
  layout.title = title;
  const double start = series.times.empty() ? series.start : series.times.front();
  const double end = series.times.empty() ? series.start : series.times.back();
  double y = kTitleHeight;
  for (const SeriesPanel& panel : series.panels) {
    PanelLayout p;
    p.heading = panel.title + " (" + panel.unit + ")";
    y += kHeadingHeight;
    p.area = {kMarginLeft, y, kWidth - kMarginLeft - kMarginRight, kAreaHeight};
    y += kAreaHeight + kBelowArea;
    p.time_min = start;
    p.time_max = end > start ? end : start + 1;
    const std::vector<double> values = NiceTicks(panel.scale_max, 5);
    p.value_max = values.back();
    const double step = values.size() > 1 ? values[1] - values[0] : 1;
    for (double v : values) p.value_ticks.push_back({v, FormatTickValue(v, step)});
    p.time_ticks = TimeTicks(p.time_min, p.time_max, 8);
    layout.panels.push_back(std::move(p));
  }
  if (!series.panels.empty()) {
    const int per_row = static_cast<int>((kWidth - kMarginLeft - kMarginRight) / kLegendEntryWidth);
    const auto& lines = series.panels.front().lines;
    for (size_t l = 0; l < lines.size(); ++l) {
      const size_t row = l / per_row, column = l % per_row;  // whole rows and columns of the legend
      layout.legend.push_back({lines[l].label,
                               kMarginLeft + 22 + static_cast<double>(column) * kLegendEntryWidth,
                               y + 12 + static_cast<double>(row) * kLegendRow});
    }
    y += 8 + std::ceil(lines.size() / static_cast<double>(per_row)) * kLegendRow;
  }
  layout.height = std::ceil(y + 8);
  return layout;
}

void LineColor(int index, double* r, double* g, double* b) {
  // Ten colours apart for the eye (the "tab10" qualitative palette's values), then again, darker.
  static constexpr unsigned kPalette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                          0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  const unsigned rgb = kPalette[index % 10];
  const double shade = index / 10 % 2 == 0 ? 1.0 : 0.6;
  *r = shade * ((rgb >> 16) & 0xff) / 255.0;
  *g = shade * ((rgb >> 8) & 0xff) / 255.0;
  *b = shade * (rgb & 0xff) / 255.0;
}

Status WritePlot(const JobSeries& series, const std::string& title, const std::string& path) {
  PlotFormat format;
  Status status = PlotFormatFromPath(path, &format);
  if (!status.ok()) return status;
  if (series.panels.empty())
    return Status::InvalidArgument("--plot " + path + ": the job has no series to draw");
  const PlotLayout layout = LayoutPlot(series, title);

  // Written beside the target and renamed over it when complete: a failed plot leaves no half file.
  const std::string partial = path + ".partial";
  FILE* file = std::fopen(partial.c_str(), "wb");
  if (file == nullptr) return Status::Unavailable("--plot " + path + ": cannot create the file");
  cairo_surface_t* surface =
      format == PlotFormat::kPng
          ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(layout.width),
                                       static_cast<int>(layout.height))
          : cairo_svg_surface_create_for_stream(WriteToFile, file, layout.width, layout.height);
  cairo_t* cr = cairo_create(surface);
  Draw(cr, series, layout);
  cairo_status_t result = cairo_status(cr);
  cairo_destroy(cr);
  if (result == CAIRO_STATUS_SUCCESS && format == PlotFormat::kPng) {
    result = cairo_surface_write_to_png_stream(surface, WriteToFile, file);
  }
  cairo_surface_finish(surface);
  if (result == CAIRO_STATUS_SUCCESS) result = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  const bool closed = std::fclose(file) == 0;
  if (result != CAIRO_STATUS_SUCCESS || !closed || std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    return Status::Unavailable(
        "--plot " + path + ": cannot write the picture (" +
        (result != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(result) : "I/O error") + ")");
  }
  return Status::Ok();
}

}  // namespace gpuscope
