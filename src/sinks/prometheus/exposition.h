// Exposition: renders metric families as Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
//
// A histogram sample becomes its cumulative `_bucket{le="..."}` lines (+Inf last), `_count` and `_sum`;
// in OpenMetrics a bucket with an exemplar carries it as ` # {trace_id="..."} value timestamp` (exemplars
// over OpenMetrics' 128-character label limit are left out; text 0.0.4 has none).
//
// Output is always valid UTF-8 (bad bytes in help and label values become U+FFFD), numbers are
// formatted independently of the locale, and families or samples with invalid metric/label names are
// skipped and counted, never rendered.
//
// Thread-safety: pure functions; safe to call concurrently on the same (immutable) families.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "src/core/metric.h"
#include "src/core/snapshot.h"

namespace gpuscope {

enum class ExpositionFormat { kText004, kOpenMetrics100 };

// The Content-Type header value for `format`.
std::string_view ExpositionContentType(ExpositionFormat format);

// What the renderer had to leave out.
struct RenderStats {
  size_t skipped_families = 0;  // invalid family name
  size_t skipped_samples = 0;   // invalid or duplicate label name in the sample (`le` in a histogram's),
                                // a histogram sample without well-formed counts, or a sample of another
                                // kind than its family's first part (a histogram among gauges)
};

// Appends the families to `out` (no trailing "# EOF"; see FinishExposition). Families without samples
// are omitted. `stats` may be null.
void AppendFamilies(std::span<const MetricFamily> families, ExpositionFormat format, std::string& out,
                    RenderStats* stats);

// Appends the format's terminator: "# EOF\n" for OpenMetrics, nothing for text 0.0.4.
void FinishExposition(ExpositionFormat format, std::string& out);

// Renders a whole snapshot, terminator included; adjacent families of one name render as one family
// (HELP/TYPE/UNIT of the first, samples of all). `stats` may be null.
std::string RenderSnapshot(const Snapshot& snapshot, ExpositionFormat format, RenderStats* stats);

// Appends a sample value: integral values below 2^53 without exponent, otherwise the shortest
// round-trip form; NaN, +Inf and -Inf spelled as Prometheus does. Exposed for tests.
void AppendSampleValue(double value, std::string& out);

}  // namespace gpuscope
