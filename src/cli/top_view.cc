#include "src/cli/top_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace gpuscope {
namespace {

constexpr int kTitleLines = 3;  // title, state and legend, column titles

std::string Pad(std::string text, size_t width) {
  if (text.size() > width) text.resize(width);
  text.resize(width, ' ');
  return text;
}

std::string PadLeft(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

TopStyle HeatStyle(int level) {
  if (level <= 1) return TopStyle::kHeat0;
  if (level <= 4) return TopStyle::kHeat1;
  if (level <= 7) return TopStyle::kHeat2;
  if (level == 8) return TopStyle::kHeat3;
  return TopStyle::kHeat4;
}

// Cuts the line's spans to `width` characters.
void Clip(TopLine* line, int width) {
  int left = width;
  std::vector<TopSpan> kept;
  for (TopSpan& span : line->spans) {
    if (left <= 0) break;
    if (static_cast<int>(span.text.size()) > left) span.text.resize(left);
    left -= static_cast<int>(span.text.size());
    kept.push_back(std::move(span));
  }
  line->spans = std::move(kept);
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return !needle.empty() && haystack.find(needle) != std::string::npos;
}

// The keys of the node's jobs in the order of the first GPU each holds.
std::vector<std::string> JobsInGpuOrder(const TopNode& node) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const TopGpu& g : node.gpus) {
    if (!g.job.empty() && node.jobs.count(g.job) != 0 && seen.insert(g.job).second) keys.push_back(g.job);
  }
  return keys;
}

// The GPUs of the node that job `key` holds, as index ranges: "0-3,6".
std::string GpusOf(const TopNode& node, const std::string& key) {
  std::string out;
  for (size_t i = 0; i < node.gpus.size();) {
    if (node.gpus[i].job != key) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < node.gpus.size() && node.gpus[j + 1].job == key) ++j;
    out += (out.empty() ? "" : ",") + node.gpus[i].index + (j > i ? "-" + node.gpus[j].index : "");
    i = j + 1;
  }
  return out;
}

// The jobs on a node; with more than one, each says which GPUs it holds ("[0-3]").
std::string JobsText(const TopNode& node, bool wide) {
  const std::vector<std::string> keys = JobsInGpuOrder(node);
  std::string out;
  for (const std::string& key : keys) {
    const TopJob& job = node.jobs.at(key);
    if (!out.empty()) out += wide ? "; " : ", ";
    out += job.id;
    if (keys.size() > 1) out += "[" + GpusOf(node, key) + "]";
    if (!job.user.empty()) out += " " + job.user;
    if (wide) {
      std::string where = job.account;
      if (!job.partition.empty()) where += (where.empty() ? "" : "/") + job.partition;
      if (!where.empty()) out += " " + where;
      if (!job.name.empty()) out += " " + job.name;
    }
  }
  return out;
}

std::vector<std::string> NodeAlertNames(const TopNode& node) {
  std::set<std::string> names(node.alerts.begin(), node.alerts.end());
  for (const TopGpu& g : node.gpus) names.insert(g.alerts.begin(), g.alerts.end());
  return {names.begin(), names.end()};
}

std::string Join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::vector<std::string> HelpLines() {
  return {
      "Keys",
      "  u m p t      show utilisation, memory used, power (of the enforced limit), temperature",
      "  s            sort by node name, by the metric (highest first), idle GPUs first",
      "  /            filter: user=NAME account=NAME partition=NAME and words (Enter applies, Esc cancels,",
      "               Ctrl-U clears the line; an empty filter shows every node)",
      "  c            clear the filter",
      "  + -          refresh less / more often",
      "  Up Down PgUp PgDn Home End   scroll",
      "  ?            this help (any key closes it)",
      "  q            quit",
      "",
      "Cells",
      "  digit        the value in tenths of full scale (0: under 10 %, 9: 90 % or more; '-': no sample)",
      "  i            the GPU is allocated to a job and idle (gpuscope_gpu_allocated_idle)",
      "  !            a firing alert on the GPU; after a node's name: on the node or one of its GPUs",
  };
}

}  // namespace

const char* TopSortName(TopSort sort) {
  switch (sort) {
    case TopSort::kValue:
      return "value";
    case TopSort::kIdleFirst:
      return "idle";
    case TopSort::kNode:
      break;
  }
  return "node";
}

bool ParseTopSort(const std::string& text, TopSort* sort) {
  for (TopSort s : {TopSort::kNode, TopSort::kValue, TopSort::kIdleFirst}) {
    if (text == TopSortName(s)) {
      *sort = s;
      return true;
    }
  }
  return false;
}

TopSort NextTopSort(TopSort sort) {
  switch (sort) {
    case TopSort::kNode:
      return TopSort::kValue;
    case TopSort::kValue:
      return TopSort::kIdleFirst;
    case TopSort::kIdleFirst:
      break;
  }
  return TopSort::kNode;
}

Status ParseTopFilter(const std::string& text, TopFilter* filter) {
  TopFilter parsed;
  std::istringstream in(text);
  std::string term;
  while (in >> term) {
    const size_t equals = term.find('=');
    if (equals == std::string::npos) {
      parsed.words.push_back(term);
      continue;
    }
    const std::string key = term.substr(0, equals), value = term.substr(equals + 1);
    std::string* field = key == "user"        ? &parsed.user
                         : key == "account"   ? &parsed.account
                         : key == "partition" ? &parsed.partition
                                              : nullptr;
    if (field == nullptr) {
      return Status::InvalidArgument("filter term '" + term + "': keys are user, account and partition");
    }
    if (value.empty()) return Status::InvalidArgument("filter term '" + term + "' has no value");
    *field = value;
  }
  *filter = std::move(parsed);
  return Status::Ok();
}

std::string TopFilterText(const TopFilter& filter) {
  std::vector<std::string> terms;
  if (!filter.user.empty()) terms.push_back("user=" + filter.user);
  if (!filter.account.empty()) terms.push_back("account=" + filter.account);
  if (!filter.partition.empty()) terms.push_back("partition=" + filter.partition);
  terms.insert(terms.end(), filter.words.begin(), filter.words.end());
  return Join(terms, " ");
}

bool NodeMatches(const TopNode& node, const TopFilter& filter) {
  const bool keyed = !filter.user.empty() || !filter.account.empty() || !filter.partition.empty();
  if (keyed) {
    const bool any = std::any_of(node.jobs.begin(), node.jobs.end(), [&](const auto& entry) {
      const TopJob& job = entry.second;
      return (filter.user.empty() || job.user == filter.user) &&
             (filter.account.empty() || job.account == filter.account) &&
             (filter.partition.empty() || job.partition == filter.partition);
    });
    if (!any) return false;
  }
  for (const std::string& word : filter.words) {
    bool found = Contains(node.hostname, word);
    for (const auto& [key, job] : node.jobs) {
      found = found || Contains(job.id, word) || Contains(job.user, word) || Contains(job.account, word) ||
              Contains(job.partition, word);
    }
    if (!found) return false;
  }
  return true;
}

std::vector<const TopNode*> VisibleNodes(const FleetSnapshot& snapshot, const TopViewState& state) {
  std::vector<const TopNode*> nodes;
  for (const TopNode& node : snapshot.nodes) {
    if (NodeMatches(node, state.filter)) nodes.push_back(&node);
  }
  auto by_name = [](const TopNode* a, const TopNode* b) { return NaturalLess(a->hostname, b->hostname); };
  switch (state.sort) {
    case TopSort::kNode:
      std::stable_sort(nodes.begin(), nodes.end(), by_name);
      break;
    case TopSort::kValue:
      std::stable_sort(nodes.begin(), nodes.end(), [&](const TopNode* a, const TopNode* b) {
        const double va = a->MeanValue(), vb = b->MeanValue();
        return va != vb ? va > vb : by_name(a, b);
      });
      break;
    case TopSort::kIdleFirst:
      std::stable_sort(nodes.begin(), nodes.end(), [&](const TopNode* a, const TopNode* b) {
        const int ia = a->IdleGpus(), ib = b->IdleGpus();
        return ia != ib ? ia > ib : by_name(a, b);
      });
      break;
  }
  return nodes;
}

int TopLevel(double value, double full_scale) {
  if (value < 0 || !(full_scale > 0)) return -1;
  return std::clamp(static_cast<int>(std::floor(value / full_scale * 10)), 0, 9);
}

std::string TopLine::Text() const {
  std::string out;
  for (const TopSpan& span : spans) out += span.text;
  return out;
}

std::string TopScreen::Text() const {
  std::string out;
  for (const TopLine& line : lines) {
    std::string text = line.Text();
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

TopScreen LayoutTopScreen(const FleetSnapshot& snapshot, const TopViewState& state, int width, int height,
                          double now) {
  TopScreen screen;
  width = std::max(width, 20);
  const bool wide = width >= kWideColumns;
  const bool paged = height > 0;
  const TopMetricInfo& metric = MetricInfo(state.metric);
  const bool loading = snapshot.metric != state.metric && state.updated > 0;
  const std::vector<const TopNode*> nodes = VisibleNodes(snapshot, state);

  // Title: what is shown and how fresh it is.
  int gpus = 0, idle = 0, alerting = 0;
  for (const TopNode* node : nodes) {
    gpus += static_cast<int>(node->gpus.size());
    idle += node->IdleGpus();
    alerting += node->HasAlert() ? 1 : 0;
  }
  TopLine title;
  char refresh[32];
  std::snprintf(refresh, sizeof(refresh), "%g", state.refresh_seconds);
  std::string text = "gpuscope top | " + std::string(metric.flag) + " " + metric.unit +
                     (loading ? " loading" : "") + " | " + std::to_string(nodes.size()) + " nodes " +
                     std::to_string(gpus) + " GPUs | " + std::to_string(idle) + " idle " +
                     std::to_string(alerting) + " alerting | every " + refresh + "s";
  if (state.updated > 0)
    text += " | " + std::to_string(std::max(0L, std::lround(now - state.updated))) + "s ago";
  title.spans.push_back({text, TopStyle::kTitle});
  title.spans.push_back(
      {std::string(std::max(0, width - static_cast<int>(text.size())), ' '), TopStyle::kTitle});
  screen.lines.push_back(title);

  // Row budget and scroll.
  const int footer = paged ? 1 : 0;
  screen.total_rows = static_cast<int>(nodes.size());
  screen.page_rows = paged ? std::max(0, height - kTitleLines - footer) : screen.total_rows;
  screen.first_row = std::clamp(state.scroll, 0, std::max(0, screen.total_rows - screen.page_rows));
  screen.shown_rows = std::min(screen.page_rows, screen.total_rows - screen.first_row);

  char full_scale[32];
  std::snprintf(full_scale, sizeof(full_scale), "%g", metric.full_scale);
  TopLine status;
  // A failed refresh comes first: on 80 columns it must not be cut off.
  if (!state.error.empty()) {
    status.spans.push_back(
        {std::string(state.updated > 0 ? "STALE: " : "ERROR: ") + state.error + " | ", TopStyle::kError});
  } else if (state.updated == 0) {
    status.spans.push_back({"waiting for the first answer | ", TopStyle::kNormal});
  }
  std::string state_text =
      "sort " + std::string(TopSortName(state.sort)) + " | filter " +
      (state.filter.empty() ? "none" : TopFilterText(state.filter)) + " | nodes " +
      (screen.total_rows == 0 ? "0"
                              : std::to_string(screen.first_row + 1) + "-" +
                                    std::to_string(screen.first_row + screen.shown_rows)) +
      " of " + std::to_string(screen.total_rows);
  if (!snapshot.fleet_alerts.empty()) state_text += " | fleet alerts: " + Join(snapshot.fleet_alerts, ", ");
  status.spans.push_back({state_text, TopStyle::kNormal});
  status.spans.push_back({" | 0-9: tenths of " + std::string(full_scale) + " " + metric.unit + " " +
                              metric.name + ", i idle, ! alert",
                          TopStyle::kDim});
  screen.lines.push_back(status);

  // Columns: node name (+ '!' marker), [model], GPU cells, jobs [, alerts].
  size_t name_width = 4;
  size_t max_gpus = 0;
  for (const TopNode* node : nodes) {
    name_width = std::max(name_width, node->hostname.size());
    max_gpus = std::max(max_gpus, node->gpus.size());
  }
  name_width = std::min<size_t>(name_width, wide ? 32 : 18);
  const size_t model_width = wide ? 16 : 0;
  const size_t cell_width = wide ? 5 : 3;
  const size_t before_cells = name_width + 2 + model_width;
  const size_t min_jobs = wide ? 30 : 12;
  size_t fit =
      width > static_cast<int>(before_cells + min_jobs) ? (width - before_cells - min_jobs) / cell_width : 1;
  const size_t cells = std::min(max_gpus, std::max<size_t>(fit, 1));

  TopLine columns;
  std::string header = Pad("NODE", name_width + 2) + (wide ? Pad("MODEL", model_width) : "");
  for (size_t i = 0; i < cells; ++i) {
    header += wide ? PadLeft(std::to_string(i), 3) + "  " : Pad(std::to_string(i), cell_width);
  }
  header += wide ? "JOB USER ACCOUNT/PARTITION NAME" : "JOBS";
  columns.spans.push_back({Pad(header, width), TopStyle::kHeader});
  screen.lines.push_back(columns);

  if (state.help && paged) {
    for (const std::string& line : HelpLines()) {
      if (static_cast<int>(screen.lines.size()) >= height - footer) break;
      screen.lines.push_back(TopLine{{{line, TopStyle::kNormal}}});
    }
  } else {
    for (int r = screen.first_row; r < screen.first_row + screen.shown_rows; ++r) {
      const TopNode& node = *nodes[r];
      TopLine row;
      const bool alert = node.HasAlert();
      row.spans.push_back({Pad(node.hostname, name_width), alert ? TopStyle::kAlert : TopStyle::kNormal});
      row.spans.push_back({alert ? "! " : "  ", alert ? TopStyle::kAlert : TopStyle::kNormal});
      if (wide) {
        std::string model = node.model;
        if (model.rfind("NVIDIA ", 0) == 0) model.erase(0, 7);
        row.spans.push_back({Pad(model, model_width - 1) + " ", TopStyle::kNormal});
      }
      for (size_t i = 0; i < cells; ++i) {
        if (i >= node.gpus.size()) {
          row.spans.push_back({std::string(cell_width, ' '), TopStyle::kNormal});
          continue;
        }
        const TopGpu& g = node.gpus[i];
        const int level = TopLevel(g.value, metric.full_scale);
        const char marker = g.HasAlert() ? '!' : g.allocated_idle ? 'i' : ' ';
        std::string value = level < 0 ? "-"
                            : wide    ? std::to_string(std::lround(g.value))
                                      : std::to_string(level);
        if (wide) value = PadLeft(value, 3);
        TopStyle style = g.HasAlert()       ? TopStyle::kAlert
                         : g.allocated_idle ? TopStyle::kIdle
                         : level < 0        ? TopStyle::kDim
                                            : HeatStyle(level);
        row.spans.push_back({value + marker, style});
        row.spans.push_back({i + 1 == cells && node.gpus.size() > cells ? "+" : " ", TopStyle::kNormal});
      }
      row.spans.push_back({JobsText(node, wide), TopStyle::kNormal});
      const std::vector<std::string> alerts = NodeAlertNames(node);
      if (wide && !alerts.empty()) row.spans.push_back({" ! " + Join(alerts, ", "), TopStyle::kAlert});
      screen.lines.push_back(row);
    }
  }

  if (paged) {
    while (static_cast<int>(screen.lines.size()) < height - footer) screen.lines.push_back(TopLine{});
    TopLine bottom;
    if (state.prompt) {
      bottom.spans.push_back({"filter (user= account= partition= words; empty clears): ", TopStyle::kHeader});
      bottom.spans.push_back({state.prompt_text + "_", TopStyle::kNormal});
    } else if (!state.message.empty()) {
      bottom.spans.push_back({state.message, TopStyle::kError});
    } else {
      bottom.spans.push_back(
          {"u m p t metric  s sort  / filter  c clear  + - refresh  ? help  q quit", TopStyle::kDim});
    }
    screen.lines.push_back(bottom);
  }
  for (TopLine& line : screen.lines) Clip(&line, width);
  if (paged && static_cast<int>(screen.lines.size()) > height) screen.lines.resize(std::max(0, height));
  return screen;
}

}  // namespace gpuscope
