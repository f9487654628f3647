// JobMix: the fleet runner's stand-in for a Slurm scheduler. It allocates the fleet's nodes to jobs of the
// description's sizes, users, accounts and durations, keeps the idle share free, ends each job when its
// time is up and starts new ones in the freed nodes, so that job ids churn the way a busy cluster's do (each
// new job is a new set of series per GPU). Deterministic: the same description, seed and times give the
// same jobs. JobRecord renders a job as the record deploy/slurm/prolog.sh writes into the mapping
// directory, which the runner places in each node's directory for the agent's mapping source to read.
//
// Thread-safety: not thread-safe (the runner's main loop owns it); JobRecord is a pure function.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/fleet/fleet_description.h"

namespace gpuscope::fleet {

struct FleetJob {
  uint64_t id = 0;
  std::vector<int> nodes;  // node indices, ascending
  std::string user;        // user01 ...
  unsigned uid = 0;        // 20000 + the user's number
  std::string account;
  std::string name;
  std::chrono::milliseconds end{0};  // since the fleet started
};

class JobMix {
 public:
  // `first_job_id` is the first id handed out; ids increase by one per job.
  JobMix(FleetJobs config, int nodes, uint64_t seed, uint64_t first_job_id = 100000);

  // Moves the mix to `now` (time since the fleet started, never decreasing): ends the jobs due by then, then
  // starts jobs on free nodes until only the idle share is free (a drawn size larger than the free nodes
  // shrinks to them). Returns the nodes whose job changed, ascending, each once.
  std::vector<int> Advance(std::chrono::milliseconds now);

  // The job on `node`, or null when it is free.
  const FleetJob* JobOn(int node) const;
  size_t running() const { return running_.size(); }
  uint64_t started() const { return next_id_ - first_id_; }

 private:
  FleetJobs config_;
  uint64_t seed_;
  uint64_t first_id_;
  uint64_t next_id_;
  std::vector<FleetJob> running_;
  std::vector<int> job_of_node_;  // index into running_, -1: free
  int idle_target_;

  double Draw(uint64_t job, uint64_t channel) const;  // uniform in [0, 1)
  void Reindex();
};

// The gpuscope-job.<id> record of `job` on a node with `gpus` GPUs (keys 0 .. gpus - 1, minors the same),
// in the format src/parsers/mapping_files.h reads (ParseGpuscopeRecord).
std::string JobRecord(const FleetJob& job, const std::string& partition, unsigned gpus);

}  // namespace gpuscope::fleet
