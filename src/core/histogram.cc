#include "src/core/histogram.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuscope {

Histogram::Histogram(std::shared_ptr<const HistogramBuckets> buckets)
    : buckets_(std::move(buckets)), counts_(buckets_->size(), 0) {}

void Histogram::Observe(double value, Exemplar exemplar) {
  if (std::isnan(value)) return;
  const std::vector<double>& bounds = buckets_->bounds();
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
  ++counts_[bucket];
  ++count_;
  sum_ += value;
  if (exemplar.labels.empty()) return;
  if (exemplars_.empty()) exemplars_.resize(counts_.size());
  exemplars_[bucket] = std::move(exemplar);
}

std::shared_ptr<const HistogramValue> Histogram::Value() const {
  auto value = std::make_shared<HistogramValue>();
  value->buckets = buckets_;
  value->counts.reserve(counts_.size());
  uint64_t cumulative = 0;
  for (uint64_t count : counts_) value->counts.push_back(cumulative += count);
  value->sum = sum_;
  value->exemplars = exemplars_;
  return value;
}

}  // namespace gpuscope
