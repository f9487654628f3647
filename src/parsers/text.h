// Small text helpers the pure parsers share: ASCII classes, trimming, whole-string number parsing.
//
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpuscope::text {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// `s` without leading and trailing spaces, tabs, CR and LF.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The pieces of `s` between `separator`s, empty ones included ("a,,b" -> a, "", b; "" -> one empty piece).
inline std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(separator, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// All of `s` as a number of type T in `base`; nullopt when empty, partial, or out of range.
template <typename T>
std::optional<T> ParseWhole(std::string_view s, int base = 10) {
  if (s.empty()) return std::nullopt;
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace gpuscope::text
