// The Slurm scheduler collector's per-command family builders: from one successful run's output of
// squeue, sinfo, sdiag or sshare (parsed by src/parsers/slurm_scheduler.h) to the families it yields,
// created from the table in slurm_scheduler_families.h. Each sets `rejected` to the number of output
// lines that could not be parsed.
//
// Thread-safety: pure functions, callable from any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

// gpuscope_slurm_jobs (user label only when include_user), gpuscope_slurm_jobs_pending and
// gpuscope_slurm_job_gpus, from `squeue -h -r -o kSqueueFormat`.
std::vector<MetricFamily> SqueueFamilies(std::string_view text, bool include_user, uint64_t& rejected);

// Node state, draining, down and GPU counts per node and per partition, from `sinfo -N -h -O kSinfoFormat`.
std::vector<MetricFamily> SinfoFamilies(std::string_view text, uint64_t& rejected);

// The scheduler statistics (cycle times in seconds) and RPCs by type, from `sdiag`.
std::vector<MetricFamily> SdiagFamilies(std::string_view text, uint64_t& rejected);

// Shares, usage and fairshare per association (user rows only when include_user), from
// `sshare -h -P -a -o kSshareFields`.
std::vector<MetricFamily> SshareFamilies(std::string_view text, bool include_user, uint64_t& rejected);

}  // namespace gpuscope
