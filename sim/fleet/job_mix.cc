#include "sim/fleet/job_mix.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "sim/prng.h"

namespace gpuscope::fleet {

JobMix::JobMix(FleetJobs config, int nodes, uint64_t seed, uint64_t first_job_id)
    : config_(std::move(config)),
      seed_(seed),
      first_id_(first_job_id),
      next_id_(first_job_id),
      job_of_node_(static_cast<size_t>(std::max(nodes, 0)), -1),
      idle_target_(nodes * config_.idle_nodes_percent / 100) {}

double JobMix::Draw(uint64_t job, uint64_t channel) const { return sim::Unit(seed_, job, channel, 0x6a6f62); }

void JobMix::Reindex() {
  std::fill(job_of_node_.begin(), job_of_node_.end(), -1);
  for (size_t j = 0; j < running_.size(); ++j) {
    for (int node : running_[j].nodes) job_of_node_[static_cast<size_t>(node)] = static_cast<int>(j);
  }
}

std::vector<int> JobMix::Advance(std::chrono::milliseconds now) {
  std::vector<int> changed;
  // End the jobs that are due.
  std::vector<FleetJob> still;
  for (FleetJob& job : running_) {
    if (job.end <= now) {
      changed.insert(changed.end(), job.nodes.begin(), job.nodes.end());
    } else {
      still.push_back(std::move(job));
    }
  }
  running_ = std::move(still);
  Reindex();

  // Fill the free nodes beyond the idle share, lowest index first (as a scheduler packs a partition).
  std::vector<int> free;
  for (size_t n = 0; n < job_of_node_.size(); ++n) {
    if (job_of_node_[n] < 0) free.push_back(static_cast<int>(n));
  }
  size_t next_free = 0;
  while (static_cast<int>(free.size() - next_free) > idle_target_) {
    const uint64_t id = next_id_++;
    const int available = static_cast<int>(free.size() - next_free) - idle_target_;
    const size_t pick =
        std::min(config_.sizes.size() - 1, static_cast<size_t>(Draw(id, 1) * config_.sizes.size()));
    const int size = std::min(config_.sizes[pick], available);
    FleetJob job;
    job.id = id;
    for (int k = 0; k < size; ++k) job.nodes.push_back(free[next_free++]);
    const int user = 1 + std::min(config_.users - 1, static_cast<int>(Draw(id, 2) * config_.users));
    char name[16];
    std::snprintf(name, sizeof(name), "user%02d", user);
    job.user = name;
    job.uid = 20000 + static_cast<unsigned>(user);
    job.account = config_.accounts[std::min(config_.accounts.size() - 1,
                                            static_cast<size_t>(Draw(id, 3) * config_.accounts.size()))];
    job.name = size > 1 ? "train-" + std::to_string(size) + "n" : "train";
    const auto span = (config_.max_duration - config_.min_duration).count();
    job.end =
        now + config_.min_duration + std::chrono::milliseconds(static_cast<int64_t>(Draw(id, 4) * span));
    changed.insert(changed.end(), job.nodes.begin(), job.nodes.end());
    running_.push_back(std::move(job));
  }
  Reindex();
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  return changed;
}

const FleetJob* JobMix::JobOn(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= job_of_node_.size()) return nullptr;
  const int j = job_of_node_[static_cast<size_t>(node)];
  return j < 0 ? nullptr : &running_[static_cast<size_t>(j)];
}

std::string JobRecord(const FleetJob& job, const std::string& partition, unsigned gpus) {
  std::string keys;
  for (unsigned g = 0; g < gpus; ++g) {
    if (g > 0) keys += ',';
    keys += std::to_string(g);
  }
  std::string out;
  out += "# written by gpuscope-fleet, as deploy/slurm/prolog.sh writes it\n";
  out += "version=1\n";
  out += "job_id=" + std::to_string(job.id) + "\n";
  out += "user=" + job.user + "\n";
  out += "uid=" + std::to_string(job.uid) + "\n";
  out += "account=" + job.account + "\n";
  out += "partition=" + partition + "\n";
  out += "job_name=" + job.name + "\n";
  out += "gpus=" + keys + "\n";
  out += "minors=" + keys + "\n";
  return out;
}

}  // namespace gpuscope::fleet
