// Text charts for the terminal: horizontal bars and sparklines, drawn with Unicode block elements on a
// UTF-8 terminal, with ASCII characters on any other terminal, and not at all (plain numbers) when the
// output is not a terminal or colour is switched off (--no-color, or NO_COLOR set to anything non-empty,
// as https://no-color.org asks). The drawing functions are pure; DetectTerminal() is the one place
// that asks the OS (isatty, the window size, the locale and NO_COLOR from the environment).
//
// Thread-safety: free functions; DetectTerminal() reads the environment, which nothing may set meanwhile.
#pragma once

#include <string>
#include <vector>

namespace gpuscope {

enum class ChartStyle {
  kUnicode,  // block elements (U+2581..U+2588, U+258F..U+2589), in colour
  kAscii,    // ASCII characters, in colour
  kPlain,    // no chart: callers print the numbers
};

struct Terminal {
  bool is_tty = false;
  ChartStyle style = ChartStyle::kPlain;
  int columns = 80;
};

// The style for an output: kPlain unless it is a terminal and colour is allowed; then kUnicode when the
// locale's character set is UTF-8, else kAscii.
ChartStyle ChooseChartStyle(bool is_tty, bool utf8_locale, bool no_color);

// Whether the locale the C library would use is UTF-8: the first non-empty of LC_ALL, LC_CTYPE, LANG
// names a UTF-8 character set ("C.UTF-8", "en_US.utf8"). Empty or "C"/"POSIX": false.
bool LocaleIsUtf8(const std::string& lc_all, const std::string& lc_ctype, const std::string& lang);

// Columns to draw in: the window size when known (> 0), else $COLUMNS when it is a positive number,
// else 80.
int ChooseColumns(int window_columns, const std::string& columns_env);

// The terminal on file descriptor `fd` (1 for stdout), from isatty, TIOCGWINSZ, LC_ALL/LC_CTYPE/LANG,
// COLUMNS and NO_COLOR; `no_color` is the command's --no-color.
Terminal DetectTerminal(int fd, bool no_color);

// A bar `width` cells wide filled to `fraction` (clamped to 0..1; NaN draws empty): Unicode in eighths
// of a cell ("███▍    "), ASCII as '#' and '.' ("###.....") rounded to whole cells. Exactly `width`
// cells either way. kPlain: "" (the caller prints the number).
std::string Bar(double fraction, int width, ChartStyle style);

// Reduces `values` to at most `width` buckets of consecutive values, each the mean of its finite values
// (NaN when it has none: a gap). Fewer values than `width` are returned as they are.
std::vector<double> Resample(const std::vector<double>& values, int width);

// A sparkline of `values` resampled to `width` cells on the scale lo..hi (values clamped to it; a
// NaN is a gap, drawn as a space): eight levels, "▁▂▃▄▅▆▇█" in Unicode and "_.-=+*#@" in ASCII.
// kPlain: "".
std::string Sparkline(const std::vector<double>& values, double lo, double hi, int width, ChartStyle style);

// `text` in ANSI colour `sgr` ("36" cyan) unless style is kPlain.
std::string Colored(const std::string& text, const char* sgr, ChartStyle style);

// The number of terminal cells `text` takes: UTF-8 code points, ANSI escape sequences not counted.
int DisplayWidth(const std::string& text);

}  // namespace gpuscope
