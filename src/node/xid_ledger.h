// XidLedger: the one count of XID errors per GPU, fed by two observers of the same driver events: NVML's
// XID event sets (the GPU collector) and the kernel log's "NVRM: Xid" lines (kmsg, journal or a log
// file, through the event pipeline). Either may see an XID the other misses (NVML only while the agent
// runs and a GPU is open; the kernel log also before the agent started, and for a GPU NVML lost), so
// each observation is counted once: an observation of (GPU, XID) that matches an unmatched observation
// of the other observer within `match_window` is the same event and is not counted again.
//
// GPUs are keyed by PCI bus id in NVML's spelling ("00000000:18:00.0"); any spelling is accepted. Each
// entry carries the recommended action of its XID, named by the function given at construction (the
// agent gives the XID catalog's, src/events/classifiers/xid_catalog.h; the ledger itself knows no catalog,
// so that node state depends on no event code).
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/mutex.h"

namespace gpuscope {

enum class XidObserver { kNvml = 0, kKernelLog = 1 };

struct XidLedgerEntry {
  std::string pci_bus_id;  // NVML spelling
  uint32_t xid = 0;
  std::string action;  // the catalog's recommended action ("reset_gpu", ...), see xid_catalog.h
  uint64_t count = 0;
  double last_seen_seconds = 0;  // Unix time of the latest observation
};

// The recommended action of an XID ("reset_gpu", ...).
using XidActionNamer = std::function<std::string(uint32_t xid)>;

class XidLedger {
 public:
  static constexpr std::chrono::milliseconds kDefaultMatchWindow{10000};
  // `action_of` null: entries carry an empty action.
  explicit XidLedger(std::chrono::milliseconds match_window = kDefaultMatchWindow,
                     XidActionNamer action_of = nullptr);

  // Records one observation at Unix time `time_seconds`. Returns true when it was counted, false when it
  // matched the other observer's observation of the same event (or `pci_bus_id` is not a PCI address:
  // such an observation cannot be tied to a GPU and is ignored).
  bool Record(XidObserver observer, std::string_view pci_bus_id, uint32_t xid, double time_seconds);

  // Every (GPU, XID) counted so far, sorted by bus id then XID.
  std::vector<XidLedgerEntry> Entries() const;
  // The XID of the latest counted observation on `pci_bus_id`, 0 when none.
  uint32_t LastXid(std::string_view pci_bus_id) const;

  // Observations that matched one of the other observer (i.e. were not counted twice).
  uint64_t merged() const;

 private:
  struct Pending {
    double time = 0;
    XidObserver observer = XidObserver::kNvml;
  };
  using Key = std::pair<std::string, uint32_t>;

  const double window_seconds_;
  const XidActionNamer action_of_;
  mutable Mutex mu_;
  std::map<Key, XidLedgerEntry> entries_ GUARDED_BY(mu_);
  std::map<Key, std::deque<Pending>> unmatched_ GUARDED_BY(mu_);  // counted, not yet matched
  std::map<std::string, std::pair<double, uint32_t>, std::less<>> last_
      GUARDED_BY(mu_);  // bus id -> (time, xid)
  uint64_t merged_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpuscope
