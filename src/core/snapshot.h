// Snapshot: the immutable set of families a scrape serves. The SnapshotStore keeps each collector's
// latest result and publishes a new Snapshot (atomically swapped shared_ptr) whenever one collector
// finishes a cycle. A scrape only takes the current pointer: it never calls a collector.
//
// A publish copies no family: each source's list is kept as one shared immutable vector, and a Snapshot
// is an index of pointers into those vectors (sorted by name) plus the references that keep them alive.
// Families of the same name from several sources are adjacent in the index and render as one family.
//
// Thread-safety: SnapshotStore is safe for concurrent use; Snapshot is immutable once published.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"

namespace gpuscope {

class Snapshot {
 public:
  using FamilyList = std::shared_ptr<const std::vector<MetricFamily>>;

  Snapshot() = default;
  // A snapshot of one list, served in the order given (sort it by name first to merge equal names), for
  // a tool or a test that renders families without a store.
  static Snapshot Of(std::vector<MetricFamily> families, uint64_t version = 0);

  uint64_t version() const { return version_; }  // increases with every publish; renderers cache by it
  // Every family, ordered by name; families of one name are adjacent, in the order of their sources.
  std::span<const MetricFamily* const> families() const { return index_; }

 private:
  friend class SnapshotStore;
  uint64_t version_ = 0;
  std::vector<const MetricFamily*> index_;  // points into lists_
  std::vector<FamilyList> lists_;           // keeps what index_ points at alive
};

class SnapshotStore {
 public:
  SnapshotStore();

  // Replaces the families that `source` contributed and publishes a new snapshot.
  void Update(std::string_view source, std::vector<MetricFamily> families);

  // The latest published snapshot; never null (empty before the first Update).
  std::shared_ptr<const Snapshot> Current() const;

 private:
  mutable Mutex mu_;
  std::unordered_map<std::string, Snapshot::FamilyList> by_source_ GUARDED_BY(mu_);
  std::shared_ptr<const Snapshot> current_ GUARDED_BY(mu_);
  uint64_t next_version_ GUARDED_BY(mu_) = 1;
};

}  // namespace gpuscope
