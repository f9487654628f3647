#include "src/cli/top_command.h"

#include <curses.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/prometheus_flags.h"
#include "src/cli/top_fleet.h"
#include "src/cli/top_refresher.h"
#include "src/cli/top_view.h"

namespace gpuscope {
namespace {

// The refresh intervals + and - step through.
constexpr double kRefreshSteps[] = {1, 2, 5, 10, 15, 30, 60, 120};
constexpr double kMinRefreshSeconds = 0.5;

// ncurses colour pairs, by TopStyle.
enum Pair : short {
  kPairTitle = 1,
  kPairHeat0,
  kPairHeat1,
  kPairHeat2,
  kPairHeat3,
  kPairHeat4,
  kPairIdle,
  kPairAlert,
  kPairError
};

void InitColors() {
  start_color();
  const short background = use_default_colors() == OK ? -1 : COLOR_BLACK;
  init_pair(kPairTitle, COLOR_WHITE, COLOR_BLUE);
  init_pair(kPairHeat0, COLOR_WHITE, COLOR_BLUE);
  init_pair(kPairHeat1, COLOR_BLACK, COLOR_CYAN);
  init_pair(kPairHeat2, COLOR_BLACK, COLOR_GREEN);
  init_pair(kPairHeat3, COLOR_BLACK, COLOR_YELLOW);
  init_pair(kPairHeat4, COLOR_WHITE, COLOR_MAGENTA);
  init_pair(kPairIdle, COLOR_BLACK, COLOR_WHITE);
  init_pair(kPairAlert, COLOR_WHITE, COLOR_RED);
  init_pair(kPairError, COLOR_RED, background);
}

// The attributes of a style: colours when the terminal has them, else bold/reverse/underline (the cells'
// digits and markers carry the meaning either way).
attr_t StyleAttributes(TopStyle style, bool color) {
  switch (style) {
    case TopStyle::kNormal:
      return A_NORMAL;
    case TopStyle::kTitle:
      return color ? COLOR_PAIR(kPairTitle) | A_BOLD : A_REVERSE;
    case TopStyle::kHeader:
      return A_BOLD;
    case TopStyle::kHeat0:
      return color ? COLOR_PAIR(kPairHeat0) : A_NORMAL;
    case TopStyle::kHeat1:
      return color ? COLOR_PAIR(kPairHeat1) : A_NORMAL;
    case TopStyle::kHeat2:
      return color ? COLOR_PAIR(kPairHeat2) : A_NORMAL;
    case TopStyle::kHeat3:
      return color ? COLOR_PAIR(kPairHeat3) : A_NORMAL;
    case TopStyle::kHeat4:
      return color ? COLOR_PAIR(kPairHeat4) | A_BOLD : A_BOLD;
    case TopStyle::kIdle:
      return color ? COLOR_PAIR(kPairIdle) | A_BOLD : A_UNDERLINE;
    case TopStyle::kAlert:
      return color ? COLOR_PAIR(kPairAlert) | A_BOLD : A_REVERSE | A_BOLD;
    case TopStyle::kError:
      return color ? COLOR_PAIR(kPairError) | A_BOLD : A_BOLD;
    case TopStyle::kDim:
      return A_DIM;
  }
  return A_NORMAL;
}

void Paint(const TopScreen& screen, bool color) {
  erase();
  int rows = 0, cols = 0;
  getmaxyx(stdscr, rows, cols);
  for (int y = 0; y < static_cast<int>(screen.lines.size()) && y < rows; ++y) {
    int x = 0;
    for (const TopSpan& span : screen.lines[y].spans) {
      // The bottom-right cell is left alone: writing it would scroll some terminals.
      const int room = cols - x - (y == rows - 1 ? 1 : 0);
      if (room <= 0) break;
      attrset(StyleAttributes(span.style, color));
      mvaddnstr(y, x, span.text.c_str(), std::min<int>(room, static_cast<int>(span.text.size())));
      x += static_cast<int>(span.text.size());
    }
  }
  attrset(A_NORMAL);
  refresh();
}

double NextInterval(double current, bool longer) {
  if (longer) {
    for (double step : kRefreshSteps) {
      if (step > current) return step;
    }
    return current;
  }
  double result = current;
  for (double step : kRefreshSteps) {
    if (step < current) result = step;
  }
  return result;
}

// Applies one key to the view; false when the key quits.
bool HandleKey(int key, int page_rows, TopViewState* view, TopRefresher* refresher) {
  view->message.clear();
  if (view->prompt) {
    if (key == '\n' || key == '\r' || key == KEY_ENTER) {
      view->prompt = false;
      TopFilter filter;
      Status status = ParseTopFilter(view->prompt_text, &filter);
      if (status.ok()) {
        view->filter = filter;
        view->scroll = 0;
      } else {
        view->message = status.message();
      }
    } else if (key == 27) {
      view->prompt = false;
    } else if (key == 21) {  // Ctrl-U, as in a shell: clear the line
      view->prompt_text.clear();
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
      if (!view->prompt_text.empty()) view->prompt_text.pop_back();
    } else if (key >= 32 && key < 127) {
      view->prompt_text += static_cast<char>(key);
    }
    return true;
  }
  if (view->help && key != KEY_RESIZE) {
    view->help = false;
    return key != 'q';
  }
  auto metric = [&](TopMetric m) {
    view->metric = m;
    refresher->SetMetric(m);
  };
  switch (key) {
    case 'q':
    case 'Q':
      return false;
    case 'u':
      metric(TopMetric::kUtilization);
      break;
    case 'm':
      metric(TopMetric::kMemory);
      break;
    case 'p':
      metric(TopMetric::kPower);
      break;
    case 't':
      metric(TopMetric::kTemperature);
      break;
    case 's':
      view->sort = NextTopSort(view->sort);
      view->scroll = 0;
      break;
    case '/':
      view->prompt = true;
      view->prompt_text = TopFilterText(view->filter);
      break;
    case 'c':
      view->filter = TopFilter();
      view->scroll = 0;
      break;
    case '+':
    case '-': {
      view->refresh_seconds = NextInterval(view->refresh_seconds, key == '+');
      refresher->SetInterval(view->refresh_seconds);
      break;
    }
    case '?':
      view->help = true;
      break;
    case KEY_DOWN:
    case 'j':
      ++view->scroll;
      break;
    case KEY_UP:
    case 'k':
      view->scroll = std::max(0, view->scroll - 1);
      break;
    case KEY_NPAGE:
    case ' ':
      view->scroll += std::max(1, page_rows);
      break;
    case KEY_PPAGE:
      view->scroll = std::max(0, view->scroll - std::max(1, page_rows));
      break;
    case KEY_HOME:
    case 'g':
      view->scroll = 0;
      break;
    case KEY_END:
    case 'G':
      view->scroll = 1 << 30;  // the layout clamps it to the last page
      break;
    default:
      break;
  }
  return true;
}

// The interactive screen until q. Returns the exit code.
int RunInteractive(const std::shared_ptr<PrometheusClient>& prometheus, TopViewState view, bool allow_color) {
  TopRefresher refresher(
      [prometheus](const std::string& expr, double time, std::vector<PromSeries>* series) {
        return prometheus->Query(expr, time, series);
      },
      UnixNow, view.metric, view.refresh_seconds);

  set_escdelay(25);
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  timeout(100);  // getch waits at most 100 ms, so new snapshots show without a key
  const bool color = allow_color && has_colors();
  if (color) InitColors();

  TopRefresh latest;
  double painted_at = 0;
  bool dirty = true;
  int page_rows = 0;
  for (;;) {
    if (refresher.Latest(&latest)) {
      view.updated = latest.updated;
      view.error = latest.error;
      dirty = true;
    }
    const double now = UnixNow();
    if (dirty || now - painted_at >= 1) {  // once a second at least: the title's age
      int rows = 0, cols = 0;
      getmaxyx(stdscr, rows, cols);
      const TopScreen screen = LayoutTopScreen(latest.snapshot, view, cols, rows, now);
      view.scroll = screen.first_row;
      page_rows = screen.page_rows;
      Paint(screen, color);
      painted_at = now;
      dirty = false;
    }
    const int key = getch();
    if (key == ERR) continue;
    dirty = true;
    if (!HandleKey(key, page_rows, &view, &refresher)) break;
  }
  endwin();
  if (refresher.Stop()) return kExitOk;
  // A query is in flight (a slow Prometheus): do not wait up to --prometheus.timeout for it. The refresher's
  // thread holds what it uses; the process ends without running static destructors under it.
  std::fflush(stdout);
  std::_Exit(kExitOk);
}

int TerminalWidth() {
  struct winsize size {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

int RunTop(const CommandLine& line) {
  if (!line.positional.empty()) {
    std::cerr << "gpuscope top: takes no arguments (see gpuscope top --help)\n";
    return kExitUsage;
  }
  TopViewState view;
  if (!ParsePositiveSeconds(line.flags.at("refresh"), &view.refresh_seconds) ||
      view.refresh_seconds < kMinRefreshSeconds) {
    std::cerr << "gpuscope top: --refresh must be a number of seconds of at least 0.5\n";
    return kExitUsage;
  }
  if (!ParseTopMetric(line.flags.at("metric"), &view.metric)) {
    std::cerr << "gpuscope top: --metric must be util, memory, power or temperature, not '"
              << line.flags.at("metric") << "'\n";
    return kExitUsage;
  }
  if (!ParseTopSort(line.flags.at("sort"), &view.sort)) {
    std::cerr << "gpuscope top: --sort must be node, value or idle, not '" << line.flags.at("sort") << "'\n";
    return kExitUsage;
  }
  Status status = ParseTopFilter(line.flags.at("filter"), &view.filter);
  if (!status.ok()) {
    std::cerr << "gpuscope top: --filter: " << status.message() << "\n";
    return kExitUsage;
  }
  int width = 0;
  if (!line.flags.at("width").empty()) {
    char* end = nullptr;
    const long value = std::strtol(line.flags.at("width").c_str(), &end, 10);
    if (*end != '\0' || value < 20 || value > 1000) {
      std::cerr << "gpuscope top: --width must be a number of columns from 20 to 1000\n";
      return kExitUsage;
    }
    width = static_cast<int>(value);
  }
  std::unique_ptr<PrometheusClient> client;
  status = MakePrometheusClient(line, &client);
  if (!status.ok()) {
    std::cerr << "gpuscope top: " << status.message() << "\n";
    return kExitUsage;
  }
  std::shared_ptr<PrometheusClient> prometheus(std::move(client));

  if (line.flags.at("once") == "true") {
    const double now = UnixNow();
    FleetSnapshot snapshot;
    status = FetchFleetSnapshot(
        [&](const std::string& expr, std::vector<PromSeries>* series) {
          return prometheus->Query(expr, now, series);
        },
        view.metric, &snapshot);
    if (!status.ok()) {
      std::cerr << "gpuscope top: " << status.message() << "\n";
      return kExitFailed;
    }
    snapshot.time = now;
    view.updated = now;
    std::cout << LayoutTopScreen(snapshot, view, width > 0 ? width : TerminalWidth(), 0, now).Text();
    return kExitOk;
  }
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    std::cerr << "gpuscope top: needs a terminal (use --once to print one frame)\n";
    return kExitUsage;
  }
  return RunInteractive(prometheus, view, line.flags.at("no-color") != "true");
}

}  // namespace

Command TopCommand() {
  return {
      "top",
      "top [flags]",
      "live view of the fleet: GPUs by utilisation, memory, power or temperature, jobs, idle, alerts",
      "Shows every node's GPUs as cells coloured by the chosen metric, the jobs (user, account, partition)\n"
      "holding them, GPUs allocated but idle (i) and GPUs or nodes with firing alerts (!). Keys: u m p t\n"
      "metric, s sort, / filter (user= account= partition=), + - refresh interval, ? help, q quit.\n"
      "Each refresh runs 4 PromQL queries whatever the fleet's size.\n",
      WithPrometheusFlags({{"refresh", "seconds between refreshes (at least 0.5)", "5"},
                           {"metric", "util, memory, power or temperature", "util"},
                           {"sort", "node, value (highest first) or idle (most idle GPUs first)", "node"},
                           {"filter", "user=NAME account=NAME partition=NAME and words, space-separated", ""},
                           {"once", "print one frame as plain text (every node) and exit", "", false},
                           {"width", "columns of the --once frame (default: the terminal's, else 80)", ""},
                           {"no-color", "monochrome even when the terminal has colours", "", false}}),
      RunTop};
}

}  // namespace gpuscope
