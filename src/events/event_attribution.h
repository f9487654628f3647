// Ties an event to a job: through the job id the line itself names (Slurm's "JOB 1234 CANCELLED", a memory
// cgroup's ".../job_1234/..."), the job id in the path of the file it came from (slurm-1234.out), or the
// GPU it is about (an XID names the GPU's PCI bus id, the agent's training_hang its GPU's UUID →
// GpuDirectory → JobTable). User and account come
// from the JobTable when it knows the job.
//
// Thread-safety: pure functions over the given snapshots.
#pragma once

#include <string>
#include <string_view>

#include "src/events/event.h"
#include "src/node/gpu_directory.h"
#include "src/node/job_table.h"

namespace gpuscope {

struct EventAttribution {
  std::string job_id;
  std::string user;
  std::string account;
  std::string gpu;  // NVML index, for events about one GPU
  std::string uuid;
};

// The Slurm job id a log file's path names: "slurm-1234.out" / "slurm-1234_7.err" (array task, answered as
// "1234_7"), or a directory or file name "job_1234", "job-1234", "job1234". Empty when none.
std::string JobIdFromPath(std::string_view path);

// `origin_path` is the file the line came from (empty for kmsg/journal); `jobs` and `gpus` may be null.
EventAttribution AttributeEvent(const Event& event, std::string_view origin_path, const JobTable::View* jobs,
                                const GpuDirectory* gpus);

}  // namespace gpuscope
