// Prometheus-style durations: "500ms", "1s", "1m30s", "2h", "1d" (units ms, s, m, h, d, w, y; no
// fractions, as in Prometheus' model.ParseDuration).
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope {

// Returns nullopt for an empty, malformed or overflowing input.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace gpuscope
