// Small text helpers shared by the kernel-family classifiers (XID, OOM, Slurm lines): substring search,
// digit parsing and bounded, UTF-8-clean copies of fields. Internal to src/events/classifiers.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::kernel_text {

// Longest field value a classifier copies out of a line (messages, cgroup paths); shorter caps are used
// for names. A field longer than its cap is cut at a UTF-8 boundary.
inline constexpr size_t kMaxMessageBytes = 256;
inline constexpr size_t kMaxNameBytes = 64;

// Offset of `needle` in `hay` at or after `from`, or npos. Uses memmem (no allocation).
size_t Find(std::string_view hay, std::string_view needle, size_t from = 0);

inline bool Contains(std::string_view hay, std::string_view needle) {
  return Find(hay, needle) != std::string_view::npos;
}

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The leading run of decimal digits of `s` (possibly empty).
std::string_view LeadingDigits(std::string_view s);

// Parses a whole string of 1..19 decimal digits; nullopt when empty, not all digits or too long.
std::optional<uint64_t> ParseDecimal(std::string_view digits);

// A copy of at most `cap` bytes of `s` (cut at a sequence boundary) with control characters turned into
// spaces, invalid UTF-8 replaced by U+FFFD and surrounding spaces trimmed.
std::string CleanField(std::string_view s, size_t cap);

}  // namespace gpuscope::kernel_text
