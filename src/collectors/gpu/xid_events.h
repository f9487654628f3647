// XidEventMonitor: one thread that waits on an NVML event set for XID critical errors of every GPU
// that supports them, and counts each event once per (GPU, XID). The counts feed
// gpuscope_xid_errors_total / gpuscope_xid_last_seen_timestamp_seconds and the drop-in
// DCGM_FI_DEV_XID_ERRORS (value of the last XID).
//
// Thread-safety: Start/Stop from the owner's thread; Counts() and LastXid() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

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
  // `devices`: (NVML handle, GPU index) of every GPU to watch.
  XidEventMonitor(std::shared_ptr<const NvmlLibrary> nvml,
                  std::vector<std::pair<nvmlDevice_t, unsigned int>> devices, std::chrono::milliseconds wait);
  // Stops the thread (waits at most about one `wait` plus a grace period; a thread hung inside NVML is
  // detached and keeps the library alive).
  ~XidEventMonitor();

  // Creates the event set, registers every GPU that supports XID events and starts the thread. Returns
  // the number of GPUs registered; 0 (and no thread) when none supports events or the set cannot be
  // created; the reason goes to `*why`.
  size_t Start(std::string* why);

  // Every (GPU, XID) seen so far, sorted by GPU then XID.
  std::vector<XidCount> Counts() const;
  // The last XID reported for `gpu_index`, 0 when none.
  unsigned long long LastXid(unsigned int gpu_index) const;

 private:
  struct Shared {
    std::mutex mu;
    std::map<std::pair<unsigned int, unsigned long long>, XidCount> counts;  // guarded by mu
    std::map<unsigned int, unsigned long long> last;                         // guarded by mu
    std::atomic<bool> stop{false};
    std::atomic<bool> finished{false};
  };
  static void Run(std::shared_ptr<const NvmlLibrary> nvml, std::shared_ptr<Shared> shared, nvmlEventSet_t set,
                  std::vector<std::pair<nvmlDevice_t, unsigned int>> devices, unsigned int wait_ms);

  std::shared_ptr<const NvmlLibrary> nvml_;
  std::vector<std::pair<nvmlDevice_t, unsigned int>> devices_;
  std::chrono::milliseconds wait_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread thread_;
};

}  // namespace gpuscope
