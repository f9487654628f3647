// Classifiers for the lines Slurm writes into a job's output and slurmd logs when a job or step is
// interrupted: cancellations ("*** JOB 42 ON node1 CANCELLED AT ... DUE TO TIME LIMIT ***"), the step
// daemon's OOM report ("Detected 1 oom_kill event in StepId=42.0") and srun's task failures
// ("srun: error: node1: task 3: Exited with exit code 1"). No I/O.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// A "slurm_interruption" event for a "*** JOB|STEP ... ***" banner: fields job_id, [step_id], [node],
// reason, [signal]. Reasons and severities: time_limit, preemption, job_requeue, cancelled (scancel by a
// user), signal -> warning; node_failure, stepd_terminated, failed -> error. Returns nullopt otherwise.
std::optional<Event> ClassifySlurmCancelLine(std::string_view line);

// A "slurm_interruption" event with reason oom_kill (severity error) for slurmstepd's OOM report:
// fields job_id, [step_id], reason, [count]. This is the job's view of a kernel "oom" event; count the
// kernel's events for OOM totals. Returns nullopt otherwise.
std::optional<Event> ClassifySlurmOomLine(std::string_view line);

// A "slurm_interruption" event for srun's task failure line: fields node, tasks ("3", "0-3,5"),
// reason (task_exit with exit_code, or task_signal with signal, e.g. "Killed"). Severity error. Returns
// nullopt otherwise.
std::optional<Event> ClassifySrunTaskLine(std::string_view line);

}  // namespace gpuscope
