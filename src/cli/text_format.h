// Times and numbers as people type and read them on the `gpuscope` command line: --from/--to/--month
// values, UTC timestamps in reports, fixed-point figures. One set for every command, so `2026-11-03` means
// the same to chargeback, inventory and job. Times are UTC throughout (the C library's time zone is never
// consulted).
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>

#include "src/core/status.h"

namespace gpuscope {

// A time range in Unix seconds, from < to.
struct TimeRange {
  double from = 0;
  double to = 0;
};

// "2026-11-03", "2026-11-03T12:00:00Z", "2026-11-03T12:00:00+01:00" (RFC 3339, seconds optional
// fractions) or Unix seconds ("1793750400"). InvalidArgument (the message says the accepted forms)
// otherwise, including a time of day without a zone and a date that does not exist (2026-02-30).
Status ParseTimestamp(std::string_view text, double* unix_seconds);

// "2026-11" -> [2026-11-01T00:00:00Z, 2026-12-01T00:00:00Z). InvalidArgument otherwise.
Status ParseMonth(std::string_view text, TimeRange* range);

// Unix seconds as UTC in a strftime format; by default RFC 3339 ("2026-11-03T12:00:00Z"). Fractions of
// a second are dropped (floor).
inline constexpr const char* kRfc3339Utc = "%Y-%m-%dT%H:%M:%SZ";
std::string FormatUtc(double unix_seconds, const char* strftime_format = kRfc3339Utc);

// "12.50" for (12.5, 2): printf's %.*f.
std::string FormatFixed(double value, int decimals);

// A whole string that is a finite decimal number ("12", "0.25", "1e3"); false for anything else.
bool ParseFiniteNumber(std::string_view text, double* value);

}  // namespace gpuscope
