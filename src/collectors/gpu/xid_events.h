// XidEventMonitor: waits on NVML event sets for XID critical errors of every GPU handed to Watch(), and
// counts each event once per (GPU, XID). The counts feed gpuscope_xid_errors_total /
// gpuscope_xid_last_seen_timestamp_seconds and the drop-in DCGM_FI_DEV_XID_ERRORS (value of the last XID).
//
// GPUs may be added while the monitor runs (a GPU that opens late): each Watch() call gets an event set
// and a thread of its own, so no set is changed while a thread waits on it, no GPU is ever registered on
// two sets (which would count its events twice) and counts kept so far are never reset. The thread does
// the registration itself, so a GPU whose NVML calls hang never blocks the caller.
//
// Thread-safety: the constructor, Watch() and the destructor from the owner's thread; Counts() and
// LastXid() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/mutex.h"
#include "src/platform/nvml/nvml_library.h"

namespace gpuscope {

struct XidCount {
  unsigned int gpu_index = 0;
  unsigned long long xid = 0;
  uint64_t count = 0;
  double last_seen_seconds = 0;  // Unix time of the latest event
};

class XidEventMonitor {
 public:
  // `wait`: poll timeout of each event thread (also bounds how long the destructor waits for them).
  XidEventMonitor(std::shared_ptr<const NvmlLibrary> nvml, std::chrono::milliseconds wait);
  // Stop(), then detaches any thread still hung inside NVML (it keeps the library and the counts alive).
  ~XidEventMonitor();
  XidEventMonitor(const XidEventMonitor&) = delete;
  XidEventMonitor& operator=(const XidEventMonitor&) = delete;

  // Starts watching `devices` ((NVML handle, GPU index) pairs); GPUs already handed to an earlier call are
  // ignored. Returns the number of GPUs newly handed to a thread (0: nothing started). That thread
  // creates an event set, registers every GPU that supports XID events and waits on it; when the set
  // cannot be created or no GPU supports events, it logs why (core logger) and ends.
  size_t Watch(const std::vector<std::pair<nvmlDevice_t, unsigned int>>& devices);

  // Asks every thread to stop and waits at most about one `wait` plus a grace period. Returns true when
  // every thread has ended (none is inside NVML any more); false when one is hung in an NVML call.
  // Idempotent; Watch() must not be called afterwards.
  bool Stop();

  // Every (GPU, XID) seen so far, sorted by GPU then XID.
  std::vector<XidCount> Counts() const;
  // The last XID reported for `gpu_index`, 0 when none.
  unsigned long long LastXid(unsigned int gpu_index) const;

 private:
  struct Shared {
    Mutex mu;
    std::map<std::pair<unsigned int, unsigned long long>, XidCount> counts GUARDED_BY(mu);
    std::map<unsigned int, unsigned long long> last GUARDED_BY(mu);
    std::atomic<bool> stop{false};
  };
  struct Watcher {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  // The thread's own copies of the arguments (std::thread stores them) live as long as it runs.
  static void Run(const std::shared_ptr<const NvmlLibrary>& nvml, const std::shared_ptr<Shared>& shared,
                  const std::shared_ptr<std::atomic<bool>>& finished,
                  const std::vector<std::pair<nvmlDevice_t, unsigned int>>& devices, unsigned int wait_ms);

  std::shared_ptr<const NvmlLibrary> nvml_;
  std::chrono::milliseconds wait_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::set<unsigned int> watched_;  // GPU indices handed to a thread
  std::vector<Watcher> watchers_;
};

}  // namespace gpuscope
