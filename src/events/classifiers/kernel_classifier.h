// The kernel-family dispatcher: one call that classifies a line from the kernel log (XID, SXid, OOM
// killer) or from a Slurm job's output / slurmd log (cancellations, OOM, task failures). Sources (kmsg,
// file tailers, journald) call it for every line; lines that match nothing are rejected by a few
// substring scans before any parsing.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// The event for `line` (without or with its trailing newline, with any dmesg "[  12.3] ", kmsg "<4>",
// "kernel: " or syslog timestamp/host prefix) from the first kernel-family classifier that recognises
// it: xid, sxid, oom, oom_summary or slurm_interruption (see xid.h, oom.h, slurm_lines.h). Returns
// nullopt for lines of no interest. Any byte string is accepted: invalid UTF-8 and NUL bytes never
// crash, field values are capped in length and made valid UTF-8.
std::optional<Event> ClassifyKernelLine(std::string_view line);

}  // namespace gpuscope
