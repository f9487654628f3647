// The Slurm scheduler collector's per-command family builders; see slurm_scheduler_builders.h.
#include "src/collectors/slurm/slurm_scheduler_builders.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "src/collectors/slurm/slurm_scheduler_families.h"
#include "src/parsers/slurm_scheduler.h"

namespace gpuscope {
namespace {

// Label values are never empty where avoidable: "(null)" (no accounting) and "" become "none".
std::string Value(std::string_view v) {
  if (v.empty() || v == "(null)") return "none";
  return std::string(v);
}

}  // namespace

std::vector<MetricFamily> SqueueFamilies(std::string_view text, bool include_user, uint64_t& rejected) {
  SqueueJobs parsed = ParseSqueue(text);
  rejected = parsed.rejected.size();
  using Key4 = std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>;
  using Key2 = std::pair<std::string_view, std::string_view>;
  std::map<Key4, double> jobs;
  std::map<Key2, double> pending;
  std::map<Key2, double> gpus;
  for (const SqueueJob& job : parsed.jobs) {
    jobs[Key4{job.state, job.partition, job.account, include_user ? job.user : std::string_view()}] += 1;
    if (job.state == "PENDING") pending[Key2{job.partition, job.reason}] += 1;
    double requested = job.gpus_per_node * std::max<uint32_t>(job.nodes, 1);
    if (requested > 0) gpus[Key2{job.state, job.partition}] += requested;
  }
  std::vector<MetricFamily> out;
  MetricFamily f_jobs = NewSlurmFamily("gpuscope_slurm_jobs");
  for (const auto& [key, n] : jobs) {
    const auto& [state, partition, account, user] = key;
    Labels labels = {{"state", Value(state)}, {"partition", Value(partition)}, {"account", Value(account)}};
    if (include_user) labels.emplace_back("user", Value(user));
    AddSample(f_jobs, std::move(labels), n);
  }
  MetricFamily f_pending = NewSlurmFamily("gpuscope_slurm_jobs_pending");
  for (const auto& [key, n] : pending) {
    AddSample(f_pending, {{"partition", Value(key.first)}, {"reason", Value(key.second)}}, n);
  }
  MetricFamily f_gpus = NewSlurmFamily("gpuscope_slurm_job_gpus");
  for (const auto& [key, n] : gpus) {
    AddSample(f_gpus, {{"state", Value(key.first)}, {"partition", Value(key.second)}}, n);
  }
  out.push_back(std::move(f_jobs));
  out.push_back(std::move(f_pending));
  out.push_back(std::move(f_gpus));
  return out;
}

std::vector<MetricFamily> SinfoFamilies(std::string_view text, uint64_t& rejected) {
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
  MetricFamily f_state = NewSlurmFamily("gpuscope_slurm_node_state");
  MetricFamily f_draining = NewSlurmFamily("gpuscope_slurm_node_draining");
  MetricFamily f_down = NewSlurmFamily("gpuscope_slurm_node_down");
  MetricFamily f_gpus = NewSlurmFamily("gpuscope_slurm_node_gpus");
  MetricFamily f_alloc = NewSlurmFamily("gpuscope_slurm_node_gpus_allocated");
  MetricFamily f_idle = NewSlurmFamily("gpuscope_slurm_node_gpus_idle");
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
  MetricFamily f_pgpus = NewSlurmFamily("gpuscope_slurm_partition_gpus");
  MetricFamily f_palloc = NewSlurmFamily("gpuscope_slurm_partition_gpus_allocated");
  MetricFamily f_pidle = NewSlurmFamily("gpuscope_slurm_partition_gpus_idle");
  for (const auto& [name, p] : partitions) {
    if (!p.has_gpus) continue;
    AddSample(f_pgpus, {{"partition", Value(name)}}, p.total);
    AddSample(f_palloc, {{"partition", Value(name)}}, p.allocated);
    AddSample(f_pidle, {{"partition", Value(name)}}, std::max(0.0, p.total - p.allocated));
  }
  MetricFamily f_pnodes = NewSlurmFamily("gpuscope_slurm_partition_nodes");
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

std::vector<MetricFamily> SdiagFamilies(std::string_view text, uint64_t& rejected) {
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
    MetricFamily f = NewSlurmFamily(m.family);
    AddSample(f, {}, it->second * m.scale);
    out.push_back(std::move(f));
  }
  MetricFamily calls = NewSlurmFamily("gpuscope_slurm_scheduler_rpc_calls_total");
  MetricFamily time = NewSlurmFamily("gpuscope_slurm_scheduler_rpc_time_seconds_total");
  for (const auto& [type, rpc] : stats.rpcs_by_type) {
    AddSample(calls, {{"type", type}}, rpc.count);
    AddSample(time, {{"type", type}}, rpc.total_time_us * 1e-6);
  }
  out.push_back(std::move(calls));
  out.push_back(std::move(time));
  return out;
}

std::vector<MetricFamily> SshareFamilies(std::string_view text, bool include_user, uint64_t& rejected) {
  SshareRows parsed = ParseSshare(text);
  rejected = parsed.rejected.size();
  MetricFamily raw = NewSlurmFamily("gpuscope_slurm_share_raw_shares");
  MetricFamily norm = NewSlurmFamily("gpuscope_slurm_share_normalized_shares");
  MetricFamily usage = NewSlurmFamily("gpuscope_slurm_share_raw_usage");
  MetricFamily effective = NewSlurmFamily("gpuscope_slurm_share_effective_usage");
  MetricFamily fairshare = NewSlurmFamily("gpuscope_slurm_fairshare");
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const SshareRow& row : parsed.rows) {
    if (!include_user && !row.user.empty()) continue;
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

}  // namespace gpuscope
