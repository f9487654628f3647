// What `gpuscope top` shows for a FleetSnapshot: the person's choices (metric, sort, filter, scroll) and the
// screen laid out for a width and height as lines of styled spans. Pure: the ncurses front end
// (top_command.cc) only paints the spans, `--once` prints their text, and the unit tests read both.
//
// A GPU cell is a level digit (0..9: tenths of the metric's full scale; '-' without a sample) and a marker
// ('i' allocated and idle, '!' a firing alert on the GPU, ' ' neither), so the screen says everything in
// monochrome too; colours (heat of the level, idle, alert) only add to it. Under 120 columns the layout is
// compact (one row per node: name, one 3-column cell per GPU, its jobs in short); from 120 columns each
// cell shows the value as a number and the row adds the GPU model, the jobs' accounts, partitions and
// names, and the node's firing alerts.
//
// Thread-safety: value types and free functions.
#pragma once

#include <string>
#include <vector>

#include "src/cli/top_fleet.h"
#include "src/core/status.h"

namespace gpuscope {

enum class TopSort { kNode, kValue, kIdleFirst };

// "node", "value" (the metric, highest first), "idle" (most allocated-idle GPUs first).
const char* TopSortName(TopSort sort);
bool ParseTopSort(const std::string& text, TopSort* sort);
TopSort NextTopSort(TopSort sort);

// Which nodes to show: a node is shown when one of its jobs matches every key=value term (user, account,
// partition; exact) and every free word appears in its name, a job id, user, account or partition.
struct TopFilter {
  std::string user, account, partition;
  std::vector<std::string> words;

  bool empty() const { return user.empty() && account.empty() && partition.empty() && words.empty(); }
};

// Parses "user=dave partition=train gpu-node" (space-separated terms; empty: no filter). InvalidArgument
// naming the term for an unknown key or an empty value.
Status ParseTopFilter(const std::string& text, TopFilter* filter);
std::string TopFilterText(const TopFilter& filter);
bool NodeMatches(const TopNode& node, const TopFilter& filter);

struct TopViewState {
  TopMetric metric = TopMetric::kUtilization;  // what the person asked for (the snapshot may lag)
  TopSort sort = TopSort::kNode;
  TopFilter filter;
  int scroll = 0;  // first shown row; the layout clamps it
  double refresh_seconds = 5;
  bool help = false;        // the key help replaces the rows
  bool prompt = false;      // the bottom line is the filter prompt
  std::string prompt_text;  // what was typed so far
  std::string message;      // one-line note at the bottom (a bad filter), until the next key
  std::string error;        // the last refresh's failure; empty when it worked
  double updated = 0;       // Unix seconds of the shown snapshot; 0 before the first
};

// The nodes to show, filtered and sorted (ties by name).
std::vector<const TopNode*> VisibleNodes(const FleetSnapshot& snapshot, const TopViewState& state);

enum class TopStyle {
  kNormal,
  kTitle,   // the first line
  kHeader,  // column titles
  kHeat0,   // level bands, coolest to hottest: levels 0-1, 2-4, 5-7, 8, 9
  kHeat1,
  kHeat2,
  kHeat3,
  kHeat4,
  kIdle,   // an allocated GPU doing nothing
  kAlert,  // a firing alert
  kError,  // stale data / a failed refresh
  kDim,    // no sample
};

struct TopSpan {
  std::string text;
  TopStyle style = TopStyle::kNormal;
};

struct TopLine {
  std::vector<TopSpan> spans;
  std::string Text() const;  // the spans' text joined
};

struct TopScreen {
  std::vector<TopLine> lines;  // at most the height; each at most the width
  int first_row = 0;           // rows shown: first_row .. first_row + shown_rows - 1 of total_rows
  int shown_rows = 0;
  int total_rows = 0;
  int page_rows = 0;         // rows that fit on the screen (what PgDn moves)
  std::string Text() const;  // lines joined with '\n', trailing spaces trimmed
};

// Widths from kWideColumns up get the wide layout.
inline constexpr int kWideColumns = 120;

// The level digit 0..9 of a value (-1 without a sample) for the metric's full scale.
int TopLevel(double value, double full_scale);

// The whole screen. height <= 0 lays out every row (no paging: `--once`). `now` (Unix seconds) dates the
// snapshot in the title ("updated 3 s ago").
TopScreen LayoutTopScreen(const FleetSnapshot& snapshot, const TopViewState& state, int width, int height,
                          double now);

}  // namespace gpuscope
