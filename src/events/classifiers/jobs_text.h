// Internal helpers shared by the "jobs" classifiers (NCCL, PyTorch, CUDA lines from training jobs):
// bounded substring search, number parsing and capped, UTF-8-safe copies of untrusted text.
// Not part of the public interface; include only from src/events/classifiers/*.cc.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::jobs_text {

// Longest prefix of a line that the detailed parsers look at; a megabyte line is classified by its head.
inline constexpr std::size_t kMaxParsedLine = 16 * 1024;
// Longest value copied into an Event field or summary, in bytes (before any "..." marker).
inline constexpr std::size_t kMaxFieldBytes = 256;
inline constexpr std::size_t kMaxMessageBytes = 1024;

// The line cut to kMaxParsedLine bytes.
std::string_view Head(std::string_view line);

// Position of `needle` in `text`, or npos.
std::size_t Find(std::string_view text, std::string_view needle, std::size_t from = 0);

// Parses leading decimal digits of `text` (no sign). Returns nullopt when there is no digit or the value
// overflows uint64. On success `consumed` (if given) receives the number of digits read.
std::optional<std::uint64_t> ParseUint(std::string_view text, std::size_t* consumed = nullptr);

// Parses a signed decimal integer (optional leading '-'); nullopt when absent or out of range.
std::optional<std::int64_t> ParseInt(std::string_view text, std::size_t* consumed = nullptr);

// Parses the digits right after `key` at its first occurrence in `text`, e.g. ("rank 3 ...", "rank ").
std::optional<std::uint64_t> UintAfter(std::string_view text, std::string_view key);

// Parses a PyTorch memory size such as "2.00 GiB", "20.00 MiB", "512 bytes" or "1.5 KiB" into bytes
// (binary units, as PyTorch's format_size prints them). nullopt when `text` does not start with one.
std::optional<std::uint64_t> ParseByteSize(std::string_view text);

// A copy of `text` cut to `max_bytes` (at a UTF-8 boundary, "..." appended when cut), with invalid UTF-8
// bytes and control characters replaced by '?'. Never allocates more than max_bytes + 3.
std::string Sanitize(std::string_view text, std::size_t max_bytes = kMaxFieldBytes);

// `text` without leading and trailing spaces, tabs, CR and LF.
std::string_view Trim(std::string_view text);

}  // namespace gpuscope::jobs_text
