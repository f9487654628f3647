// Text helpers shared by both classifier families (kernel lines in kernel_text.h, training-job lines in
// jobs_text.h): substring search, decimal parsing and bounded, UTF-8-clean copies of untrusted fields.
// The families differ only in how a field is cleaned; each names its rules (CleanRules) in its own
// header. Internal to src/events/classifiers.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::classifier_text {

// Offset of `needle` in `hay` at or after `from`, or npos (also for an empty needle). Uses memmem (no
// allocation).
std::size_t Find(std::string_view hay, std::string_view needle, std::size_t from = 0);

inline bool Contains(std::string_view hay, std::string_view needle) {
  return Find(hay, needle) != std::string_view::npos;
}

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses the leading decimal digits of `text` (no sign). nullopt when there is no digit or the value
// overflows uint64. On success `consumed` (if given) receives the number of digits read.
std::optional<std::uint64_t> ParseUint(std::string_view text, std::size_t* consumed = nullptr);

// Parses a whole string of 1..19 decimal digits; nullopt when empty, not all digits or too long.
inline std::optional<std::uint64_t> ParseDecimal(std::string_view digits) {
  if (digits.size() > 19) return std::nullopt;
  std::size_t consumed = 0;
  const auto value = ParseUint(digits, &consumed);
  if (!value || consumed != digits.size()) return std::nullopt;
  return value;
}

// How Clean() turns untrusted text into a field value. A tab always becomes a space.
struct CleanRules {
  // Drop leading spaces and tabs of the input and trailing spaces of the result.
  bool trim = false;
  // Replacement for the other ASCII control characters (0x00-0x1F, 0x7F).
  char control = ' ';
  // Replacement for each byte that does not start a valid UTF-8 sequence.
  std::string_view invalid_utf8;
  // Appended when the text is cut because the next character would pass max_bytes.
  std::string_view cut_marker;
};

// A copy of `text` of at most `max_bytes` bytes (cut before the first character, or replacement, that
// would not fit; rules.cut_marker is then appended), cleaned by `rules`. Never reserves more than
// max_bytes + rules.cut_marker.size().
std::string Clean(std::string_view text, std::size_t max_bytes, const CleanRules& rules);

}  // namespace gpuscope::classifier_text
