// Parsers of the Slurm 22.05 client outputs the scheduler collector reads: squeue, sinfo, sdiag and
// sshare (see slurm_scheduler_collector.h for the exact command lines). Pure: std::string_view in,
// structs out, no I/O. Every parser is total: malformed lines are skipped and listed in `rejected`
// (for a log line and a counter), never a crash; a value that does not parse is absent, not zero.
//
// Slurm 22.05's squeue/sinfo/sdiag have no --json (sdiag answers "unrecognized option"; squeue --json
// needs the data_parser plugins that Debian's build lacks), hence these text formats, chosen so that
// free text (the pending reason, the node reason) is the last field and may contain the separator.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

// ---- squeue -h -r -o '%i|%T|%P|%a|%u|%D|%b|%r' -----------------------------------------------------
inline constexpr std::string_view kSqueueFormat = "%i|%T|%P|%a|%u|%D|%b|%r";

struct SqueueJob {
  std::string_view job_id;     // "1234" or "1234_7" (array task; -r prints one line per task)
  std::string_view state;      // %T: PENDING, RUNNING, COMPLETING, ...
  std::string_view partition;  // %P; a pending job submitted to several partitions prints "a,b"
  std::string_view account;    // %a; "(null)" when there is no accounting
  std::string_view user;       // %u
  std::string_view reason;     // %r: "None" for running jobs, "Resources", "JobHeldUser", free text
  uint32_t nodes = 0;          // %D
  double gpus_per_node = 0;    // from %b (tres-per-node, "gres:gpu:2", "gres:gpu:h100:2"); 0 for "N/A"
};

struct SqueueJobs {
  std::vector<SqueueJob> jobs;  // views into the parsed text: keep it alive
  std::vector<std::string> rejected;
};

SqueueJobs ParseSqueue(std::string_view text);

// GPUs in a tres-per-node / gres request: "gres:gpu:2", "gres/gpu:2", "gres:gpu:h100:2",
// "gres:gpu:2,gres:nvme:1" (sums every gpu item). Returns 0 for "N/A", "" or nothing about gpus.
double GpusInTresPerNode(std::string_view tres);

// ---- sinfo -N -h -O 'NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:' ------------------
// (`Field:|` = no padding, '|' as suffix; Reason last because it is free text.)
inline constexpr std::string_view kSinfoFormat =
    "NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:";

struct SinfoNode {
  std::string_view node;
  std::string_view partition;    // without the default partition's '*' marker
  std::string state;             // base state, lowercase, flags stripped: "idle", "mixed", "draining", "down"
  std::string_view state_flags;  // trailing flag characters ("*" not responding, "~" powered down, ...)
  std::string_view reason;       // "" for sinfo's "none"
  double gpus_total = 0;         // from Gres
  double gpus_allocated = 0;     // from GresUsed
  bool has_gpus = false;         // the Gres field named a gpu
};

struct SinfoNodes {
  std::vector<SinfoNode> nodes;  // one per (node, partition), views into the parsed text
  std::vector<std::string> rejected;
};

SinfoNodes ParseSinfo(std::string_view text);

// Sum of the gpu counts of a Gres / GresUsed field: "gpu:8", "gpu:h100:8(S:0-1)", "gpu:2(IDX:0-1)",
// "gpu:a100:2(IDX:0,2),gpu:v100:1(IDX:5)", "gpu:h100:0(IDX:N/A)", "(null)". Commas inside
// parentheses belong to the index list. nullopt when no gpu item is present.
std::optional<double> GpusInGres(std::string_view gres);

// True for the drain states sinfo prints ("drained", "draining", and the "+drain" combinations).
bool IsDrainState(std::string_view state);

// ---- sdiag -------------------------------------------------------------------------------------------
struct SdiagStats {
  // Top section. Keys are the metric suffixes the collector uses ("server_thread_count", ...).
  std::map<std::string, double> values;
  // "Remote Procedure Call statistics by message type": type -> {count, total_time microseconds}.
  struct Rpc {
    double count = 0;
    double total_time_us = 0;
  };
  std::map<std::string, Rpc> rpcs_by_type;
  std::vector<std::string> rejected;
};

// Known keys in `values` (absent when sdiag did not print them):
//   server_thread_count, agent_queue_size, agent_count, agent_thread_count, dbd_agent_queue_size,
//   jobs_submitted, jobs_started, jobs_completed, jobs_canceled, jobs_failed, data_since_timestamp,
//   main_last_cycle_us, main_max_cycle_us, main_total_cycles, main_mean_cycle_us, main_mean_depth_cycle,
//   main_last_queue_length, backfill_total_backfilled_jobs, backfill_total_cycles,
//   backfill_last_cycle_when_timestamp, backfill_last_cycle_us, backfill_max_cycle_us,
//   backfill_mean_cycle_us, backfill_last_depth_cycle, backfill_last_queue_length
SdiagStats ParseSdiag(std::string_view text);

// ---- sshare -h -P -a -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare -----------
inline constexpr std::string_view kSshareFields =
    "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare";

struct SshareRow {
  std::string_view account;          // leading hierarchy spaces trimmed
  std::string_view user;             // "" for an account's own row
  std::optional<double> raw_shares;  // absent for "parent"
  std::optional<double> norm_shares;
  std::optional<double> raw_usage;
  std::optional<double> effective_usage;
  std::optional<double> fairshare;
};

struct SshareRows {
  std::vector<SshareRow> rows;
  std::vector<std::string> rejected;
};

SshareRows ParseSshare(std::string_view text);

}  // namespace gpuscope
