// TopRefresher: `gpuscope top`'s refreshes on a thread of their own. It runs FetchFleetSnapshot at once, then
// every interval (or at once again when the metric or the interval changes), and keeps the newest result for
// the screen thread to take. A failed refresh keeps the last good snapshot and records the error, so that
// the screen shows it as stale. The screen thread never waits for a query: Latest() only copies under a
// lock, and Stop() leaves a refresh in flight to finish on its own.
//
// Thread-safety: every method may be called from any thread; the query function is called on the
// refresher's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/prometheus_client.h"
#include "src/cli/top_fleet.h"
#include "src/core/status.h"

namespace gpuscope {

// One instant query evaluated at Unix time `time` (PrometheusClient::Query).
using TimedQueryFunction =
    std::function<Status(const std::string& expr, double time, std::vector<PromSeries>* series)>;

struct TopRefresh {
  uint64_t generation = 0;  // refreshes finished so far, good or failed
  FleetSnapshot snapshot;   // the last good one
  double updated = 0;       // its time (Unix seconds); 0 before the first good refresh
  std::string error;        // why the last refresh failed; empty when it worked
};

class TopRefresher {
 public:
  // Starts the thread; the first refresh begins at once. `now` gives the Unix time of each refresh.
  TopRefresher(TimedQueryFunction query, std::function<double()> now, TopMetric metric,
               double interval_seconds);
  // Stop().
  ~TopRefresher();
  TopRefresher(const TopRefresher&) = delete;
  TopRefresher& operator=(const TopRefresher&) = delete;

  // The next refreshes query `metric`; one begins at once (after a refresh in flight).
  void SetMetric(TopMetric metric);
  // The time between refreshes from now on; a refresh begins at once (after a refresh in flight).
  void SetInterval(double seconds);
  // Copies the newest result into *out when its generation is newer than out->generation; false otherwise.
  bool Latest(TopRefresh* out) const;
  // Ends the thread. True when it ended; false when a refresh was in flight: the thread then finishes that
  // refresh on its own (it holds what it uses) and ends, and the caller need not wait.
  bool Stop();

 private:
  struct Shared;
  static void Loop(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace gpuscope
