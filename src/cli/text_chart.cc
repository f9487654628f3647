#include "src/cli/text_chart.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpuscope {
namespace {

// Lower one-eighth block U+2581 .. full block U+2588, as UTF-8.
const char* const kSparkUnicode[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                     "\u2585", "\u2586", "\u2587", "\u2588"};
const char kSparkAscii[] = "_.-=+*#@";
// Left one-eighth block U+258F .. left seven-eighths U+2589; index = eighths - 1.
const char* const kBarEighths[] = {"\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589"};
const char kFullBlock[] = "\u2588";

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

const char* EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

ChartStyle ChooseChartStyle(bool is_tty, bool utf8_locale, bool no_color) {
  if (!is_tty || no_color) return ChartStyle::kPlain;
  return utf8_locale ? ChartStyle::kUnicode : ChartStyle::kAscii;
}

bool LocaleIsUtf8(const std::string& lc_all, const std::string& lc_ctype, const std::string& lang) {
  const std::string& locale = !lc_all.empty() ? lc_all : !lc_ctype.empty() ? lc_ctype : lang;
  const std::string lower = Lower(locale);
  return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
}

int ChooseColumns(int window_columns, const std::string& columns_env) {
  if (window_columns > 0) return window_columns;
  char* end = nullptr;
  const long columns = std::strtol(columns_env.c_str(), &end, 10);
  if (!columns_env.empty() && *end == '\0' && columns > 0 && columns < 100000)
    return static_cast<int>(columns);
  return 80;
}

Terminal DetectTerminal(int fd, bool no_color) {
  Terminal terminal;
  terminal.is_tty = isatty(fd) == 1;
  winsize size{};
  const int window_columns = terminal.is_tty && ioctl(fd, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  terminal.columns = ChooseColumns(window_columns, EnvOrEmpty("COLUMNS"));
  const bool utf8 = LocaleIsUtf8(EnvOrEmpty("LC_ALL"), EnvOrEmpty("LC_CTYPE"), EnvOrEmpty("LANG"));
  terminal.style = ChooseChartStyle(terminal.is_tty, utf8, no_color || EnvOrEmpty("NO_COLOR")[0] != '\0');
  return terminal;
}

std::string Bar(double fraction, int width, ChartStyle style) {
  if (style == ChartStyle::kPlain || width <= 0) return "";
  if (std::isnan(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  std::string out;
  if (style == ChartStyle::kAscii) {
    const int full = static_cast<int>(std::lround(fraction * width));
    out.append(full, '#');
    out.append(width - full, '.');
    return out;
  }
  const long eighths = std::lround(fraction * width * 8);
  const int full = static_cast<int>(eighths / 8);
  const int rest = static_cast<int>(eighths % 8);
  for (int i = 0; i < full; ++i) out += kFullBlock;
  int cells = full;
  if (rest > 0) {
    out += kBarEighths[rest - 1];
    ++cells;
  }
  out.append(width - cells, ' ');
  return out;
}

std::vector<double> Resample(const std::vector<double>& values, int width) {
  if (width <= 0) return {};
  const size_t n = values.size();
  if (n <= static_cast<size_t>(width)) return values;
  std::vector<double> out(width);
  for (int b = 0; b < width; ++b) {
    // Bucket b holds values [n*b/width, n*(b+1)/width): every value in exactly one bucket.
    const size_t begin = n * b / width;
    const size_t end = n * (b + 1) / width;
    double sum = 0;
    int count = 0;
    for (size_t i = begin; i < end; ++i) {
      if (std::isfinite(values[i])) {
        sum += values[i];
        ++count;
      }
    }
    out[b] = count > 0 ? sum / count : std::nan("");
  }
  return out;
}

std::string Sparkline(const std::vector<double>& values, double lo, double hi, int width, ChartStyle style) {
  if (style == ChartStyle::kPlain) return "";
  std::string out;
  for (double v : Resample(values, width)) {
    if (!std::isfinite(v)) {
      out += ' ';
      continue;
    }
    const double scaled = hi > lo ? (std::clamp(v, lo, hi) - lo) / (hi - lo) : 0.0;
    const int level = std::min(7, static_cast<int>(scaled * 8));
    if (style == ChartStyle::kUnicode) {
      out += kSparkUnicode[level];
    } else {
      out += kSparkAscii[level];
    }
  }
  return out;
}

std::string Colored(const std::string& text, const char* sgr, ChartStyle style) {
  if (style == ChartStyle::kPlain) return text;
  return std::string("\x1b[") + sgr + "m" + text + "\x1b[0m";
}

int DisplayWidth(const std::string& text) {
  int width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b && i + 1 < text.size() && text[i + 1] == '[') {
      // CSI: ESC [ parameters, ended by a byte in @..~.
      i += 2;
      while (i < text.size() && (text[i] < '@' || text[i] > '~')) ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes only
  }
  return width;
}

}  // namespace gpuscope
