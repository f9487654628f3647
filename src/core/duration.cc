#include "src/core/duration.h"

#include <cstdint>
#include <limits>

namespace gpuscope {

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (text == "0") return std::chrono::milliseconds(0);
  struct Unit {
    std::string_view name;
    int64_t millis;
  };
  // Longest names first so that "ms" is not read as "m".
  static constexpr Unit kUnits[] = {
      {"ms", 1},         {"s", 1000},        {"m", 60'000},        {"h", 3'600'000},
      {"d", 86'400'000}, {"w", 604'800'000}, {"y", 31'536'000'000}};
  int64_t total = 0;
  size_t i = 0;
  int64_t last_unit_millis = std::numeric_limits<int64_t>::max();
  while (i < text.size()) {
    int64_t number = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (number > (std::numeric_limits<int64_t>::max() - 9) / 10) return std::nullopt;
      number = number * 10 + (text[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    int rank = -1;
    for (int u = 0; u < static_cast<int>(std::size(kUnits)); ++u) {
      if (text.substr(i).starts_with(kUnits[u].name)) {
        rank = u;
        break;
      }
    }
    if (rank < 0) return std::nullopt;
    // Units must go from largest to smallest, each at most once ("1m30s", not "30s1m").
    if (kUnits[rank].millis >= last_unit_millis) return std::nullopt;
    last_unit_millis = kUnits[rank].millis;
    if (number > std::numeric_limits<int64_t>::max() / kUnits[rank].millis) return std::nullopt;
    int64_t add = number * kUnits[rank].millis;
    if (total > std::numeric_limits<int64_t>::max() - add) return std::nullopt;
    total += add;
    i += kUnits[rank].name.size();
  }
  return std::chrono::milliseconds(total);
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  int64_t ms = duration.count();
  if (ms == 0) return "0s";
  std::string out;
  struct Unit {
    const char* name;
    int64_t millis;
  };
  static constexpr Unit kUnits[] = {{"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};
  for (const Unit& unit : kUnits) {
    if (ms >= unit.millis) {
      out += std::to_string(ms / unit.millis) + unit.name;
      ms %= unit.millis;
    }
  }
  return out;
}

Status ParseDurationSetting(std::string_view text, std::string_view what, std::chrono::milliseconds* out) {
  std::optional<std::chrono::milliseconds> parsed = ParseDuration(text);
  if (!parsed) {
    return Status::InvalidArgument(std::string(what) + ": '" + std::string(text) +
                                   "' is not a duration (e.g. 500ms, 1s, 1m30s)");
  }
  *out = *parsed;
  return Status::Ok();
}

}  // namespace gpuscope
