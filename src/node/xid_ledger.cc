#include "src/node/xid_ledger.h"

#include <cmath>
#include <optional>
#include <utility>

#include "src/parsers/pci.h"

namespace gpuscope {

XidLedger::XidLedger(std::chrono::milliseconds match_window, XidActionNamer action_of)
    : window_seconds_(static_cast<double>(match_window.count()) / 1000.0), action_of_(std::move(action_of)) {}

bool XidLedger::Record(XidObserver observer, std::string_view pci_bus_id, uint32_t xid, double time_seconds) {
  std::optional<std::string> bus = CanonicalPciBusId(pci_bus_id);
  if (!bus) return false;
  MutexLock lock(&mu_);
  Key key{*bus, xid};
  std::deque<Pending>& pending = unmatched_[key];
  // Observations older than the window can no longer be matched.
  while (!pending.empty() && pending.front().time < time_seconds - window_seconds_) pending.pop_front();
  for (auto it = pending.begin(); it != pending.end(); ++it) {
    if (it->observer != observer && std::fabs(it->time - time_seconds) <= window_seconds_) {
      pending.erase(it);
      ++merged_;
      return false;
    }
  }
  pending.push_back(Pending{time_seconds, observer});
  // Bound the memory a storm of one XID can take: beyond this many unmatched observations the oldest
  // cannot matter (a storm is counted either way).
  constexpr size_t kMaxPending = 1024;
  if (pending.size() > kMaxPending) pending.pop_front();

  XidLedgerEntry& entry = entries_[key];
  if (entry.count == 0) {
    entry.pci_bus_id = *bus;
    entry.xid = xid;
    if (action_of_) entry.action = action_of_(xid);
  }
  ++entry.count;
  entry.last_seen_seconds = std::max(entry.last_seen_seconds, time_seconds);
  auto& last = last_[*bus];
  if (time_seconds >= last.first) last = {time_seconds, xid};
  return true;
}

std::vector<XidLedgerEntry> XidLedger::Entries() const {
  MutexLock lock(&mu_);
  std::vector<XidLedgerEntry> out;
  out.reserve(entries_.size());
  for (const auto& [key, entry] : entries_) out.push_back(entry);
  return out;
}

uint32_t XidLedger::LastXid(std::string_view pci_bus_id) const {
  std::optional<std::string> bus = CanonicalPciBusId(pci_bus_id);
  if (!bus) return 0;
  MutexLock lock(&mu_);
  auto it = last_.find(*bus);
  return it == last_.end() ? 0 : it->second.second;
}

uint64_t XidLedger::merged() const {
  MutexLock lock(&mu_);
  return merged_;
}

}  // namespace gpuscope
