#include "src/collectors/slurm/slurm_scheduler_collector.h"

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/slurm_scheduler.h"
#include "src/platform/command.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, 4> kCommandNames = {"squeue", "sinfo", "sdiag", "sshare"};

// Every family this collector emits, in one table: Describe() lists it, Collect() builds from it.
struct FamilySpec {
  std::string_view name;
  MetricType type;
  std::string_view unit;
  std::vector<std::string> labels;
  std::string_view source;
  std::string_view help;
};

const std::vector<FamilySpec>& Specs() {
  static const std::vector<FamilySpec> specs = {
      // self
      {"gpuscope_slurm_up",
       MetricType::kGauge,
       "",
       {},
       "squeue, sinfo",
       "1 when squeue and sinfo both answered this cycle (slurmctld reachable), else 0."},
      {"gpuscope_slurm_error_info",
       MetricType::kGauge,
       "",
       {"command", "reason"},
       "command runs",
       "1 for each Slurm command that failed this cycle; reason is timeout, controller_unreachable, "
       "not_found, failed or output_too_large."},
      {"gpuscope_slurm_command_success",
       MetricType::kGauge,
       "",
       {"command"},
       "command runs",
       "1 when the command answered this cycle, else 0."},
      {"gpuscope_slurm_command_duration_seconds",
       MetricType::kGauge,
       "seconds",
       {"command"},
       "command runs",
       "Wall time of the command's last run."},
      {"gpuscope_slurm_command_runs_total",
       MetricType::kCounter,
       "",
       {"command", "result"},
       "command runs",
       "Command runs by result (ok or a failure reason)."},
      {"gpuscope_slurm_command_last_success_timestamp_seconds",
       MetricType::kGauge,
       "seconds",
       {"command"},
       "command runs",
       "Unix time of the command's last successful run."},
      {"gpuscope_slurm_data_age_seconds",
       MetricType::kGauge,
       "seconds",
       {"command"},
       "command runs",
       "Age of the values reported from this command: 0 when it answered this cycle, else the age of the "
       "cached values (reported only while younger than the staleness limit)."},
      {"gpuscope_slurm_parse_rejected_lines_total",
       MetricType::kCounter,
       "",
       {"command"},
       "parsers",
       "Output lines of the command that could not be parsed."},
      // squeue
      {"gpuscope_slurm_jobs",
       MetricType::kGauge,
       "",
       {"state", "partition", "account", "user"},
       "squeue",
       "Jobs (array tasks counted one by one) by state, partition, account and user."},
      {"gpuscope_slurm_jobs_pending",
       MetricType::kGauge,
       "",
       {"partition", "reason"},
       "squeue %r",
       "Pending jobs by partition and pending reason."},
      {"gpuscope_slurm_job_gpus",
       MetricType::kGauge,
       "",
       {"state", "partition"},
       "squeue %b x %D",
       "GPUs requested per node (tres-per-node) times nodes, summed by job state and partition."},
      // sinfo
      {"gpuscope_slurm_node_state",
       MetricType::kGauge,
       "",
       {"node", "state"},
       "sinfo StateLong",
       "1 for the node's current base state (idle, mixed, allocated, draining, drained, down, ...)."},
      {"gpuscope_slurm_node_draining",
       MetricType::kGauge,
       "",
       {"node", "reason"},
       "sinfo StateLong, Reason",
       "1 when the node is draining or drained (reason: the admin's reason), else 0 (reason none)."},
      {"gpuscope_slurm_node_down",
       MetricType::kGauge,
       "",
       {"node", "reason"},
       "sinfo StateLong, Reason",
       "1 when the node is down, failing or not responding, else 0 (reason none when Slurm has none)."},
      {"gpuscope_slurm_node_gpus",
       MetricType::kGauge,
       "",
       {"node"},
       "sinfo Gres",
       "GPUs configured on the node."},
      {"gpuscope_slurm_node_gpus_allocated",
       MetricType::kGauge,
       "",
       {"node"},
       "sinfo GresUsed",
       "GPUs allocated to jobs on the node."},
      {"gpuscope_slurm_node_gpus_idle",
       MetricType::kGauge,
       "",
       {"node"},
       "sinfo Gres - GresUsed",
       "GPUs not allocated on the node (whatever the node's state)."},
      {"gpuscope_slurm_partition_gpus",
       MetricType::kGauge,
       "",
       {"partition"},
       "sinfo Gres",
       "GPUs configured on the partition's nodes."},
      {"gpuscope_slurm_partition_gpus_allocated",
       MetricType::kGauge,
       "",
       {"partition"},
       "sinfo GresUsed",
       "GPUs allocated on the partition's nodes."},
      {"gpuscope_slurm_partition_gpus_idle",
       MetricType::kGauge,
       "",
       {"partition"},
       "sinfo Gres - GresUsed",
       "GPUs not allocated on the partition's nodes."},
      {"gpuscope_slurm_partition_nodes",
       MetricType::kGauge,
       "",
       {"partition", "state"},
       "sinfo StateLong",
       "Nodes of the partition by base state."},
      // sdiag
      {"gpuscope_slurm_scheduler_server_threads",
       MetricType::kGauge,
       "",
       {},
       "sdiag Server thread count",
       "slurmctld server threads in use."},
      {"gpuscope_slurm_scheduler_agent_queue_size",
       MetricType::kGauge,
       "",
       {},
       "sdiag Agent queue size",
       "RPCs queued for slurmctld's agents (to slurmd)."},
      {"gpuscope_slurm_scheduler_agents", MetricType::kGauge, "", {}, "sdiag Agent count", "Agents running."},
      {"gpuscope_slurm_scheduler_agent_threads",
       MetricType::kGauge,
       "",
       {},
       "sdiag Agent thread count",
       "Agent threads running."},
      {"gpuscope_slurm_scheduler_dbd_agent_queue_size",
       MetricType::kGauge,
       "",
       {},
       "sdiag DBD Agent queue size",
       "Messages queued for slurmdbd."},
      {"gpuscope_slurm_scheduler_jobs_submitted_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Jobs submitted",
       "Jobs submitted since the statistics were reset (midnight UTC or a slurmctld restart)."},
      {"gpuscope_slurm_scheduler_jobs_started_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Jobs started",
       "Jobs started since the statistics were reset."},
      {"gpuscope_slurm_scheduler_jobs_completed_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Jobs completed",
       "Jobs completed since the statistics were reset."},
      {"gpuscope_slurm_scheduler_jobs_canceled_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Jobs canceled",
       "Jobs canceled since the statistics were reset."},
      {"gpuscope_slurm_scheduler_jobs_failed_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Jobs failed",
       "Jobs failed since the statistics were reset."},
      {"gpuscope_slurm_scheduler_stats_reset_timestamp_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Data since",
       "Unix time the sdiag statistics were last reset."},
      {"gpuscope_slurm_scheduler_main_cycle_last_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Main schedule Last cycle",
       "Duration of the last main scheduling cycle."},
      {"gpuscope_slurm_scheduler_main_cycle_max_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Main schedule Max cycle",
       "Longest main scheduling cycle since the reset."},
      {"gpuscope_slurm_scheduler_main_cycle_mean_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Main schedule Mean cycle",
       "Mean main scheduling cycle since the reset."},
      {"gpuscope_slurm_scheduler_main_cycles_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Main schedule Total cycles",
       "Main scheduling cycles since the reset."},
      {"gpuscope_slurm_scheduler_main_mean_depth",
       MetricType::kGauge,
       "",
       {},
       "sdiag Main schedule Mean depth cycle",
       "Mean jobs looked at per main scheduling cycle."},
      {"gpuscope_slurm_scheduler_main_queue_length",
       MetricType::kGauge,
       "",
       {},
       "sdiag Main schedule Last queue length",
       "Jobs pending at the last main scheduling cycle."},
      {"gpuscope_slurm_scheduler_backfill_cycle_last_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Backfilling Last cycle",
       "Duration of the last backfill cycle."},
      {"gpuscope_slurm_scheduler_backfill_cycle_max_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Backfilling Max cycle",
       "Longest backfill cycle since the reset."},
      {"gpuscope_slurm_scheduler_backfill_cycle_mean_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Backfilling Mean cycle",
       "Mean backfill cycle since the reset (printed once a cycle ran)."},
      {"gpuscope_slurm_scheduler_backfill_cycles_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Backfilling Total cycles",
       "Backfill cycles since the reset."},
      {"gpuscope_slurm_scheduler_backfilled_jobs_total",
       MetricType::kCounter,
       "",
       {},
       "sdiag Total backfilled jobs (since last slurm start)",
       "Jobs started by backfill since slurmctld started."},
      {"gpuscope_slurm_scheduler_backfill_last_depth",
       MetricType::kGauge,
       "",
       {},
       "sdiag Backfilling Last depth cycle",
       "Jobs looked at in the last backfill cycle."},
      {"gpuscope_slurm_scheduler_backfill_queue_length",
       MetricType::kGauge,
       "",
       {},
       "sdiag Backfilling Last queue length",
       "Jobs pending at the last backfill cycle."},
      {"gpuscope_slurm_scheduler_backfill_last_cycle_timestamp_seconds",
       MetricType::kGauge,
       "seconds",
       {},
       "sdiag Backfilling Last cycle when",
       "Unix time of the last backfill cycle (absent before the first)."},
      {"gpuscope_slurm_scheduler_rpc_calls_total",
       MetricType::kCounter,
       "",
       {"type"},
       "sdiag RPC statistics by message type",
       "RPCs slurmctld served, by message type."},
      {"gpuscope_slurm_scheduler_rpc_time_seconds_total",
       MetricType::kCounter,
       "seconds",
       {"type"},
       "sdiag RPC statistics by message type",
       "Time slurmctld spent serving RPCs, by message type."},
      // sshare
      {"gpuscope_slurm_share_raw_shares",
       MetricType::kGauge,
       "",
       {"account", "user"},
       "sshare RawShares",
       "Shares assigned to the association (absent for \"parent\"); user is empty on an account's row."},
      {"gpuscope_slurm_share_normalized_shares",
       MetricType::kGauge,
       "",
       {"account", "user"},
       "sshare NormShares",
       "Shares normalized to the cluster (0..1)."},
      {"gpuscope_slurm_share_raw_usage",
       MetricType::kGauge,
       "",
       {"account", "user"},
       "sshare RawUsage",
       "Decayed usage in TRES-seconds (cpu-seconds by default)."},
      {"gpuscope_slurm_share_effective_usage",
       MetricType::kGauge,
       "",
       {"account", "user"},
       "sshare EffectvUsage",
       "Usage normalized to the cluster, including the parent's (0..1)."},
      {"gpuscope_slurm_fairshare",
       MetricType::kGauge,
       "",
       {"account", "user"},
       "sshare FairShare",
       "Fairshare factor (0..1; higher means more priority)."},
  };
  return specs;
}

const FamilySpec& Spec(std::string_view name) {
  for (const FamilySpec& spec : Specs()) {
    if (spec.name == name) return spec;
  }
  std::abort();  // a name missing from the table is a programming error
}

MetricFamily NewFamily(std::string_view name) {
  const FamilySpec& spec = Spec(name);
  MetricFamily family;
  family.name = std::string(spec.name);
  family.help = std::string(spec.help);
  family.type = spec.type;
  family.unit = std::string(spec.unit);
  return family;
}

void AddSample(MetricFamily& family, Labels labels, double value) {
  family.samples.push_back(Sample{std::move(labels), value});
}

// Label values are never empty where avoidable: "(null)" (no accounting) and "" become "none".
std::string Value(std::string_view v) {
  if (v.empty() || v == "(null)") return "none";
  return std::string(v);
}

std::string ReasonOf(const CommandResult& run) {
  switch (run.status.code()) {
    case Status::Code::kDeadlineExceeded:
      return "timeout";
    case Status::Code::kOk:
      return "ok";
    default:
      break;
  }
  const std::string& message = run.status.message();
  const std::string& error = run.error;
  if (error.find("Unable to contact slurm controller") != std::string::npos ||
      error.find("Socket timed out") != std::string::npos ||
      error.find("Connection refused") != std::string::npos) {
    return "controller_unreachable";
  }
  if (message.find("could not be run") != std::string::npos) return "not_found";
  if (message.find("printed more than") != std::string::npos) return "output_too_large";
  return "failed";
}

}  // namespace

SlurmSchedulerCollector::SlurmSchedulerCollector(SlurmSchedulerOptions options)
    : options_(std::move(options)) {
  state_[kSdiag].enabled = options_.collect_sdiag;
  state_[kSshare].enabled = options_.collect_sshare;
}

std::vector<MetricDescription> SlurmSchedulerCollector::Describe() const {
  std::vector<MetricDescription> out;
  for (const FamilySpec& spec : Specs()) {
    if (!options_.collect_sdiag && spec.name.starts_with("gpuscope_slurm_scheduler_")) continue;
    if (!options_.collect_sshare &&
        (spec.name.starts_with("gpuscope_slurm_share_") || spec.name == "gpuscope_slurm_fairshare")) {
      continue;
    }
    MetricDescription d;
    d.name = std::string(spec.name);
    d.type = spec.type;
    d.help = std::string(spec.help);
    d.unit = std::string(spec.unit);
    d.labels = spec.labels;
    if (!options_.include_user && spec.name == "gpuscope_slurm_jobs") {
      d.labels.erase(std::remove(d.labels.begin(), d.labels.end(), "user"), d.labels.end());
    }
    d.source = std::string(spec.source);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<MetricFamily> SlurmSchedulerCollector::BuildSqueue(std::string_view text,
                                                               uint64_t& rejected) const {
  SqueueJobs parsed = ParseSqueue(text);
  rejected = parsed.rejected.size();
  using Key4 = std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>;
  using Key2 = std::pair<std::string_view, std::string_view>;
  std::map<Key4, double> jobs;
  std::map<Key2, double> pending;
  std::map<Key2, double> gpus;
  for (const SqueueJob& job : parsed.jobs) {
    jobs[Key4{job.state, job.partition, job.account,
              options_.include_user ? job.user : std::string_view()}] += 1;
    if (job.state == "PENDING") pending[Key2{job.partition, job.reason}] += 1;
    double requested = job.gpus_per_node * std::max<uint32_t>(job.nodes, 1);
    if (requested > 0) gpus[Key2{job.state, job.partition}] += requested;
  }
  std::vector<MetricFamily> out;
  MetricFamily f_jobs = NewFamily("gpuscope_slurm_jobs");
  for (const auto& [key, n] : jobs) {
    const auto& [state, partition, account, user] = key;
    Labels labels = {{"state", Value(state)}, {"partition", Value(partition)}, {"account", Value(account)}};
    if (options_.include_user) labels.emplace_back("user", Value(user));
    AddSample(f_jobs, std::move(labels), n);
  }
  MetricFamily f_pending = NewFamily("gpuscope_slurm_jobs_pending");
  for (const auto& [key, n] : pending) {
    AddSample(f_pending, {{"partition", Value(key.first)}, {"reason", Value(key.second)}}, n);
  }
  MetricFamily f_gpus = NewFamily("gpuscope_slurm_job_gpus");
  for (const auto& [key, n] : gpus) {
    AddSample(f_gpus, {{"state", Value(key.first)}, {"partition", Value(key.second)}}, n);
  }
  out.push_back(std::move(f_jobs));
  out.push_back(std::move(f_pending));
  out.push_back(std::move(f_gpus));
  return out;
}

std::vector<MetricFamily> SlurmSchedulerCollector::BuildSinfo(std::string_view text,
                                                              uint64_t& rejected) const {
  SinfoNodes parsed = ParseSinfo(text);
  rejected = parsed.rejected.size();
  // sinfo -N prints a node once per partition: node-level series take the first line of each node.
  std::map<std::string_view, const SinfoNode*> nodes;
  struct PartitionGpus {
    double total = 0, allocated = 0;
    bool has_gpus = false;
  };
  std::map<std::string_view, PartitionGpus> partitions;
  std::map<std::pair<std::string_view, std::string_view>, double> partition_nodes;
  for (const SinfoNode& node : parsed.nodes) {
    nodes.emplace(node.node, &node);
    PartitionGpus& p = partitions[node.partition];
    p.has_gpus = p.has_gpus || node.has_gpus;
    p.total += node.gpus_total;
    p.allocated += node.gpus_allocated;
    partition_nodes[{node.partition, node.state}] += 1;
  }
  MetricFamily f_state = NewFamily("gpuscope_slurm_node_state");
  MetricFamily f_draining = NewFamily("gpuscope_slurm_node_draining");
  MetricFamily f_down = NewFamily("gpuscope_slurm_node_down");
  MetricFamily f_gpus = NewFamily("gpuscope_slurm_node_gpus");
  MetricFamily f_alloc = NewFamily("gpuscope_slurm_node_gpus_allocated");
  MetricFamily f_idle = NewFamily("gpuscope_slurm_node_gpus_idle");
  for (const auto& [name, node] : nodes) {
    std::string n(name);
    AddSample(f_state, {{"node", n}, {"state", node->state}}, 1);
    bool draining = IsDrainState(node->state);
    // "*" after the state: the node is not responding; sinfo still prints its last state.
    bool down = node->state.starts_with("down") || node->state.starts_with("fail") ||
                node->state_flags.find('*') != std::string_view::npos;
    AddSample(f_draining, {{"node", n}, {"reason", draining ? Value(node->reason) : "none"}},
              draining ? 1 : 0);
    AddSample(f_down, {{"node", n}, {"reason", down ? Value(node->reason) : "none"}}, down ? 1 : 0);
    if (node->has_gpus) {
      AddSample(f_gpus, {{"node", n}}, node->gpus_total);
      AddSample(f_alloc, {{"node", n}}, node->gpus_allocated);
      AddSample(f_idle, {{"node", n}}, std::max(0.0, node->gpus_total - node->gpus_allocated));
    }
  }
  MetricFamily f_pgpus = NewFamily("gpuscope_slurm_partition_gpus");
  MetricFamily f_palloc = NewFamily("gpuscope_slurm_partition_gpus_allocated");
  MetricFamily f_pidle = NewFamily("gpuscope_slurm_partition_gpus_idle");
  for (const auto& [name, p] : partitions) {
    if (!p.has_gpus) continue;
    AddSample(f_pgpus, {{"partition", Value(name)}}, p.total);
    AddSample(f_palloc, {{"partition", Value(name)}}, p.allocated);
    AddSample(f_pidle, {{"partition", Value(name)}}, std::max(0.0, p.total - p.allocated));
  }
  MetricFamily f_pnodes = NewFamily("gpuscope_slurm_partition_nodes");
  for (const auto& [key, n] : partition_nodes) {
    AddSample(f_pnodes, {{"partition", Value(key.first)}, {"state", Value(key.second)}}, n);
  }
  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&f_state, &f_draining, &f_down, &f_gpus, &f_alloc, &f_idle, &f_pgpus, &f_palloc,
                          &f_pidle, &f_pnodes}) {
    out.push_back(std::move(*f));
  }
  return out;
}

std::vector<MetricFamily> SlurmSchedulerCollector::BuildSdiag(std::string_view text,
                                                              uint64_t& rejected) const {
  SdiagStats stats = ParseSdiag(text);
  rejected = stats.rejected.size();
  struct Map {
    std::string_view key;
    std::string_view family;
    double scale;
  };
  static const Map kMaps[] = {
      {"server_thread_count", "gpuscope_slurm_scheduler_server_threads", 1},
      {"agent_queue_size", "gpuscope_slurm_scheduler_agent_queue_size", 1},
      {"agent_count", "gpuscope_slurm_scheduler_agents", 1},
      {"agent_thread_count", "gpuscope_slurm_scheduler_agent_threads", 1},
      {"dbd_agent_queue_size", "gpuscope_slurm_scheduler_dbd_agent_queue_size", 1},
      {"jobs_submitted", "gpuscope_slurm_scheduler_jobs_submitted_total", 1},
      {"jobs_started", "gpuscope_slurm_scheduler_jobs_started_total", 1},
      {"jobs_completed", "gpuscope_slurm_scheduler_jobs_completed_total", 1},
      {"jobs_canceled", "gpuscope_slurm_scheduler_jobs_canceled_total", 1},
      {"jobs_failed", "gpuscope_slurm_scheduler_jobs_failed_total", 1},
      {"data_since_timestamp", "gpuscope_slurm_scheduler_stats_reset_timestamp_seconds", 1},
      {"main_last_cycle_us", "gpuscope_slurm_scheduler_main_cycle_last_seconds", 1e-6},
      {"main_max_cycle_us", "gpuscope_slurm_scheduler_main_cycle_max_seconds", 1e-6},
      {"main_mean_cycle_us", "gpuscope_slurm_scheduler_main_cycle_mean_seconds", 1e-6},
      {"main_total_cycles", "gpuscope_slurm_scheduler_main_cycles_total", 1},
      {"main_mean_depth_cycle", "gpuscope_slurm_scheduler_main_mean_depth", 1},
      {"main_last_queue_length", "gpuscope_slurm_scheduler_main_queue_length", 1},
      {"backfill_last_cycle_us", "gpuscope_slurm_scheduler_backfill_cycle_last_seconds", 1e-6},
      {"backfill_max_cycle_us", "gpuscope_slurm_scheduler_backfill_cycle_max_seconds", 1e-6},
      {"backfill_mean_cycle_us", "gpuscope_slurm_scheduler_backfill_cycle_mean_seconds", 1e-6},
      {"backfill_total_cycles", "gpuscope_slurm_scheduler_backfill_cycles_total", 1},
      {"backfill_total_backfilled_jobs", "gpuscope_slurm_scheduler_backfilled_jobs_total", 1},
      {"backfill_last_depth_cycle", "gpuscope_slurm_scheduler_backfill_last_depth", 1},
      {"backfill_last_queue_length", "gpuscope_slurm_scheduler_backfill_queue_length", 1},
      {"backfill_last_cycle_when_timestamp", "gpuscope_slurm_scheduler_backfill_last_cycle_timestamp_seconds",
       1},
  };
  std::vector<MetricFamily> out;
  for (const Map& m : kMaps) {
    auto it = stats.values.find(std::string(m.key));
    if (it == stats.values.end()) continue;
    MetricFamily f = NewFamily(m.family);
    AddSample(f, {}, it->second * m.scale);
    out.push_back(std::move(f));
  }
  MetricFamily calls = NewFamily("gpuscope_slurm_scheduler_rpc_calls_total");
  MetricFamily time = NewFamily("gpuscope_slurm_scheduler_rpc_time_seconds_total");
  for (const auto& [type, rpc] : stats.rpcs_by_type) {
    AddSample(calls, {{"type", type}}, rpc.count);
    AddSample(time, {{"type", type}}, rpc.total_time_us * 1e-6);
  }
  out.push_back(std::move(calls));
  out.push_back(std::move(time));
  return out;
}

std::vector<MetricFamily> SlurmSchedulerCollector::BuildSshare(std::string_view text,
                                                               uint64_t& rejected) const {
  SshareRows parsed = ParseSshare(text);
  rejected = parsed.rejected.size();
  MetricFamily raw = NewFamily("gpuscope_slurm_share_raw_shares");
  MetricFamily norm = NewFamily("gpuscope_slurm_share_normalized_shares");
  MetricFamily usage = NewFamily("gpuscope_slurm_share_raw_usage");
  MetricFamily effective = NewFamily("gpuscope_slurm_share_effective_usage");
  MetricFamily fairshare = NewFamily("gpuscope_slurm_fairshare");
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const SshareRow& row : parsed.rows) {
    if (!options_.include_user && !row.user.empty()) continue;
    if (!seen.insert({row.account, row.user}).second) continue;  // one series per association
    Labels labels = {{"account", std::string(row.account)}, {"user", std::string(row.user)}};
    if (row.raw_shares) AddSample(raw, labels, *row.raw_shares);
    if (row.norm_shares) AddSample(norm, labels, *row.norm_shares);
    if (row.raw_usage) AddSample(usage, labels, *row.raw_usage);
    if (row.effective_usage) AddSample(effective, labels, *row.effective_usage);
    if (row.fairshare) AddSample(fairshare, labels, *row.fairshare);
  }
  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&raw, &norm, &usage, &effective, &fairshare}) out.push_back(std::move(*f));
  return out;
}

void SlurmSchedulerCollector::Record(Command c, const CommandResult& run, double seconds,
                                     Clock::time_point now, double now_unix) {
  CommandState& state = state_[c];
  state.last_duration_s = seconds;
  state.reason = ReasonOf(run);
  ++state.runs[state.reason];
  state.ok = run.status.ok();
  if (!state.ok) return;
  uint64_t rejected = 0;
  switch (c) {
    case kSqueue:
      state.families = BuildSqueue(run.output, rejected);
      break;
    case kSinfo:
      state.families = BuildSinfo(run.output, rejected);
      break;
    case kSdiag:
      state.families = BuildSdiag(run.output, rejected);
      break;
    case kSshare:
      state.families = BuildSshare(run.output, rejected);
      break;
    case kCommandCount:
      break;
  }
  state.rejected_lines += rejected;
  if (rejected > 0) {
    Log(LogLevel::kDebug, "slurm: output lines not parsed",
        {{"command", kCommandNames[c]}, {"lines", std::to_string(rejected)}});
  }
  state.last_success = now;
  state.last_success_unix = now_unix;
}

void SlurmSchedulerCollector::LogFailures(bool up, const std::vector<std::pair<int, std::string>>& errors) {
  if (!up && was_up_) {
    for (const auto& [c, message] : errors) {
      Log(LogLevel::kWarn, "slurm: command failed; slurm_up is 0",
          {{"command", kCommandNames[c]}, {"reason", state_[c].reason}, {"message", message}});
    }
  } else if (up && !was_up_) {
    Log(LogLevel::kInfo, "slurm: squeue and sinfo answer again");
  } else {
    for (const auto& [c, message] : errors) {
      Log(LogLevel::kDebug, "slurm: command failed",
          {{"command", kCommandNames[c]}, {"reason", state_[c].reason}, {"message", message}});
    }
  }
  was_up_ = up;
}

void SlurmSchedulerCollector::AppendFamilies(bool up, Clock::time_point now, std::vector<MetricFamily>& out) {
  MetricFamily f_up = NewFamily("gpuscope_slurm_up");
  AddSample(f_up, {}, up ? 1 : 0);
  MetricFamily f_error = NewFamily("gpuscope_slurm_error_info");
  MetricFamily f_success = NewFamily("gpuscope_slurm_command_success");
  MetricFamily f_duration = NewFamily("gpuscope_slurm_command_duration_seconds");
  MetricFamily f_runs = NewFamily("gpuscope_slurm_command_runs_total");
  MetricFamily f_last = NewFamily("gpuscope_slurm_command_last_success_timestamp_seconds");
  MetricFamily f_age = NewFamily("gpuscope_slurm_data_age_seconds");
  MetricFamily f_rejected = NewFamily("gpuscope_slurm_parse_rejected_lines_total");
  std::vector<MetricFamily> data;
  for (int c = 0; c < kCommandCount; ++c) {
    CommandState& state = state_[c];
    if (!state.enabled) continue;
    std::string command(kCommandNames[c]);
    AddSample(f_success, {{"command", command}}, state.ok ? 1 : 0);
    if (!state.ok) AddSample(f_error, {{"command", command}, {"reason", state.reason}}, 1);
    AddSample(f_duration, {{"command", command}}, state.last_duration_s);
    for (const auto& [result, n] : state.runs) {
      AddSample(f_runs, {{"command", command}, {"result", result}}, static_cast<double>(n));
    }
    AddSample(f_rejected, {{"command", command}}, static_cast<double>(state.rejected_lines));
    if (!state.last_success) continue;
    AddSample(f_last, {{"command", command}}, state.last_success_unix);
    const double age = std::chrono::duration<double>(now - *state.last_success).count();
    if (state.ok || now - *state.last_success <= options_.max_staleness) {
      AddSample(f_age, {{"command", command}}, state.ok ? 0 : age);
      for (const MetricFamily& f : state.families) data.push_back(f);  // copies: the cache keeps its own
    } else {
      state.families.clear();  // too old to be shown as current; never served again
    }
  }
  for (MetricFamily* f : {&f_up, &f_error, &f_success, &f_duration, &f_runs, &f_last, &f_age, &f_rejected}) {
    out.push_back(std::move(*f));
  }
  for (MetricFamily& f : data) out.push_back(std::move(f));
}

Status SlurmSchedulerCollector::Collect(std::vector<MetricFamily>& out) {
  const std::array<std::vector<std::string>, kCommandCount> argv = {{
      {options_.squeue_path, "-h", "-r", "-o", std::string(kSqueueFormat)},
      {options_.sinfo_path, "-N", "-h", "-O", std::string(kSinfoFormat)},
      {options_.sdiag_path},
      {options_.sshare_path, "-h", "-P", "-a", "-o", std::string(kSshareFields)},
  }};
  // All four at once: a cycle lasts at most one timeout even when slurmctld does not answer.
  std::array<std::future<std::pair<CommandResult, double>>, kCommandCount> runs;
  for (int c = 0; c < kCommandCount; ++c) {
    if (!state_[c].enabled) continue;
    runs[c] = std::async(std::launch::async, [this, args = argv[c]] {
      Clock::time_point began = Clock::now();
      CommandResult result = RunCommandWithTimeout(args, options_.timeout, options_.max_output_bytes);
      return std::make_pair(std::move(result), std::chrono::duration<double>(Clock::now() - began).count());
    });
  }
  const Clock::time_point now = Clock::now();
  const double now_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::pair<int, std::string>> errors;  // command, message
  int not_found = 0;
  int enabled = 0;
  for (int c = 0; c < kCommandCount; ++c) {
    if (!state_[c].enabled) continue;
    ++enabled;
    auto [run, seconds] = runs[c].get();
    Record(static_cast<Command>(c), run, seconds, now, now_unix);
    if (!state_[c].ok) {
      if (state_[c].reason == "not_found") ++not_found;
      errors.emplace_back(c, run.status.message());
    }
  }
  if (enabled > 0 && not_found == enabled) {
    Log(LogLevel::kDebug, "slurm: no Slurm client commands on this host");
    return Status::NoData("Slurm client commands not found");
  }

  const bool up = state_[kSqueue].ok && state_[kSinfo].ok;
  LogFailures(up, errors);
  AppendFamilies(up, now, out);
  if (!up) {
    std::string why;
    for (const auto& [c, message] : errors) {
      if (c != kSqueue && c != kSinfo) continue;
      if (!why.empty()) why += "; ";
      why += message;
    }
    return Status::Unavailable("slurm unreachable: " + why);
  }
  return Status::Ok();
}

}  // namespace gpuscope
