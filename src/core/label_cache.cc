#include "src/core/label_cache.h"

#include <cstdint>
#include <vector>

namespace gpuscope {
namespace {

// Appends `text` with its length in front, so that no two argument lists give the same key.
void AppendField(std::string& key, std::string_view text) {
  const auto size = static_cast<uint32_t>(text.size());
  key.append(reinterpret_cast<const char*>(&size), sizeof size);
  key.append(text);
}

}  // namespace

const Labels& LabelSetCache::With(const Labels& base, std::initializer_list<Extra> extra) {
  key_.clear();
  const void* identity = base.identity();
  key_.append(reinterpret_cast<const char*>(&identity), sizeof identity);
  for (const auto& [name, value] : extra) {
    AppendField(key_, name);
    AppendField(key_, value);
  }
  if (auto found = entries_.find(std::string_view(key_)); found != entries_.end()) {
    found->second.used = true;
    return found->second.labels;
  }
  std::vector<Labels::Pair> pairs;
  pairs.reserve(extra.size());
  for (const auto& [name, value] : extra) pairs.emplace_back(name, value);
  Entry& entry = entries_[key_];
  entry.base = base;
  entry.labels = Labels::Extend(base, std::move(pairs));
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
