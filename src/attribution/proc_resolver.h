// ProcResolver: attributes the processes running on each GPU to Slurm jobs through /proc, for the
// JobTable's kProc source, and to Kubernetes pods by UID (PodUidOf). For each pid it reads
// <root>/<pid>/cgroup (which Slurm job cgroup, or which pod's cgroup, holds it),
// <root>/<pid>/environ (SLURM_PROCID rank, step, user, account, partition, job name; needs root or the
// same uid, EACCES falls back to the cgroup alone), <root>/<pid>/stat (start time, to tell a reused pid
// from the same process) and <root>/<pid>/status (real uid when environ lacks SLURM_JOB_UID).
//
// Trust: the job id from the cgroup is authoritative. environ is written by the job's user and can claim
// anything, so when it names another job than the cgroup its fields are all ignored (counted as
// "mismatch"). Only when the cgroup names no Slurm job (proctrack/linuxproc, cgroup plugins off) is
// environ's SLURM_JOB_ID used, and Options::trust_environ_without_cgroup turns even that off.
//
// Cost: a process is parsed once per (pid, start time). In steady state (the same pids every cycle)
// Resolve() reads no files; new pids cost four small reads; cached pids are re-checked for pid reuse
// (one read of stat) every Options::revalidate_every_cycles cycles. Entries of pids no longer listed are
// dropped. Processes vanishing mid-read (ENOENT/ESRCH) are normal: counted as "gone", never errors.
//
// Thread-safety: not thread-safe. Resolve() and SelfMetrics() are called from one thread (the GPU
// collector's cycle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/core/metric.h"
#include "src/node/job_table.h"

namespace gpuscope {

struct SlurmCgroup;
struct SlurmEnviron;

struct GpuProcess {
  std::string gpu;  // JobTable GPU key: "3" or "3.1" (MIG)
  uint32_t pid = 0;
};

class ProcResolver {
 public:
  struct Options {
    // Re-read <pid>/stat of cached pids every this many Resolve() calls to catch a pid reused by a new
    // process while still listed; 0 never re-checks.
    uint32_t revalidate_every_cycles = 30;
    // Use environ's SLURM_JOB_ID for a process whose cgroup is not a Slurm job cgroup.
    bool trust_environ_without_cgroup = true;
  };

  // `procfs_root` is the proc mount ("/proc") or a fixture tree laid out like it. User names are looked
  // up from uids (getpwuid_r) only when the root is the real "/proc"; for other roots the uid is kept.
  explicit ProcResolver(std::string procfs_root);
  ProcResolver(std::string procfs_root, Options options);

  // The allocations of `processes`: one per (gpu, job), with the rank (SLURM_PROCID) and step of the
  // lowest-ranked process of that job on that GPU, and one JobInfo per job. Processes without a Slurm job,
  // or gone, add nothing. Never fails; problems are counted in SelfMetrics().
  AttributionUpdate Resolve(const std::vector<GpuProcess>& processes);

  // gpuscope_attribution_proc_lookups_total{result="job|no_job|gone|denied"} (one per process parsed,
  // not per cache hit), gpuscope_attribution_proc_environ_total{result="ok|denied|mismatch"},
  // gpuscope_attribution_proc_cache_entries.
  std::vector<MetricFamily> SelfMetrics() const;

  size_t cache_size() const { return cache_.size(); }

  // The Slurm job of a pid listed in the last Resolve(); empty when it has none or was not listed. Lets a
  // per-process series carry its own process's job when several jobs share a GPU.
  std::string JobOf(uint32_t pid) const;
  // The UID of the Kubernetes pod whose cgroup holds a pid listed in the last Resolve(), as the API server
  // writes metadata.uid; empty when it is in no pod's cgroup or was not listed. Read from the same cgroup
  // file, once per (pid, start time), as the job.
  std::string PodUidOf(uint32_t pid) const;

 private:
  // What one process says about itself; job_id empty when it belongs to no Slurm job.
  struct ProcessInfo {
    uint64_t start_time = 0;
    std::string job_id;
    std::string pod_uid;  // from a kubepods cgroup; empty outside one
    std::string step_id;
    std::string rank;
    JobInfo job;
  };
  struct CacheEntry {
    ProcessInfo info;
    uint64_t verified_cycle = 0;
  };
  enum class Lookup { kJob, kNoJob, kGone, kDenied };

  // Reads and parses one pid; nullopt when it is gone or unreadable (counted).
  std::optional<ProcessInfo> Load(uint32_t pid);
  // Sets info's job id, step and uid from the cgroup (authoritative) or, without a Slurm cgroup and when
  // the options allow, the job id from environ. Returns false when environ names another job than the
  // cgroup (counted as a mismatch): then none of environ's fields may be believed.
  bool TakeJobIdentity(const std::optional<SlurmCgroup>& cgroup, const SlurmEnviron& env, ProcessInfo& info);
  // Copies environ's rank and job details into info; step and uid only where the cgroup left them blank.
  static void TakeEnvironDetails(const SlurmEnviron& env, ProcessInfo& info);
  std::string UserName(const std::string& uid);

  std::string root_;
  Options options_;
  bool real_proc_;
  uint64_t cycle_ = 0;
  std::map<uint32_t, CacheEntry> cache_;
  std::map<std::string, std::string> user_names_;  // uid -> name (or "" when unknown), real /proc only
  uint64_t lookups_[4] = {0, 0, 0, 0};             // by Lookup
  uint64_t environ_ok_ = 0;
  uint64_t environ_denied_ = 0;
  uint64_t environ_mismatch_ = 0;
};

}  // namespace gpuscope
