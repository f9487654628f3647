// The fleet description file of gpuscope-fleet: how many simulated nodes, which scenario each runs (by
// weight: the share of faulty nodes is the weight of a faulty scenario), when each starts in its
// scenario, and the job mix the runner allocates them to. Example: sim/fleets/mixed.yaml.
//
//   nodes: 100                     # --nodes overrides
//   hostname_prefix: fleet-node-   # fleet-node-0001, fleet-node-0002, ...
//   seed: 1                        # node i's simulator seed is seed * 100003 + i; the job mix's too
//   start_offset_spread: 10m       # node i starts at a simulated time spread over [0, 10m)
//   groups:                        # at least one; nodes are dealt to groups in proportion to weight
//     - {scenario: ../scenarios/h100-training.yaml, weight: 95}
//     - {scenario: ../scenarios/h100-faults.yaml, weight: 5}
//   jobs:
//     idle_nodes_percent: 10       # nodes kept without a job
//     sizes: [1, 2, 4, 8]          # nodes per job, one drawn per job
//     min_duration: 2m             # real time a job runs, drawn uniformly
//     max_duration: 20m
//     users: 24                    # user01 ... user24
//     accounts: [physics, climate] # one drawn per job
//     partition: gpu
//
// Unknown keys, wrong types and out-of-range values are errors naming the key and its line. Scenario
// paths are relative to the description's folder (made absolute by ResolveScenarioPaths).
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"

namespace gpuscope::fleet {

inline constexpr int kMaxNodes = 10000;

struct FleetGroup {
  std::string scenario;  // a scenario file (sim/README.md)
  int weight = 1;
};

struct FleetJobs {
  int idle_nodes_percent = 10;
  std::vector<int> sizes{1};
  std::chrono::milliseconds min_duration{std::chrono::minutes(2)};
  std::chrono::milliseconds max_duration{std::chrono::minutes(20)};
  int users = 16;
  std::vector<std::string> accounts{"research"};
  std::string partition = "gpu";
};

struct FleetDescription {
  int nodes = 10;
  std::string hostname_prefix = "fleet-node-";
  int seed = 1;
  std::chrono::milliseconds start_offset_spread{0};
  std::vector<FleetGroup> groups;
  FleetJobs jobs;
};

// Overlays the YAML document on *out (fields it does not name keep their values). On error *out may be
// partly overlaid; the Status names the key.
Status ParseFleetDescription(std::string_view yaml, FleetDescription* out);

// Makes every relative scenario path relative to `base_dir` instead (the description file's folder).
void ResolveScenarioPaths(const std::string& base_dir, FleetDescription* description);

// Which group each of `nodes` nodes runs, in node order: dealt in proportion to the weights, each group's
// nodes spread evenly over the fleet (a group of weight 5 in 100 is every 20th node, not the last five).
std::vector<size_t> AssignGroups(const std::vector<FleetGroup>& groups, int nodes);

// "fleet-node-0001" for node 0: the prefix and a 1-based number of at least four digits.
std::string NodeHostname(std::string_view prefix, int node);

}  // namespace gpuscope::fleet
