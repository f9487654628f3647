// Running an external command (scontrol, squeue, sinfo, ...) with a hard timeout: the one way gpuscope
// runs a child process. The child gets stdin from /dev/null and its own process group; past the timeout
// the whole group is killed with SIGKILL and the child reaped, so a hung client (a Slurm command blocks
// for its own ~10 s retry loop when slurmctld does not answer) never stalls the caller for longer.
//
// Thread-safety: RunCommandWithTimeout is safe to call from any thread (it forks; after fork the child
// only makes async-signal-safe calls).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

// The result of one command run.
struct CommandResult {
  Status status;       // Ok on exit 0; DeadlineExceeded on timeout; InvalidArgument for an empty argv;
                       // Unavailable otherwise (not found, non-zero exit with stderr's first line, output
                       // over the limit)
  std::string output;  // stdout (whatever was read, also on failure)
  std::string error;   // first 4 KiB of stderr
};

// Runs argv[0] (PATH lookup when it has no '/') with argv. Never blocks longer than `timeout` plus the
// reaping of a killed child. Output beyond `max_output_bytes` kills the child and fails the run.
CommandResult RunCommandWithTimeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                    size_t max_output_bytes);

}  // namespace gpuscope
