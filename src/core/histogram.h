// Histogram: observations counted into fixed buckets, with per bucket the exemplar of the latest
// observation that fell in it, read out as the HistogramValue a histogram sample carries (metric.h).
// Memory is fixed by the buckets: a count and an exemplar slot per bucket, whatever is observed.
//
// Thread-safety: none; the owner serialises Observe() and Value().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

class Histogram {
 public:
  explicit Histogram(std::shared_ptr<const HistogramBuckets> buckets);

  // Counts `value` into the first bucket whose bound is >= it (+Inf past the last; NaN is ignored).
  // A non-empty `exemplar` replaces the bucket's previous one.
  void Observe(double value, Exemplar exemplar = {});

  // The cumulative counts, the sum and the exemplars so far (exemplars left out when none was given).
  std::shared_ptr<const HistogramValue> Value() const;

  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::shared_ptr<const HistogramBuckets> buckets_;
  std::vector<uint64_t> counts_;     // per bucket, not cumulative
  std::vector<Exemplar> exemplars_;  // per bucket; empty until the first exemplar
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace gpuscope
