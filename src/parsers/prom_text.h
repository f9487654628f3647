// Parses the Prometheus text exposition format 0.0.4 as node_exporter's textfile collector reads it
// (https://prometheus.io/docs/instrumenting/exposition_formats/), into the agent's metric model
// (src/core/metric.h), for the textfile collector (src/collectors/textfile/), and the agent's own /metrics
// for `gpuscope check` (src/cli/check_findings.h).
//
// Accepted: "# HELP name text" (escapes \\ and \n), "# TYPE name counter|gauge|untyped", other "#" lines
// (comments), blank lines, and samples "name{label="value",...} value" (label value escapes \\, \" and
// \n; an optional trailing comma; values are decimal or exponent floats, NaN, +Inf, -Inf). A sample
// belongs to the family of exactly its name; a name without TYPE is untyped (MetricType::kUnknown).
// Refused with an error naming the line: invalid UTF-8; a histogram or summary TYPE (the metric model has
// histograms since 2026-12, but a textfile histogram would need its _bucket, _sum and _count lines
// gathered into one value and checked for consistency, which nobody has asked for; summaries it has not); an
// explicit timestamp after the value (the agent stamps every sample with its own clock, as node_exporter
// refuses them too); HELP or TYPE given twice for a name, or after its first sample; an invalid metric or
// label name (labels starting "__" included); a label named twice; the same series twice; samples of one
// family with different label names (the metric model keeps one label set per family). Labels keep the order
// of the family's first sample.
//
// Two options for a reader that only looks up gauges and counters in a whole exposition, as `gpuscope
// check` does the agent's: with histograms_as_untyped a histogram or summary TYPE is not refused: the
// family is read as untyped and its lines as the plain series they are (x_bucket, x_sum and x_count each
// a family of that name; a summary's quantile lines in x). With mixed_label_names the samples of one family
// may have different label names (the agent's GPU series and its MIG instances' series with GPU_I_ID in
// one family, as dcgm-exporter writes them); each sample keeps its own labels in the order given, and
// the same series twice (in any label order) is still refused.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

struct PromTextParse {
  std::vector<MetricFamily> families;  // in order of first appearance; help empty where none was given
  std::string error;                   // "line N: what is wrong"; empty on success (families are then valid)
};

struct PromTextOptions {
  bool histograms_as_untyped = false;  // see above; the textfile collector keeps refusing them
  bool mixed_label_names = false;      // see above; the textfile collector keeps one label set per family
};

// All of `text` or nothing: on an error `families` is empty.
PromTextParse ParsePromText(std::string_view text, const PromTextOptions& options = {});

}  // namespace gpuscope
