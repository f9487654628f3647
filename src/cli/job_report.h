// JobReport: `gpuscope job`'s account of one Slurm job or Kubernetes pod, built from what Prometheus (and,
// when reachable, Slurm accounting) holds about it: per-GPU figures over its life, throttling, the events
// during it with their time, straggler ranks, an efficiency grade and concrete notes a person can act on.
// Pure (no I/O): job_command.cc fills JobFacts from queries; the unit tests fill them by hand.
//
// Thread-safety: value types and free functions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpuscope {

// Below this utilisation (percent; SM active where the GPU reports it, else GPU utilisation) a sample
// reads idle: the agent's own threshold for gpuscope_gpu_allocated_idle.
inline constexpr double kIdleBusyPercent = 5;

// One GPU (or MIG instance) the job held, with its figures averaged or summed over the job's life.
// A figure the node did not export is negative (absent).
struct JobGpuFigures {
  std::string hostname;
  std::string gpu;  // index on the node ("2"), with ":<GPU_I_ID>" for a MIG instance
  std::string uuid;
  std::string model;
  double utilization_percent = -1;  // mean DCGM_FI_DEV_GPU_UTIL
  double sm_active_percent = -1;    // mean DCGM_FI_PROF_SM_ACTIVE x 100
  double memory_peak_mib = -1;      // max DCGM_FI_DEV_FB_USED
  double memory_total_mib = -1;     // FB_USED + FB_FREE + FB_RESERVED (the board's memory)
  double power_mean_watts = -1;
  double energy_joules = -1;
  // Share of the job's samples in which the GPU read idle (busy measure below kIdleBusyPercent). From the
  // samples themselves, not gpuscope_gpu_allocated_idle, which turns 1 only after 60 s of idleness and so
  // misses the first minute of a job idle from its start.
  double idle_fraction = -1;
  double xid_errors = 0;  // XIDs reported during the job (gpuscope_xid_errors_total's increments)
  double ecc_dbe_errors = 0;
  double nvlink_errors = 0;  // NVLink CRC, replay, recovery and ECC errors, all links
  // Share of the life each clock-event reason held the clocks down (mean gpuscope_gpu_clock_event_active),
  // by reason ("sw_power_cap", "hw_slowdown", ...; gpu_idle left out: it is not throttling).
  std::map<std::string, double> throttle_fraction;
  // Seconds the driver's policies held the clocks below target during the job (increase of
  // gpuscope_gpu_clock_event_seconds_total, NVML's violation counters), by policy ("power", "thermal", ...).
  std::map<std::string, double> throttle_seconds;

  // SM active where reported, else GPU utilisation; negative when neither.
  double busy_percent() const { return sm_active_percent >= 0 ? sm_active_percent : utilization_percent; }
};

// Something that happened during the job, at the first time its counter increased.
struct JobEvent {
  double time = 0;       // Unix seconds: first sample that showed it
  std::string kind;      // "xid", "ecc_dbe", "nvlink", or an event class of gpuscope_events_total
                         // ("nccl", "oom", "cuda_oom", "nccl_watchdog", "ib_completion", ...)
  std::string hostname;  // node
  std::string gpu;       // empty for a node-level event (gpuscope_events_total carries no GPU)
  std::string code;      // the XID number for kind "xid"
  std::string action;    // the XID catalog's recommended action for kind "xid" (restart_app, reset_gpu, ...)
  double count = 0;      // increments during the job
};

// One training rank of the job (gpuscope_training_compute_seconds_median: the median time per step
// outside collectives over its recent steps, its latest sample in the job).
struct JobRank {
  std::string rank;
  std::string hostname;
  std::string gpu;
  double compute_median_seconds = -1;
};

// Slurm's own accounting of the job (`sacct -X`), when asked for and reachable.
struct JobAccounting {
  bool queried = false;    // sacct was run (or tried)
  bool reachable = false;  // it answered with the job's line
  std::string error;       // why not, for "(sacct not reachable: ...)"
  std::string state, elapsed, exit_code, alloc_tres;
  int gpus = -1;  // gres/gpu count of AllocTRES; -1 when it names none
};

struct JobFacts {
  std::string job;      // the Slurm job id, or "namespace/pod" for a pod
  bool is_pod = false;  // a Kubernetes pod (namespace/pod labels) rather than a Slurm job
  std::string user, account, partition, job_name;
  double first_seen = 0;            // Unix seconds: first and last sample of its gpuscope_job_info
  double last_seen = 0;             // (gpuscope_k8s_gpu_allocation_info for a pod)
  double window_seconds = 0;        // the range every figure is computed over, ending at last_seen
  bool running = false;             // its info series was still scraped at the time of the report
  std::vector<JobGpuFigures> gpus;  // sorted by hostname, then gpu
  std::vector<JobEvent> events;     // by time
  std::vector<JobRank> ranks;       // by rank number; empty without training telemetry
  JobAccounting accounting;
};

struct JobReport {
  std::string grade;         // "A" (GPUs busy) .. "F" (GPUs idle)
  double busy_percent = -1;  // mean over the GPUs
  std::vector<std::string> notes;
};

// A rank is a straggler when its median compute time per step exceeds the job's median rank's by this
// share (the mixin's trainingScore 0.8 says the same from the other side: fastest/own < 0.8).
inline constexpr double kStragglerSlowerFraction = 0.2;

// Grade and notes. Notes, each when it applies:
//  - GPUs idle at least half of the job's life, naming them and the count to request;
//  - memory peak under half the GPU's memory on every GPU: a smaller GPU or a MIG slice fits;
//  - GPUs busy but under 30% on average (not idle): the work does not keep them fed;
//  - throttling by thermal, power or hardware slowdown above the mixin's ratios, naming GPUs and reason;
//  - each event during the job with its time: XIDs with the catalog's action, double-bit ECC errors,
//    NVLink errors, NCCL / OOM / CUDA / interruption events of the job's nodes;
//  - straggler ranks, by how much slower than the median rank;
//  - Slurm accounting's GPU count differing from the GPUs Prometheus saw.
JobReport BuildJobReport(const JobFacts& facts);

std::string RenderJobReportText(const JobFacts& facts, const JobReport& report);
std::string RenderJobReportJson(const JobFacts& facts, const JobReport& report);

// "HH:MM:SS UTC" of a Unix time (event times in notes).
std::string ClockTimeUtc(double unix_seconds);

}  // namespace gpuscope
