// SlurmJobSource: fills in what the node cannot know about a job (user, account, partition, job name,
// array ids) by asking Slurm, for the jobs the JobTable already holds (from the mapping files or /proc)
// with a blank user, account or partition. Off the scrape path: a background thread looks at the
// JobTable's view every `min_query_interval`, runs ONE `scontrol show job -o` (all jobs: Slurm 22.05's
// scontrol does not accept a list of ids) when a job is missing from its cache, or every `interval` to
// refresh, with a hard timeout (the child and its process group are killed past it), parses the output,
// caches the jobs this node allocates, and publishes the cached jobs that the table still allocates with
// table->Update(AttributionSource::kSlurm, {{}, jobs}). When Slurm is unreachable the cache keeps
// serving what it knew (attribution from mapping files and /proc does not depend on it); a job that
// no source allocates any more is dropped from the cache after `forget_after`.
//
// Thread-safety: Start/Stop from one owner thread; QueryOnce, MetricFamilies safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/node/job_table.h"
#include "src/parsers/scontrol_job.h"
#include "src/platform/command.h"  // RunCommandWithTimeout, CommandResult

namespace gpuscope {

struct SlurmJobSourceOptions {
  std::string scontrol_path = "scontrol";              // looked up in PATH when it has no '/'
  std::chrono::milliseconds interval{30000};           // refresh period while jobs are allocated
  std::chrono::milliseconds timeout{5000};             // hard limit for one scontrol run
  std::chrono::milliseconds min_query_interval{5000};  // never two queries closer than this
  std::chrono::milliseconds forget_after{300000};      // cached job unallocated this long: dropped
  size_t max_output_bytes = 64 << 20;                  // larger output: the query fails
};

class SlurmJobSource {
 public:
  // `table` must outlive this object.
  SlurmJobSource(SlurmJobSourceOptions options, JobTable* table);
  ~SlurmJobSource();  // Stop()
  SlurmJobSource(const SlurmJobSource&) = delete;
  SlurmJobSource& operator=(const SlurmJobSource&) = delete;

  // Starts the background thread. Calling it twice is an error of the caller (aborts).
  void Start();
  // Stops and joins the thread (a running scontrol is waited for, at most `timeout`). Idempotent.
  void Stop();

  // One cycle now, as the thread does it: queries Slurm if `force` or if the table holds a job with
  // blank fields that the cache lacks, then publishes. Returns the query's status (Ok without a query).
  Status QueryOnce(bool force = false);

  // gpuscope_attribution_slurm_up, _queries_total{result}, _query_duration_seconds, _jobs_cached.
  std::vector<MetricFamily> MetricFamilies() const;

 private:
  struct Cached {
    ScontrolJob job;
    std::chrono::steady_clock::time_point last_allocated;
  };
  void Run();
  Status Query(const std::set<std::string, std::less<>>& allocated) REQUIRES(cycle_mu_);
  void Publish(const JobTable::View& view) REQUIRES(cycle_mu_);

  const SlurmJobSourceOptions options_;
  JobTable* const table_;

  Mutex cycle_mu_;  // one cycle at a time
  std::map<std::string, Cached, std::less<>> cache_ GUARDED_BY(cycle_mu_);
  std::set<std::string, std::less<>> unknown_ GUARDED_BY(cycle_mu_);  // allocated, not in Slurm's last answer
  std::chrono::steady_clock::time_point last_query_ GUARDED_BY(cycle_mu_){};
  bool queried_ GUARDED_BY(cycle_mu_) = false;

  mutable Mutex metrics_mu_;
  bool up_ GUARDED_BY(metrics_mu_) = false;
  std::map<std::string, uint64_t> queries_ GUARDED_BY(metrics_mu_);  // result -> count
  double last_duration_s_ GUARDED_BY(metrics_mu_) = 0;
  size_t cached_ GUARDED_BY(metrics_mu_) = 0;

  Mutex wake_mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(wake_mu_) = false;
  std::thread thread_;
};

}  // namespace gpuscope
