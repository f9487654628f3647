// JobReport: `gpuscope job`'s account of one job, built from what Prometheus holds about it: per-GPU
// figures over the job's life, an efficiency grade and concrete notes a person can act on. Pure (no
// I/O): job_command.cc fills JobFacts from queries; the unit tests fill them by hand.
//
// Thread-safety: value types and free functions.
#pragma once

#include <string>
#include <vector>

namespace gpuscope {

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
  double memory_total_mib = -1;     // FB_USED + FB_FREE
  double power_mean_watts = -1;
  double energy_joules = -1;
  double idle_fraction = -1;  // mean gpuscope_gpu_allocated_idle: share of the life it was allocated and idle
  double xid_errors = 0;
  double ecc_dbe_errors = 0;

  // SM active where reported, else GPU utilisation; negative when neither.
  double busy_percent() const { return sm_active_percent >= 0 ? sm_active_percent : utilization_percent; }
};

struct JobFacts {
  std::string job;
  std::string user, account, partition, job_name;
  double first_seen = 0;  // Unix seconds: first and last sample of its gpuscope_job_info
  double last_seen = 0;
  double window_seconds = 0;        // the range every figure is computed over, ending at last_seen
  std::vector<JobGpuFigures> gpus;  // sorted by hostname, then gpu
};

struct JobReport {
  std::string grade;         // "A" (GPUs busy) .. "F" (GPUs idle)
  double busy_percent = -1;  // mean over the GPUs
  std::vector<std::string> notes;
};

// Grade and notes. Notes, each when it applies:
//  - GPUs allocated and idle at least half of the job's life, naming them and the count to request;
//  - memory peak under half the GPU's memory on every GPU: a smaller GPU or a MIG slice fits;
//  - GPUs busy but under 30% on average (not idle): the work does not keep them fed;
//  - XID and double-bit ECC errors seen during the job.
JobReport BuildJobReport(const JobFacts& facts);

std::string RenderJobReportText(const JobFacts& facts, const JobReport& report);
std::string RenderJobReportJson(const JobFacts& facts, const JobReport& report);

}  // namespace gpuscope
