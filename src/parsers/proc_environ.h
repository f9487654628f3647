// Parses /proc/<pid>/environ (NUL-separated NAME=value entries) into the Slurm variables that attribute
// a process to a job. environ holds secrets (tokens, passwords): only the whitelisted SLURM_* names below
// are ever looked at and kept; every other entry is skipped without being copied.
//
// The content may be truncated (the reader caps it), may lack the final NUL, and may contain invalid
// UTF-8. Values are validated: ids must be digits, names must be short printable text; an invalid value
// is dropped (left empty) rather than repaired. When a name occurs twice the first wins, as getenv() does.
//
// Note: a process can set any environment it likes, so these fields are claims of the process, not facts;
// the caller must prefer the cgroup (see proc_cgroup.h) for the job id.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

// The most bytes of environ that are parsed; the reader should read at most kMaxEnvironBytes + 1 bytes
// so the parser can tell a cut-off last entry from a complete one.
inline constexpr size_t kMaxEnvironBytes = 128 * 1024;

struct SlurmEnviron {
  std::string job_id;         // SLURM_JOB_ID (digits)
  std::string array_job_id;   // SLURM_ARRAY_JOB_ID (digits)
  std::string array_task_id;  // SLURM_ARRAY_TASK_ID (digits)
  std::string step_id;        // SLURM_STEP_ID: digits, or batch/extern/interactive for Slurm's special ids
  std::string proc_id;        // SLURM_PROCID: the global rank (digits)
  std::string local_id;       // SLURM_LOCALID: the node-local rank (digits)
  std::string account;        // SLURM_JOB_ACCOUNT
  std::string user;           // SLURM_JOB_USER
  std::string uid;            // SLURM_JOB_UID (digits)
  std::string partition;      // SLURM_JOB_PARTITION
  std::string job_name;       // SLURM_JOB_NAME
  bool truncated = false;     // the content exceeded kMaxEnvironBytes; the cut-off last entry was ignored
  size_t rejected = 0;        // whitelisted variables whose value failed validation

  bool empty() const { return job_id.empty() && proc_id.empty() && step_id.empty(); }
};

// Never fails: unknown, malformed or invalid entries are skipped; an empty result means "no Slurm job".
SlurmEnviron ParseSlurmEnviron(std::string_view content);

// What a training process's launcher put in its environment, for the training source to check a rank's
// claims against (docs/design/training.md). Only these names are read, in this order of preference:
//   rank:       RANK (torchrun), SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK (digits);
//   local_rank: LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK (digits);
//   job:        SLURM_JOB_ID (digits), else GPUSCOPE_JOB_ID (printable text, at most 128 bytes);
//   gpus:       SLURM_STEP_GPUS, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES: the first that is a comma-separated
//               list of GPU indices (Slurm's are the node's indices; CUDA_VISIBLE_DEVICES may be renumbered
//               by the device cgroup or hold UUIDs, which are skipped).
// Same input rules as ParseSlurmEnviron: bounded, first occurrence wins, invalid values dropped.
struct TrainingEnviron {
  std::string rank;  // empty when none of the names holds digits
  std::string local_rank;
  std::string job;
  std::vector<std::string> gpus;  // indices, in the order the launcher listed them
};
TrainingEnviron ParseTrainingEnviron(std::string_view content);

}  // namespace gpuscope
