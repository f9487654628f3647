#include "src/events/classifiers/text.h"

#include <string.h>

#include <limits>

#include "src/core/utf8.h"

namespace gpuscope::classifier_text {

std::size_t Find(std::string_view hay, std::string_view needle, std::size_t from) {
  if (needle.empty() || from > hay.size() || hay.size() - from < needle.size()) return std::string_view::npos;
  const void* hit = memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  if (hit == nullptr) return std::string_view::npos;
  return static_cast<std::size_t>(static_cast<const char*>(hit) - hay.data());
}

std::optional<std::uint64_t> ParseUint(std::string_view text, std::size_t* consumed) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  while (i < text.size() && IsDigit(text[i])) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  if (consumed != nullptr) *consumed = i;
  return value;
}

std::string Clean(std::string_view text, std::size_t max_bytes, const CleanRules& rules) {
  if (rules.trim) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  }
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes + rules.cut_marker.size());
  bool cut = false;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (out.size() + 1 > max_bytes) {
        cut = true;
        break;
      }
      out.push_back(c == '\t' ? ' ' : c < 0x20 || c == 0x7F ? rules.control : static_cast<char>(c));
      ++i;
      continue;
    }
    const std::size_t len = ValidUtf8Length(text, i);
    const std::string_view emit = len == 0 ? rules.invalid_utf8 : text.substr(i, len);
    if (out.size() + emit.size() > max_bytes) {
      cut = true;
      break;
    }
    out.append(emit);
    i += len == 0 ? 1 : len;
  }
  if (rules.trim) {
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  if (cut) out.append(rules.cut_marker);
  return out;
}

}  // namespace gpuscope::classifier_text
