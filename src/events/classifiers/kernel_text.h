// What the kernel-family classifiers (XID, OOM, Slurm lines) add to the shared text helpers
// (src/events/classifiers/text.h): their field caps and cleaning rule. Internal to src/events/classifiers.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "src/core/utf8.h"
#include "src/events/classifiers/text.h"

namespace gpuscope::kernel_text {

// Longest field value a classifier copies out of a line (messages, cgroup paths); shorter caps are used
// for names. A field longer than its cap is cut at a UTF-8 boundary.
inline constexpr size_t kMaxMessageBytes = 256;
inline constexpr size_t kMaxNameBytes = 64;

// Kernel fields: control characters become spaces, invalid UTF-8 becomes U+FFFD, surrounding spaces are
// trimmed and a long field is cut silently.
inline constexpr classifier_text::CleanRules kFieldRules{
    .trim = true, .control = ' ', .invalid_utf8 = kUtf8ReplacementChar, .cut_marker = {}};

// The leading run of decimal digits of `s` (possibly empty).
inline std::string_view LeadingDigits(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && classifier_text::IsDigit(s[n])) ++n;
  return s.substr(0, n);
}

// A copy of at most `cap` bytes of `s` cleaned by kFieldRules.
inline std::string CleanField(std::string_view s, size_t cap) {
  return classifier_text::Clean(s, cap, kFieldRules);
}

}  // namespace gpuscope::kernel_text
