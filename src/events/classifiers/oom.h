// Classifiers for the kernel OOM killer's lines: the kill itself ("Out of memory: Killed process ...",
// "Memory cgroup out of memory: Killed process ...") and the summary line naming the cgroups
// ("oom-kill:constraint=...,task_memcg=/slurm/uid_1001/job_42/...") from which the Slurm job is read.
// No I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// An "oom" event (severity error), one per process killed: fields scope ("system", "memcg" or "other"),
// pid, process, [uid], rss_bytes (anon + file + shmem), [anon_rss_bytes], [total_vm_bytes],
// [oom_score_adj]. Returns nullopt when the line is not a "Killed process PID (COMM)" report.
std::optional<Event> ClassifyOomKillLine(std::string_view line);

// An "oom_summary" event (severity info: the kill itself is the "oom" event of the next line, count
// that one): fields constraint, [pid], [process], [uid], [cgroup] (task_memcg), [job_id], [step_id].
// Returns nullopt when the line has no "oom-kill:" key=value list.
std::optional<Event> ClassifyOomSummaryLine(std::string_view line);

// The Slurm job and step named by a cgroup path: cgroup v1 "/slurm/uid_1001/job_42/step_0/task_1", v2
// "/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0". Empty strings when absent.
struct SlurmCgroupIds {
  std::string job_id;
  std::string step_id;  // "0", "batch", "extern", "interactive"
};
SlurmCgroupIds SlurmIdsFromCgroupPath(std::string_view path);

}  // namespace gpuscope
