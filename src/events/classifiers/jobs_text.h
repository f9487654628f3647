// What the "jobs" classifiers (NCCL, PyTorch, CUDA lines from training jobs) add to the shared text
// helpers (src/events/classifiers/text.h): line and field caps, their cleaning rule, and parsers of
// job-log values. Not part of the public interface; include only from src/events/classifiers/*.cc.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/events/classifiers/text.h"

namespace gpuscope::jobs_text {

// Longest prefix of a line that the detailed parsers look at; a megabyte line is classified by its head.
inline constexpr std::size_t kMaxParsedLine = 16 * 1024;
// Longest value copied into an Event field or summary, in bytes (before any "..." marker).
inline constexpr std::size_t kMaxFieldBytes = 256;
inline constexpr std::size_t kMaxMessageBytes = 1024;

// Job fields: invalid UTF-8 bytes and control characters become '?' (a tab a space), no trimming, and a
// cut field ends in "...".
inline constexpr classifier_text::CleanRules kFieldRules{
    .trim = false, .control = '?', .invalid_utf8 = "?", .cut_marker = "..."};

// The line cut to kMaxParsedLine bytes.
inline std::string_view Head(std::string_view line) {
  return line.size() > kMaxParsedLine ? line.substr(0, kMaxParsedLine) : line;
}

// Parses the digits right after `key` at its first occurrence in `text`, e.g. ("rank 3 ...", "rank ").
std::optional<std::uint64_t> UintAfter(std::string_view text, std::string_view key);

// The word after the first `key` in `text`, up to any byte of `stops` (e.g. ("localGid fe80::1 x",
// "localGid ") -> "fe80::1"), or empty when `key` is absent.
std::string_view WordAfter(std::string_view text, std::string_view key, std::string_view stops = " ,");

// Parses a PyTorch memory size such as "2.00 GiB", "20.00 MiB", "512 bytes" or "1.5 KiB" into bytes
// (binary units, as PyTorch's format_size prints them). nullopt when `text` does not start with one.
std::optional<std::uint64_t> ParseByteSize(std::string_view text);

// The ibv_wc_status enumerator name of a verbs completion status ("IBV_WC_RETRY_EXC_ERR" for 12), or
// "unknown" past the last one rdma-core defines.
std::string_view IbvWcStatusName(std::uint64_t status);

// A copy of `text` cut to `max_bytes` (at a UTF-8 boundary, "..." appended when cut), cleaned by
// kFieldRules. Never allocates more than max_bytes + 3.
inline std::string Sanitize(std::string_view text, std::size_t max_bytes = kMaxFieldBytes) {
  return classifier_text::Clean(text, max_bytes, kFieldRules);
}

}  // namespace gpuscope::jobs_text
