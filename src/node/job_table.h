// JobTable: which job (and user, account, partition, rank) holds which GPU, as data every output path reads
// the same way. Sources (the prolog's mapping files, the processes on each GPU through /proc, Slurm itself)
// each publish their whole current view with Update(); the table merges them into an immutable View that
// is swapped atomically, so a reader never sees half an update and never waits for a source.
//
// GPU keys are dcgm-exporter's mapping-file names: the NVML index ("3"), or "<index>.<GPU instance id>"
// for a MIG instance ("3.1").
//
// Merge rules: allocations are the union over sources, one per (gpu, job); a rank or step known to any
// source fills the blank of the others. Job fields are merged field by field in source priority order
// (kMapping, then kProc, then kSlurm): the prolog's record is authoritative, Slurm only fills blanks.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/mutex.h"

namespace gpuscope {

enum class AttributionSource { kMapping = 0, kProc = 1, kSlurm = 2 };
std::string_view AttributionSourceName(AttributionSource source);  // "mapping", "proc", "slurm"

struct JobInfo {
  std::string job_id;  // Slurm job id ("1234"); for an array task its own job id
  std::string user;
  std::string uid;
  std::string account;
  std::string partition;
  std::string job_name;
  std::string array_job_id;   // empty unless an array task
  std::string array_task_id;  // empty unless an array task
};

struct Allocation {
  std::string gpu;      // "3" or "3.1" (MIG)
  std::string job_id;   // never empty
  std::string rank;     // SLURM_PROCID of a process of this job on this GPU; empty when unknown
  std::string step_id;  // Slurm step ("0", "batch", ...); empty when unknown
};

struct AttributionUpdate {
  std::vector<Allocation> allocations;
  std::vector<JobInfo> jobs;  // details of jobs this source knows; may include jobs without allocations
};

class JobTable {
 public:
  struct View {
    uint64_t version = 0;
    // Sorted by (gpu, job_id); unique per (gpu, job_id).
    std::vector<Allocation> allocations;
    std::map<std::string, JobInfo, std::less<>> jobs;  // by job id; every allocated job has an entry
    // The jobs holding `gpu` (empty when none), in job id order.
    std::vector<const Allocation*> JobsOn(std::string_view gpu) const;
    const JobInfo* Job(std::string_view job_id) const;
  };

  JobTable();

  // Replaces everything `source` said before with `update` and publishes a new View.
  void Update(AttributionSource source, AttributionUpdate update);

  // The latest View; never null.
  std::shared_ptr<const View> Current() const;

 private:
  void Rebuild() REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<AttributionSource, AttributionUpdate> by_source_ GUARDED_BY(mu_);
  std::shared_ptr<const View> current_ GUARDED_BY(mu_);
  uint64_t next_version_ GUARDED_BY(mu_) = 1;
};

}  // namespace gpuscope
