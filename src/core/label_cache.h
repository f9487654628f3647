// LabelSetCache: label sets made by appending a few pairs to a base set (a GPU's labels + link="3"; a
// series' labels + hpc_job="1234"), built once and handed out again every cycle they are asked for, so
// steady-state collection puts a shared Labels on each sample instead of allocating new pairs.
//
// The new set extends the base (Labels::Extend): its pairs are not copied.
//
// A set is kept while it is asked for: EndCycle() forgets the ones not asked for since the previous
// EndCycle() (a process that exited, a job that ended), so the cache holds one cycle's worth of sets.
// Entries are keyed by the base's storage (Labels::identity()) and the appended pairs; each entry keeps
// its base alive, so a freed base's address cannot be reused for another set while its entry exists.
//
// Thread-safety: none; one cache per owner thread (a GPU's worker, a collector's cycle).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "src/core/metric.h"

namespace gpuscope {

class LabelSetCache {
 public:
  using Extra = std::pair<std::string_view, std::string_view>;

  // `base` followed by `extra`; the same shared set for the same arguments until EndCycle() drops it.
  const Labels& With(const Labels& base, std::initializer_list<Extra> extra);
  // Forgets every set not asked for since the previous call.
  void EndCycle();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Labels base;  // keeps the keyed storage alive
    Labels labels;
    bool used = true;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  std::string key_;  // the lookup key, rebuilt in place (no allocation once grown)
  std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>> entries_;
};

}  // namespace gpuscope
