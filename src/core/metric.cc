#include "src/core/metric.h"

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
  }
  return "unknown";
}

Labels::Labels(std::vector<Pair> pairs)
    : pairs_(pairs.empty() ? nullptr : std::make_shared<std::vector<Pair>>(std::move(pairs))) {}

const std::vector<Labels::Pair>& Labels::pairs() const {
  static const std::vector<Pair> kNone;
  return pairs_ ? *pairs_ : kNone;
}

std::vector<Labels::Pair>& Labels::Mutable() {
  if (!pairs_) {
    pairs_ = std::make_shared<std::vector<Pair>>();
  } else if (pairs_.use_count() > 1) {
    pairs_ = std::make_shared<std::vector<Pair>>(*pairs_);
  }
  return *pairs_;
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
