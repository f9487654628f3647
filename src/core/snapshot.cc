#include "src/core/snapshot.h"

#include <algorithm>

namespace gpuscope {

Snapshot Snapshot::Of(std::vector<MetricFamily> families, uint64_t version) {
  Snapshot snapshot;
  snapshot.version_ = version;
  auto list = std::make_shared<const std::vector<MetricFamily>>(std::move(families));
  snapshot.index_.reserve(list->size());
  for (const MetricFamily& family : *list) snapshot.index_.push_back(&family);
  snapshot.lists_.push_back(std::move(list));
  return snapshot;
}

SnapshotStore::SnapshotStore() : current_(std::make_shared<const Snapshot>()) {}

void SnapshotStore::Update(std::string_view source, std::vector<MetricFamily> families) {
  MutexLock lock(&mu_);
  by_source_[std::string(source)] = std::make_shared<const std::vector<MetricFamily>>(std::move(families));

  auto next = std::make_shared<Snapshot>();
  next->version_ = next_version_++;
  size_t total = 0;
  for (const auto& [unused, list] : by_source_) total += list->size();
  next->index_.reserve(total);
  next->lists_.reserve(by_source_.size());
  for (const auto& [unused, list] : by_source_) {
    for (const MetricFamily& family : *list) next->index_.push_back(&family);
    next->lists_.push_back(list);
  }
  // Stable, so that families of one name keep their sources' order: the renderer takes HELP/TYPE from
  // the first and the samples of all, as one family.
  std::stable_sort(next->index_.begin(), next->index_.end(),
                   [](const MetricFamily* a, const MetricFamily* b) { return a->name < b->name; });
  current_ = std::move(next);
}

std::shared_ptr<const Snapshot> SnapshotStore::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

}  // namespace gpuscope
