#include "src/cli/plot.h"

#include <cairo.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

namespace gpuscope {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Three GPUs, four panels, one GPU with a gap, over 10 minutes from 08:00:00 UTC.
JobSeries ThreeGpusFourPanels() {
  JobSeries series;
  series.start = 1764662400;  // 2025-12-02 08:00:00 UTC
  series.step = 5;
  for (int i = 0; i <= 120; ++i) series.times.push_back(series.start + i * series.step);
  const char* titles[] = {"SM active", "Memory used", "Power", "Temperature"};
  const char* units[] = {"%", "MiB", "W", "C"};
  const double tops[] = {100, 81559, 700, 90};
  for (int p = 0; p < 4; ++p) {
    SeriesPanel panel{titles[p], units[p], "", tops[p], {}};
    for (int g = 0; g < 3; ++g) {
      GpuLine line{"node-a/" + std::to_string(g), {}};
      for (size_t i = 0; i < series.times.size(); ++i) {
        line.values.push_back(tops[p] * (0.2 + 0.25 * g + 0.1 * std::sin(i / 7.0)));
      }
      if (g == 2) line.values[60] = std::nan("");
      panel.lines.push_back(line);
    }
    series.panels.push_back(panel);
  }
  return series;
}

TEST(PlotFormat, ByExtensionAnyCaseAndAClearErrorForOthers) {
  PlotFormat format;
  ASSERT_TRUE(PlotFormatFromPath("job.png", &format).ok());
  EXPECT_EQ(format, PlotFormat::kPng);
  ASSERT_TRUE(PlotFormatFromPath("/tmp/Job.SVG", &format).ok());
  EXPECT_EQ(format, PlotFormat::kSvg);
  const Status pdf = PlotFormatFromPath("job.pdf", &format);
  EXPECT_EQ(pdf.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(pdf.message(), "--plot job.pdf: the file name must end in .png or .svg");
  EXPECT_FALSE(PlotFormatFromPath(".png", &format).ok());
}

TEST(NiceTicks, OneTwoOrFiveTimesAPowerOfTenUpToTheMax) {
  EXPECT_THAT(NiceTicks(100, 5), ElementsAre(0, 20, 40, 60, 80, 100));
  EXPECT_THAT(NiceTicks(81559, 5), ElementsAre(0, 20000, 40000, 60000, 80000, 100000));
  EXPECT_THAT(NiceTicks(0.7, 5), ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8));
  EXPECT_THAT(NiceTicks(0, 5), ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8, 1));
}

TEST(TimeTicks, WholeStepsInUtcLabelledByTheirStep) {
  std::vector<AxisTick> ticks = TimeTicks(1764662400 + 7, 1764662400 + 600, 8);  // 08:00:07 .. 08:10
  ASSERT_EQ(ticks.size(), 5u);                                                   // every 2 minutes from 08:02
  EXPECT_EQ(ticks.front().label, "08:02");
  EXPECT_EQ(ticks.back().label, "08:10");
  ticks = TimeTicks(1764662400, 1764662400 + 40, 8);  // every 5 s
  EXPECT_EQ(ticks.size(), 9u);
  EXPECT_EQ(ticks[1].label, "08:00:05");
  ticks = TimeTicks(1764662400, 1764662400 + 10 * 86400, 8);  // every 2 days (whole days since 1970)
  ASSERT_EQ(ticks.size(), 5u);
  EXPECT_EQ(ticks.front().label, "12-04");
  EXPECT_EQ(ticks.back().label, "12-12");
}

TEST(LayoutPlot, PanelsStackedTicksOnBothAxesAndALegendEntryPerGpu) {
  const PlotLayout layout = LayoutPlot(ThreeGpusFourPanels(), "Job 42");
  ASSERT_EQ(layout.panels.size(), 4u);
  for (size_t i = 1; i < layout.panels.size(); ++i) {
    EXPECT_GT(layout.panels[i].area.y, layout.panels[i - 1].area.y + layout.panels[i - 1].area.height);
  }
  EXPECT_EQ(layout.panels[0].heading, "SM active (%)");
  EXPECT_EQ(layout.panels[0].value_max, 100);
  EXPECT_EQ(layout.panels[0].value_ticks.back().label, "100");
  EXPECT_EQ(layout.panels[0].time_ticks.front().label, "08:00");
  ASSERT_EQ(layout.legend.size(), 3u);
  EXPECT_EQ(layout.legend[2].label, "node-a/2");
  EXPECT_GT(layout.legend[0].y, layout.panels.back().area.y + layout.panels.back().area.height);
  EXPECT_LE(layout.legend[0].y, layout.height);
}

TEST(WritePlot, PngHasTheSignatureTheLayoutsSizeAndEachGpusColourInEveryPanel) {
  const JobSeries series = ThreeGpusFourPanels();
  const std::string path = testing::TempDir() + "plot_test.png";
  ASSERT_TRUE(WritePlot(series, "Job 42", path).ok());
  EXPECT_EQ(ReadFile(path).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  cairo_surface_t* image = cairo_image_surface_create_from_png(path.c_str());
  ASSERT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
  const PlotLayout layout = LayoutPlot(series, "Job 42");
  EXPECT_EQ(cairo_image_surface_get_width(image), layout.width);
  EXPECT_EQ(cairo_image_surface_get_height(image), layout.height);
  const unsigned char* data = cairo_image_surface_get_data(image);
  const int stride = cairo_image_surface_get_stride(image);
  auto pixel = [&](int x, int y) {
    uint32_t argb;
    std::memcpy(&argb, data + y * stride + x * 4, 4);
    return argb & 0xffffff;
  };
  // Each GPU's line crosses every panel: nearly every column of the area holds a pixel of its colour at
  // half strength or more over the white background (antialiasing blends a line's edges: a pixel is
  // white - a * (white - colour) with a the coverage, the same a in every channel).
  for (const PanelLayout& panel : layout.panels) {
    for (int g = 0; g < 3; ++g) {
      double rgb[3];
      LineColor(g, &rgb[0], &rgb[1], &rgb[2]);
      auto near = [&](uint32_t p) {
        const int channel[3] = {static_cast<int>(p >> 16 & 0xff), static_cast<int>(p >> 8 & 0xff),
                                static_cast<int>(p & 0xff)};
        double low = 2, high = -1;
        for (int k = 0; k < 3; ++k) {
          const double full = 255 - rgb[k] * 255;
          if (full < 40) continue;  // a channel the colour barely changes says nothing
          const double a = (255 - channel[k]) / full;
          low = std::min(low, a);
          high = std::max(high, a);
        }
        return low >= 0.5 && high - low < 0.2;
      };
      int columns = 0;
      for (int x = panel.area.x + 2; x < panel.area.x + panel.area.width - 1; ++x) {
        bool found = false;
        for (int y = panel.area.y + 2; y < panel.area.y + panel.area.height - 1 && !found; ++y)
          found = near(pixel(x, y));
        columns += found;
      }
      EXPECT_GT(columns, panel.area.width * 0.95) << panel.heading << " GPU " << g;
    }
  }
  // Outside the panels and the legend (the right margin) there is only background.
  for (int y = 0; y < layout.height; ++y) {
    for (int x = layout.width - 10; x < layout.width; ++x) ASSERT_EQ(pixel(x, y), 0xffffffu) << x << "," << y;
  }
  cairo_surface_destroy(image);
}

TEST(WritePlot, SvgHasOneSeriesPathPerGpuAndPanelAndItsTickLabels) {
  const JobSeries series = ThreeGpusFourPanels();
  const std::string path = testing::TempDir() + "plot_test.svg";
  ASSERT_TRUE(WritePlot(series, "Job 42", path).ok());
  const std::string svg = ReadFile(path);
  EXPECT_THAT(svg.substr(0, 100), HasSubstr("<?xml"));

  const std::regex series_path(R"(<path [^>]*stroke-width:1\.5;)");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), series_path), std::sregex_iterator()),
            12);
  // Each tick label is one group of glyphs in the tick grey (25 %), and nothing else is in that grey.
  const PlotLayout layout = LayoutPlot(series, "Job 42");
  size_t ticks = 0;
  for (const PanelLayout& panel : layout.panels) ticks += panel.value_ticks.size() + panel.time_ticks.size();
  const std::regex tick_group(R"(<g style="fill:rgb\(25%,25%,25%\);fill-opacity:1;">\s*<use )");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), tick_group), std::sregex_iterator()),
            static_cast<long>(ticks));
}

TEST(WritePlot, AnUnwritableFileIsAnErrorAndLeavesNothingBehind) {
  const Status status = WritePlot(ThreeGpusFourPanels(), "Job 42", "/nonexistent-dir/plot.png");
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("--plot /nonexistent-dir/plot.png: cannot create the file"));
  EXPECT_EQ(WritePlot(JobSeries(), "Job 42", testing::TempDir() + "empty.png").code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(WritePlot(ThreeGpusFourPanels(), "Job 42", testing::TempDir() + "x.gif").code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace gpuscope
