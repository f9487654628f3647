// UTF-8 validation shared by everything that writes text for others to parse (exposition, logs): bad
// bytes are replaced with U+FFFD so the output is always valid UTF-8.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuscope {

inline constexpr std::string_view kUtf8ReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when the byte at s[i] does
// not start one: stray continuation byte, overlong form, surrogate, beyond U+10FFFF, truncated sequence.
size_t ValidUtf8Length(std::string_view s, size_t i);

// True when all of `s` is valid UTF-8 (NUL is valid).
bool IsValidUtf8(std::string_view s);

// `s` with each byte that does not start a valid sequence replaced by U+FFFD; valid text (NUL included)
// is kept byte for byte.
std::string ToValidUtf8(std::string_view s);

}  // namespace gpuscope
