// Parses /proc/<pid>/cgroup into the Slurm job (and step, task, uid) whose cgroup holds the process.
// Slurm's cgroup plugins place every task of a job under a directory named after it; the layouts known
// (Slurm 20.11 to 24.x) are:
//   cgroup v1 (one line per hierarchy: freezer, memory, devices, cpuset, cpuacct, ...):
//     "4:memory:/slurm/uid_1001/job_1234/step_0/task_0"
//     "4:memory:/slurm_node7/uid_1001/job_1234/step_0/task_0"        (MultipleSlurmd: slurm_<nodename>)
//   cgroup v2 (one "0::" line):
//     "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0"
//     "0::/system.slice/node7_slurmstepd.scope/job_1234/step_batch/user/task_0"  (<nodename>_slurmstepd)
//     "0::/slurm/job_1234/step_0/user/task_0"                      (IgnoreSystemd=yes, custom roots)
// Steps are numbers ("0", het components "0+1") or the named steps batch, extern, interactive.
// A job directory counts only under a Slurm root component (slurm, slurm_<node>, slurmstepd.scope,
// <node>_slurmstepd.scope), so a docker/k8s/user cgroup that happens to contain "job_1" is not a job.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuscope {

struct SlurmCgroup {
  std::string job_id;   // digits, never empty
  std::string step_id;  // "0", "0+1", "batch", "extern", "interactive"; empty when the path stops at the job
  std::string task_id;  // digits; empty when unknown
  std::string uid;      // digits from v1's uid_<n>; empty for v2 (its paths carry no uid)
};

// The Slurm job of one cgroup path ("/slurm/uid_1/job_2/step_0"). Returns nullopt for a path that is not
// inside a Slurm job cgroup, or whose job component is malformed.
std::optional<SlurmCgroup> ParseSlurmCgroupPath(std::string_view path);

// The Slurm job of the whole file. The unified line ("0::...") is tried first, then the v1 lines in file
// order; the first that names a job wins (on a hybrid host the unified line shows systemd's placement,
// e.g. "/system.slice/slurmd.service", while the v1 controllers hold the job). Malformed lines are
// skipped. Returns nullopt when no line names a Slurm job.
std::optional<SlurmCgroup> ParseProcCgroup(std::string_view content);

}  // namespace gpuscope
