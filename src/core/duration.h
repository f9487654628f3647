// Prometheus-style durations: "500ms", "1s", "1m30s", "2h", "1d" (units ms, s, m, h, d, w, y; no
// fractions, as in Prometheus' model.ParseDuration).
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/status.h"

namespace gpuscope {

// Returns nullopt for an empty, malformed or overflowing input.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);
std::string FormatDuration(std::chrono::milliseconds duration);

// ParseDuration for the setting `what` (a flag or a config key): on failure InvalidArgument
// "<what>: '<text>' is not a duration (e.g. 500ms, 1s, 1m30s)" and *out unchanged.
Status ParseDurationSetting(std::string_view text, std::string_view what, std::chrono::milliseconds* out);

}  // namespace gpuscope
