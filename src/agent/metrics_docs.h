// Renders docs/metrics.md from the collectors' own descriptions, so the reference cannot drift from
// the code (a test compares the committed file with this output).
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

struct CollectorDocs {
  std::string name;
  std::string help;
  std::vector<MetricDescription> metrics;
};

std::string RenderMetricsDocs(const std::vector<CollectorDocs>& collectors);

}  // namespace gpuscope
