// Snapshot: the immutable set of families a scrape serves. The SnapshotStore keeps each collector's
// latest result and publishes a new merged Snapshot (atomically swapped shared_ptr) whenever one
// collector finishes a cycle. A scrape only takes the current pointer: it never calls a collector.
//
// Thread-safety: SnapshotStore is safe for concurrent use; Snapshot is immutable once published.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"

namespace gpuscope {

struct Snapshot {
  uint64_t version = 0;  // increases with every publish; renderers cache by it
  // Sorted by name; families of the same name from several sources are merged into one.
  std::vector<MetricFamily> families;
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
  std::unordered_map<std::string, std::vector<MetricFamily>> by_source_ GUARDED_BY(mu_);
  std::shared_ptr<const Snapshot> current_ GUARDED_BY(mu_);
  uint64_t next_version_ GUARDED_BY(mu_) = 1;
};

}  // namespace gpuscope
