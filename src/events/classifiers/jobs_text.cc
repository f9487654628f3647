#include "src/events/classifiers/jobs_text.h"

#include <cstring>
#include <limits>

#include "src/core/utf8.h"

namespace gpuscope::jobs_text {

std::string_view Head(std::string_view line) {
  return line.size() > kMaxParsedLine ? line.substr(0, kMaxParsedLine) : line;
}

std::size_t Find(std::string_view text, std::string_view needle, std::size_t from) {
  return text.find(needle, from);
}

std::optional<std::uint64_t> ParseUint(std::string_view text, std::size_t* consumed) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  if (consumed != nullptr) *consumed = i;
  return value;
}

std::optional<std::int64_t> ParseInt(std::string_view text, std::size_t* consumed) {
  const bool negative = !text.empty() && text[0] == '-';
  std::size_t digits = 0;
  const auto magnitude = ParseUint(negative ? text.substr(1) : text, &digits);
  if (!magnitude) return std::nullopt;
  if (*magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  if (consumed != nullptr) *consumed = digits + (negative ? 1 : 0);
  const auto value = static_cast<std::int64_t>(*magnitude);
  return negative ? -value : value;
}

std::optional<std::uint64_t> UintAfter(std::string_view text, std::string_view key) {
  const std::size_t pos = text.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  return ParseUint(text.substr(pos + key.size()));
}

std::optional<std::uint64_t> ParseByteSize(std::string_view text) {
  std::size_t int_digits = 0;
  const auto whole = ParseUint(text, &int_digits);
  if (!whole) return std::nullopt;
  std::size_t i = int_digits;
  // Fraction: at most 6 digits kept, in millionths, so the arithmetic stays exact in integers.
  std::uint64_t micro = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::uint64_t scale = 100000;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      micro += static_cast<std::uint64_t>(text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  std::uint64_t multiplier = 0;
  if (unit.starts_with("bytes") || unit.starts_with("B")) {
    multiplier = 1;
  } else if (unit.starts_with("KiB")) {
    multiplier = 1ULL << 10;
  } else if (unit.starts_with("MiB")) {
    multiplier = 1ULL << 20;
  } else if (unit.starts_with("GiB")) {
    multiplier = 1ULL << 30;
  } else if (unit.starts_with("TiB")) {
    multiplier = 1ULL << 40;
  } else {
    return std::nullopt;
  }
  // Capacity of one GPU fits easily; reject absurd values rather than overflow.
  if (*whole > (std::numeric_limits<std::uint64_t>::max() / multiplier) / 2) return std::nullopt;
  // Rounded to the nearest byte: "2.00 GiB" is exactly 2 GiB, "79.15 GiB" is 79.15 * 2^30.
  const unsigned __int128 frac = static_cast<unsigned __int128>(micro) * multiplier + 500000;
  return *whole * multiplier + static_cast<std::uint64_t>(frac / 1000000);
}

std::string Sanitize(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes + 3);
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t len = ValidUtf8Length(text, i);
    const std::size_t emit = len == 0 ? 1 : len;
    if (out.size() + emit > max_bytes) {
      out += "...";
      return out;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7F))) {
      out.push_back(c == '\t' ? ' ' : '?');
    } else {
      out.append(text.substr(i, len));
    }
    i += emit;
  }
  return out;
}

std::string_view Trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const std::size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const std::size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

}  // namespace gpuscope::jobs_text
