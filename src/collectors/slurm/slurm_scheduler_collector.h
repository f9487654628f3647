// SlurmSchedulerCollector: the cluster's queue, nodes, scheduler statistics and fairshare as metrics,
// replacing a separate slurm-exporter. Meant for ONE place per cluster (a login/controller node's agent
// or a small agent process of its own); every node's agent does not need it.
//
// Each Collect() runs, concurrently, one of each:
//   squeue -h -r -o '%i|%T|%P|%a|%u|%D|%b|%r'
//   sinfo  -N -h -O 'NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:'
//   sdiag
//   sshare -h -P -a -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare
// each under a hard timeout (RunCommandWithTimeout kills its process group), so one cycle never lasts
// longer than `timeout` (plus reaping) even when slurmctld does not answer (the clients themselves retry
// for ~9 s). Off the scrape path: the agent's scheduler calls Collect() on this collector's own
// interval (suggested 30 s); a scrape only reads the published snapshot.
//
// Cache: the families built from each command's last good output are kept. When a command fails they
// are reported again only while younger than `max_staleness` (gpuscope_slurm_data_age_seconds{command}
// says how old what is served is); older, they are dropped rather than shown as current.
// gpuscope_slurm_up is 1 when squeue and sinfo both answered this cycle; when it is 0 the cause is logged
// (a warning on the transition) and exported as gpuscope_slurm_error_info{command,reason} 1, reason one
// of: timeout, controller_unreachable, not_found, failed, output_too_large.
//
// Thread-safety: Collect() from the scheduler thread only (never concurrently with itself); Name() and
// Describe() from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/core/collector.h"

namespace gpuscope {

struct CommandResult;

struct SlurmSchedulerOptions {
  std::string squeue_path = "squeue";  // each looked up in PATH when it has no '/'
  std::string sinfo_path = "sinfo";
  std::string sdiag_path = "sdiag";
  std::string sshare_path = "sshare";
  std::chrono::milliseconds timeout{15000};        // hard limit per command run
  std::chrono::milliseconds max_staleness{90000};  // a failed command's last good values: served this long
  bool include_user = true;              // the user label on gpuscope_slurm_jobs, user rows of fairshare
  bool collect_sdiag = true;             // scheduler statistics
  bool collect_sshare = true;            // fairshare
  size_t max_output_bytes = 512u << 20;  // larger output: the run fails (output_too_large)
};

class SlurmSchedulerCollector : public Collector {
 public:
  explicit SlurmSchedulerCollector(SlurmSchedulerOptions options);

  std::string_view Name() const override { return "slurm"; }
  // Appends this cycle's families (fresh or cached-but-fresh values, plus the self-metrics). Returns Ok;
  // NoData when none of the Slurm commands exists on this machine (not a Slurm host); Unavailable
  // (families still appended, gpuscope_slurm_up 0) when squeue or sinfo failed.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  enum Command { kSqueue = 0, kSinfo, kSdiag, kSshare, kCommandCount };
  struct CommandState {
    std::vector<MetricFamily> families;  // built from the last good output
    std::optional<std::chrono::steady_clock::time_point> last_success;
    double last_success_unix = 0;
    double last_duration_s = 0;
    std::map<std::string, uint64_t> runs;  // result -> count
    uint64_t rejected_lines = 0;
    bool ok = false;  // this cycle
    bool enabled = true;
    std::string reason;  // failure category this cycle
  };

  // Records one command's run of this cycle in its state; its families are rebuilt when it succeeded.
  void Record(Command c, const CommandResult& run, double seconds, std::chrono::steady_clock::time_point now,
              double now_unix);
  // Logs slurm_up's transitions (at warn/info) and failures that do not change it (at debug).
  void LogFailures(bool up, const std::vector<std::pair<int, std::string>>& errors);
  // The self-metrics of every enabled command, then the data families still fresh enough to serve.
  void AppendFamilies(bool up, std::chrono::steady_clock::time_point now, std::vector<MetricFamily>& out);

  const SlurmSchedulerOptions options_;
  std::array<CommandState, kCommandCount> state_;
  bool was_up_ = true;  // for logging transitions only
};

}  // namespace gpuscope
