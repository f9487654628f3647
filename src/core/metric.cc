#include "src/core/metric.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gpuscope {
namespace {
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kInfo:
      return "info";
    case MetricType::kUnknown:
      return "unknown";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "unknown";
}

std::shared_ptr<const HistogramBuckets> HistogramBuckets::Make(std::vector<double> bounds,
                                                               std::string* error) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    std::string problem;
    if (!std::isfinite(bounds[i])) problem = "bucket bound " + std::to_string(i) + " is not finite";
    if (i > 0 && !(bounds[i - 1] < bounds[i])) problem = "bucket bounds are not strictly ascending";
    if (!problem.empty()) {
      if (error) *error = std::move(problem);
      return nullptr;
    }
  }
  std::shared_ptr<HistogramBuckets> buckets(new HistogramBuckets());
  buckets->le_.reserve(bounds.size());
  for (double bound : bounds) {
    // The form Prometheus 3 stores le values in whichever exposition format it scraped (Go's shortest
    // %g: exponent form below 1e-4 and from 1e6, ".0" after an integral number), so that pushed and
    // scraped series are the same series.
    char buf[40];
    auto result = std::to_chars(buf, buf + sizeof(buf), bound, std::chars_format::scientific);
    const std::string_view scientific(buf, static_cast<size_t>(result.ptr - buf));
    int exponent = 0;
    const size_t e = scientific.find('e');
    std::from_chars(scientific.data() + e + (scientific[e + 1] == '+' ? 2 : 1), scientific.end(), exponent);
    std::string le(scientific);
    if (exponent >= -4 && exponent < 6) {
      result = std::to_chars(buf, buf + sizeof(buf), bound, std::chars_format::fixed);
      le.assign(buf, result.ptr);
    }
    if (le.find_first_of(".e") == std::string::npos) le += ".0";
    buckets->le_.push_back(std::move(le));
  }
  buckets->bounds_ = std::move(bounds);
  return buckets;
}

Labels::Labels(std::vector<Pair> pairs) {
  if (pairs.empty()) return;
  node_ = std::make_shared<Node>();
  node_->own = std::move(pairs);
}

Labels Labels::Extend(const Labels& base, std::vector<Pair> extra) {
  if (base.empty()) return Labels(std::move(extra));
  Labels out;
  out.node_ = std::make_shared<Node>();
  out.node_->parent = base;
  out.node_->depth = base.node_->depth + 1;
  out.node_->own = std::move(extra);
  return out;
}

const Labels::Pair& Labels::operator[](size_t i) const {
  const Node* node = node_.get();
  while (i < node->parent.size()) node = node->parent.node_.get();
  return node->own[i - node->parent.size()];
}

const Labels::Pair& Labels::at(size_t i) const {
  if (i >= size()) throw std::out_of_range("Labels::at");
  return (*this)[i];
}

void Labels::reserve(size_t n) {
  if (!node_ || node_.use_count() > 1) return;  // the next change allocates anyway
  node_->own.reserve(n - node_->parent.size());
}

void Labels::push_back(Pair pair) {
  if (node_ && node_.use_count() == 1) {
    node_->own.push_back(std::move(pair));
    return;
  }
  if (node_ && node_->depth >= kMaxDepth) {
    Mutable().push_back(std::move(pair));
    return;
  }
  std::vector<Pair> extra;
  extra.push_back(std::move(pair));
  *this = Extend(*this, std::move(extra));
}

std::vector<Labels::Pair>& Labels::Mutable() {
  if (node_ && node_.use_count() == 1 && node_->parent.empty()) return node_->own;
  auto flat = std::make_shared<Node>();
  flat->own.reserve(size());
  for (const Pair& pair : *this) flat->own.push_back(pair);
  node_ = std::move(flat);
  return node_->own;
}

bool operator==(const Labels& a, const Labels& b) {
  if (a.node_ == b.node_) return true;
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

bool operator<(const Labels& a, const Labels& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

MetricFamily FamilyOf(const MetricDescription& description) {
  return MetricFamily{description.name, description.help, description.type, description.unit, {}};
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = IsAlpha(c) || c == ':' || (i > 0 && IsDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!(IsAlpha(c) || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

}  // namespace gpuscope
