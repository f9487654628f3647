#include "src/cli/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace gpuscope {

bool ParseFiniteNumber(std::string_view text, double* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && std::isfinite(*value);
}

namespace {

bool ParseDigits(std::string_view text, int* value) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Days from 1970-01-01 to the civil date (proleptic Gregorian, UTC), without the C library's time zone.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// "YYYY-MM-DD" -> days since the epoch.
bool ParseDate(std::string_view text, int64_t* days) {
  int y = 0, m = 0, d = 0;
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  if (!ParseDigits(text.substr(0, 4), &y) || !ParseDigits(text.substr(5, 2), &m) ||
      !ParseDigits(text.substr(8, 2), &d)) {
    return false;
  }
  if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) return false;
  *days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return true;
}

// "HH:MM[:SS[.fff]]" -> seconds of the day.
bool ParseClock(std::string_view text, double* seconds) {
  int h = 0, mi = 0;
  double s = 0;
  if (text.size() < 5 || text[2] != ':') return false;
  if (!ParseDigits(text.substr(0, 2), &h) || !ParseDigits(text.substr(3, 2), &mi)) return false;
  if (text.size() > 5) {
    if (text[5] != ':' || text.size() < 8) return false;
    std::string_view sec = text.substr(6);
    int whole = 0;
    if (!ParseDigits(sec.substr(0, 2), &whole)) return false;
    if (sec.size() > 2 && (sec[2] != '.' || !ParseFiniteNumber(sec, &s))) return false;
    if (sec.size() == 2) s = whole;
  }
  if (h > 23 || mi > 59 || s < 0 || s >= 61) return false;
  *seconds = h * 3600.0 + mi * 60.0 + s;
  return true;
}

}  // namespace

Status ParseMonth(std::string_view text, TimeRange* range) {
  int y = 0, m = 0;
  if (text.size() != 7 || text[4] != '-' || !ParseDigits(text.substr(0, 4), &y) ||
      !ParseDigits(text.substr(5, 2), &m) || m < 1 || m > 12) {
    return Status::InvalidArgument("--month wants YYYY-MM (e.g. 2026-11), not '" + std::string(text) + "'");
  }
  const int next_y = m == 12 ? y + 1 : y;
  const int next_m = m == 12 ? 1 : m + 1;
  range->from = static_cast<double>(DaysFromCivil(y, static_cast<unsigned>(m), 1)) * 86400.0;
  range->to = static_cast<double>(DaysFromCivil(next_y, static_cast<unsigned>(next_m), 1)) * 86400.0;
  return Status::Ok();
}

Status ParseTimestamp(std::string_view text, double* unix_seconds) {
  Status bad = Status::InvalidArgument(
      "'" + std::string(text) +
      "' is not a time: use 2026-11-03, 2026-11-03T12:00:00Z, 2026-11-03T12:00:00+01:00 or Unix seconds");
  int64_t days = 0;
  if (text.size() >= 10 && text[4] == '-') {
    if (!ParseDate(text.substr(0, 10), &days)) return bad;
    double seconds = 0;
    if (text.size() > 10) {
      if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') return bad;
      std::string_view rest = text.substr(11);
      double offset = 0;
      if (!rest.empty() && (rest.back() == 'Z' || rest.back() == 'z')) {
        rest.remove_suffix(1);
      } else if (rest.size() > 6 && (rest[rest.size() - 6] == '+' || rest[rest.size() - 6] == '-')) {
        double zone = 0;
        if (!ParseClock(rest.substr(rest.size() - 5), &zone)) return bad;
        offset = rest[rest.size() - 6] == '+' ? zone : -zone;
        rest.remove_suffix(6);
      } else {
        return bad;  // a time of day without a zone is ambiguous
      }
      if (!ParseClock(rest, &seconds)) return bad;
      seconds -= offset;
    }
    *unix_seconds = static_cast<double>(days) * 86400.0 + seconds;
    return Status::Ok();
  }
  double value = 0;
  if (!ParseFiniteNumber(text, &value) || value < 0) return bad;
  *unix_seconds = value;
  return Status::Ok();
}

std::string FormatUtc(double unix_seconds, const char* strftime_format) {
  const std::time_t t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[128];
  return std::string(buffer, std::strftime(buffer, sizeof(buffer), strftime_format, &tm));
}

std::string FormatFixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

}  // namespace gpuscope
