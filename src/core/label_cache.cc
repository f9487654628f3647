#include "src/core/label_cache.h"

#include <vector>

namespace gpuscope {
namespace {

// FNV-1a over the pairs, each field's length first, so that no two argument lists hash alike by
// construction (only by chance).
uint64_t HashExtra(std::initializer_list<LabelSetCache::Extra> extra) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](std::string_view text) {
    for (size_t n = text.size(), i = 0; i < sizeof n; ++i, n >>= 8)
      hash = (hash ^ (n & 0xff)) * 1099511628211ull;
    for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  };
  for (const auto& [name, value] : extra) {
    mix(name);
    mix(value);
  }
  return hash;
}

// Whether `labels` ends with exactly the pairs of `extra`.
bool EndsWith(const Labels& labels, std::initializer_list<LabelSetCache::Extra> extra) {
  if (labels.size() < extra.size()) return false;
  size_t i = labels.size() - extra.size();
  for (const auto& [name, value] : extra) {
    if (labels[i].first != name || labels[i].second != value) return false;
    ++i;
  }
  return true;
}

}  // namespace

const Labels& LabelSetCache::With(const Labels& base, std::initializer_list<Extra> extra) {
  const Key key{base.identity(), HashExtra(extra)};
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& entry = it->second;
  entry.used = true;
  // A new key, or (by a hash collision) another set under it: build the asked-for one.
  if (inserted || entry.labels.size() != base.size() + extra.size() || !EndsWith(entry.labels, extra)) {
    std::vector<Labels::Pair> pairs;
    pairs.reserve(extra.size());
    for (const auto& [name, value] : extra) pairs.emplace_back(name, value);
    entry.labels = Labels::Extend(base, std::move(pairs));
  }
  return entry.labels;
}

void LabelSetCache::EndCycle() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->second.used) {
      it = entries_.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

}  // namespace gpuscope
