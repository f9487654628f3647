// Slurm's own accounting of one job for `gpuscope job`: `sacct -X -j ID --parsable2 --noheader
// --format=JobID,State,Elapsed,ExitCode,AllocTRES` (the allocation line only), run with a hard timeout.
// The parser is pure; QuerySlurmAccounting runs the command.
//
// Thread-safety: free functions (QuerySlurmAccounting forks, as RunCommandWithTimeout does).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "src/cli/job_report.h"
#include "src/core/status.h"

namespace gpuscope {

// The --format list QuerySlurmAccounting asks sacct for, in the order ParseSacctOutput reads.
inline constexpr std::string_view kSacctFormat = "JobID,State,Elapsed,ExitCode,AllocTRES";

// Fills *accounting (reachable, state, elapsed, exit_code, alloc_tres, gpus) from sacct's output for
// `job`: the line whose JobID is `job`. NotFound when no line is the job's; InvalidArgument for a line
// without the five fields.
Status ParseSacctOutput(std::string_view output, const std::string& job, JobAccounting* accounting);

// The GPU count of an AllocTRES value ("cpu=8,gres/gpu=4,mem=64G,node=1" -> 4); typed counts
// ("gres/gpu:h100=4") are summed when no untyped one is given; -1 when it names no GPUs.
int GpusOfTres(std::string_view tres);

// Runs sacct (`sacct_binary`, found on PATH without a '/') for `job`. Never fails: an accounting whose
// reachable is false carries the reason (no sacct, its error, a timeout, no line for the job).
JobAccounting QuerySlurmAccounting(const std::string& sacct_binary, const std::string& job,
                                   std::chrono::milliseconds timeout);

}  // namespace gpuscope
