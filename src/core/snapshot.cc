#include "src/core/snapshot.h"

#include <algorithm>
#include <map>

namespace gpuscope {

SnapshotStore::SnapshotStore() : current_(std::make_shared<const Snapshot>()) {}

void SnapshotStore::Update(std::string_view source, std::vector<MetricFamily> families) {
  MutexLock lock(&mu_);
  by_source_[std::string(source)] = std::move(families);

  // Merge by name so that each family is rendered with one HELP/TYPE, whatever its sources.
  std::map<std::string_view, MetricFamily> merged;
  for (const auto& [unused, list] : by_source_) {
    for (const MetricFamily& family : list) {
      auto [it, inserted] = merged.try_emplace(family.name, family);
      if (!inserted) {
        it->second.samples.insert(it->second.samples.end(), family.samples.begin(), family.samples.end());
      }
    }
  }
  auto next = std::make_shared<Snapshot>();
  next->version = next_version_++;
  next->families.reserve(merged.size());
  for (auto& [unused, family] : merged) next->families.push_back(std::move(family));
  current_ = std::move(next);
}

std::shared_ptr<const Snapshot> SnapshotStore::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

}  // namespace gpuscope
