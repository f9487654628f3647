#include "src/events/classifiers/kernel_text.h"

#include <string.h>

#include <charconv>

#include "src/core/utf8.h"

namespace gpuscope::kernel_text {

size_t Find(std::string_view hay, std::string_view needle, size_t from) {
  if (needle.empty() || from > hay.size() || hay.size() - from < needle.size()) return std::string_view::npos;
  const void* hit = memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  if (hit == nullptr) return std::string_view::npos;
  return static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
}

std::string_view LeadingDigits(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && IsDigit(s[n])) ++n;
  return s.substr(0, n);
}

std::optional<uint64_t> ParseDecimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 19) return std::nullopt;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::string CleanField(std::string_view s, size_t cap) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  std::string out;
  out.reserve(s.size() < cap ? s.size() : cap);
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (out.size() + 1 > cap) break;
      out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
      ++i;
      continue;
    }
    size_t len = ValidUtf8Length(s, i);
    if (len == 0) {
      if (out.size() + kUtf8ReplacementChar.size() > cap) break;
      out.append(kUtf8ReplacementChar);
      ++i;
      continue;
    }
    if (out.size() + len > cap) break;
    out.append(s.substr(i, len));
    i += len;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace gpuscope::kernel_text
