// Real processes as simulated GPU processes (the scenario's `proc_processes`): which processes of this
// machine are marked (`<marker>=1` in their environment) and on which GPUs they run (GPUSCOPE_SIM_GPUS,
// else CUDA_VISIBLE_DEVICES, read as NVML indices). This is how integration tests make a Slurm job's
// real PIDs appear in nvmlDeviceGetComputeRunningProcesses: the job's script exports the marker, Slurm
// sets CUDA_VISIBLE_DEVICES to the job's GPUs.
//
// Thread-safety: ParseMarkedProcess is pure; ProcProcessScanner methods may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/mutex.h"

namespace gpuscope::sim {

// The GPUs (NVML indices below gpu_count, sorted, unique) of a process given its NUL-separated
// environment, or nullopt when it lacks `marker`=1. Entries that are not indices (GPU UUIDs, "NoDevFiles")
// are ignored.
std::optional<std::vector<unsigned>> ParseMarkedProcess(std::string_view environ, std::string_view marker,
                                                        unsigned gpu_count);

class ProcProcessScanner {
 public:
  ProcProcessScanner(std::string proc_root, std::string marker, unsigned gpu_count);

  // The marked processes' pids on each GPU (index -> sorted pids). Rescans `proc_root` at most every
  // 250 ms of real time and answers from the cache otherwise; unreadable entries are skipped.
  std::vector<std::vector<unsigned>> ProcessesByGpu();

 private:
  const std::string proc_root_;
  const std::string marker_;
  const unsigned gpu_count_;
  gpuscope::Mutex mu_;
  std::chrono::steady_clock::time_point scanned_at_ GUARDED_BY(mu_){};
  bool scanned_ GUARDED_BY(mu_) = false;
  std::vector<std::vector<unsigned>> by_gpu_ GUARDED_BY(mu_);
};

}  // namespace gpuscope::sim
