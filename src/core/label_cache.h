// LabelSetCache: label sets made by appending a few pairs to a base set (a GPU's labels + link="3"; a
// series' labels + hpc_job="1234"), built once and handed out again every cycle they are asked for, so
// steady-state collection puts a shared Labels on each sample instead of allocating new pairs.
//
// The new set extends the base (Labels::Extend): its pairs are not copied.
//
// A set is kept while it is asked for: EndCycle() forgets the ones not asked for since the previous
// EndCycle() (a process that exited, a job that ended), so the cache holds one cycle's worth of sets.
// Entries are keyed by the base's storage (Labels::identity()) and a hash of the appended pairs (a hit
// compares the pairs too); each entry's set extends its base and so keeps it alive: a freed base's
// address cannot be reused for another set while its entry exists. About 200 bytes per set with one
// appended pair.
//
// Thread-safety: none; one cache per owner thread (a GPU's worker, a collector's cycle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
  struct Key {
    const void* base;  // the base's storage (Labels::identity())
    uint64_t extra;    // hash of the appended pairs; a hit also compares the pairs themselves
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<const void*>{}(key.base) ^ static_cast<size_t>(key.extra * 0x9E3779B97F4A7C15ull);
    }
  };
  struct Entry {
    Labels labels;  // extends the base, so it also keeps the keyed storage alive
    bool used = true;
  };
  std::unordered_map<Key, Entry, KeyHash> entries_;
};

}  // namespace gpuscope
