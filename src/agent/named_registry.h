// NamedRegistry: one table of plug-ins of one kind (collectors, event sources, push sinks), each entry
// created by its unique name. Registering a name twice is an error (InvalidArgument naming the kind and
// the name, from Entry::kKind). Entries keep their registration order, which is the order the agent
// creates and polls them in.
//
// Thread-safety: build at start-up on one thread, then read-only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

// Entry: a struct with `std::string name` and `static constexpr std::string_view kKind`.
template <typename Entry>
class NamedRegistry {
 public:
  Status Register(Entry entry) {
    for (const Entry& existing : entries_) {
      if (existing.name == entry.name) {
        return Status::InvalidArgument(std::string(Entry::kKind) + " '" + entry.name + "' registered twice");
      }
    }
    entries_.push_back(std::move(entry));
    return Status::Ok();
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace gpuscope
