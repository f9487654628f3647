// Parser of `scontrol show job -o` (Slurm 22.05: one job per line, space-separated Key=Value pairs) into
// the fields attribution needs. Pure: std::string_view in, structs out, no I/O.
//
// Values of some keys hold free text with spaces (JobName, Comment, Command, WorkDir, StdOut...): such a
// value runs up to the next token that starts with a key Slurm prints (`UserId=`, `Account=`, ...). A
// free-text value that itself contains such a key (a job named "x Account=admin") makes the key appear
// twice in the line: the record is then rejected as ambiguous rather than risk a wrong label.
// Slurm 22.05's scontrol has no --json (it answers "unrecognized option"), hence this text parser.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

struct ScontrolJob {
  std::string job_id;         // JobId: for an array task its own id
  std::string array_job_id;   // ArrayJobId; empty unless an array task
  std::string array_task_id;  // ArrayTaskId; empty unless an array task
  std::string job_name;       // JobName, spaces kept
  std::string user;           // from UserId=alice(1001); empty when unknown
  std::string uid;            // "1001"
  std::string account;        // Account; empty for "(null)"
  std::string partition;
  std::string job_state;  // "RUNNING", "PENDING", "COMPLETED", ...
  std::string node_list;  // empty for "(null)" (pending)
};

struct ScontrolJobs {
  std::vector<ScontrolJob> jobs;
  // Non-empty lines that were not a usable job record, each with its reason (for logs and a counter).
  std::vector<std::string> rejected;
};

// The Key=Value pairs of one `-o` line, in order, values as views into `line`. Never fails: text before
// the first key is ignored.
std::vector<std::pair<std::string_view, std::string_view>> SplitScontrolRecord(std::string_view line);

// Every job of a `scontrol show job -o` output. "No jobs in the system" gives no jobs and no rejection.
// A record without a numeric JobId, or with an identity key twice, is rejected with a reason.
ScontrolJobs ParseScontrolShowJob(std::string_view text);

}  // namespace gpuscope
