#include "sim/fleet/fleet_description.h"

#include <cstdio>
#include <regex>

#include "src/core/yaml_config.h"

namespace gpuscope::fleet {
namespace {

// Reads an integer in [min, max] at `path`.
Status ReadBoundedInt(const YAML::Node& node, const std::string& path, int min, int max, int* out) {
  int value = 0;
  Status status = ReadYamlInt(node, path, &value);
  if (!status.ok()) return status;
  if (value < min || value > max) {
    return Status::InvalidArgument(path + ": " + std::to_string(value) + " is out of range [" +
                                   std::to_string(min) + ", " + std::to_string(max) + "]" + YamlLine(node));
  }
  *out = value;
  return Status::Ok();
}

Status ReadGroups(const YAML::Node& node, FleetDescription* out) {
  if (!node.IsSequence() || node.size() == 0) {
    return Status::InvalidArgument("groups: expected a non-empty list" + YamlLine(node));
  }
  std::vector<FleetGroup> groups;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = "groups[" + std::to_string(i) + "]";
    FleetGroup group;
    Status status = ForEachYamlEntry(node[i], path, [&](const std::string& key, const YAML::Node& value) {
      if (key == "scenario") return ReadYamlString(value, path + ".scenario", &group.scenario);
      if (key == "weight") return ReadBoundedInt(value, path + ".weight", 1, 1000000, &group.weight);
      return UnknownYamlKey(path, key, value);
    });
    if (!status.ok()) return status;
    if (group.scenario.empty())
      return Status::InvalidArgument(path + ": scenario is required" + YamlLine(node[i]));
    groups.push_back(std::move(group));
  }
  out->groups = std::move(groups);
  return Status::Ok();
}

Status ReadDurationAtLeast(const YAML::Node& node, const std::string& path, std::chrono::milliseconds min,
                           std::chrono::milliseconds* out) {
  std::chrono::milliseconds value{0};
  Status status = ReadYamlDuration(node, path, &value);
  if (!status.ok()) return status;
  if (value < min)
    return Status::InvalidArgument(path + ": must be at least " + std::to_string(min.count()) + "ms" +
                                   YamlLine(node));
  *out = value;
  return Status::Ok();
}

Status ReadJobs(const YAML::Node& node, FleetJobs* jobs) {
  Status status = ForEachYamlEntry(node, "jobs", [&](const std::string& key, const YAML::Node& value) {
    if (key == "idle_nodes_percent") {
      return ReadBoundedInt(value, "jobs.idle_nodes_percent", 0, 100, &jobs->idle_nodes_percent);
    }
    if (key == "sizes") {
      if (!value.IsSequence() || value.size() == 0 || value.size() > 1000) {
        return Status::InvalidArgument("jobs.sizes: expected a list of 1 to 1000 node counts" +
                                       YamlLine(value));
      }
      std::vector<int> sizes;
      for (size_t i = 0; i < value.size(); ++i) {
        int size = 0;
        Status s = ReadBoundedInt(value[i], "jobs.sizes[" + std::to_string(i) + "]", 1, kMaxNodes, &size);
        if (!s.ok()) return s;
        sizes.push_back(size);
      }
      jobs->sizes = std::move(sizes);
      return Status::Ok();
    }
    if (key == "min_duration") {
      return ReadDurationAtLeast(value, "jobs.min_duration", std::chrono::seconds(1), &jobs->min_duration);
    }
    if (key == "max_duration") {
      return ReadDurationAtLeast(value, "jobs.max_duration", std::chrono::seconds(1), &jobs->max_duration);
    }
    if (key == "users") return ReadBoundedInt(value, "jobs.users", 1, 99999, &jobs->users);
    if (key == "accounts") {
      std::vector<std::string> accounts;
      Status s = ReadYamlStringList(value, "jobs.accounts", &accounts);
      if (!s.ok()) return s;
      static const std::regex kName("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
      if (accounts.empty())
        return Status::InvalidArgument("jobs.accounts: expected at least one account" + YamlLine(value));
      for (const std::string& account : accounts) {
        if (!std::regex_match(account, kName)) {
          return Status::InvalidArgument("jobs.accounts: '" + account + "' is not an account name" +
                                         YamlLine(value));
        }
      }
      jobs->accounts = std::move(accounts);
      return Status::Ok();
    }
    if (key == "partition") {
      Status s = ReadYamlString(value, "jobs.partition", &jobs->partition);
      if (s.ok() && !std::regex_match(jobs->partition, std::regex("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"))) {
        return Status::InvalidArgument("jobs.partition: '" + jobs->partition + "' is not a partition name" +
                                       YamlLine(value));
      }
      return s;
    }
    return UnknownYamlKey("jobs", key, value);
  });
  if (!status.ok()) return status;
  if (jobs->max_duration < jobs->min_duration) {
    return Status::InvalidArgument("jobs: max_duration is shorter than min_duration");
  }
  return Status::Ok();
}

}  // namespace

Status ParseFleetDescription(std::string_view yaml, FleetDescription* out) {
  return WalkYamlDocument(yaml, "fleet description", [out](const YAML::Node& root) {
    return ForEachYamlEntry(
        root, "fleet description", [out](const std::string& key, const YAML::Node& value) {
          if (key == "nodes") return ReadBoundedInt(value, "nodes", 1, kMaxNodes, &out->nodes);
          if (key == "hostname_prefix") {
            Status s = ReadYamlString(value, "hostname_prefix", &out->hostname_prefix);
            // A host name's characters (RFC 1123 labels and dots), the number appended after it.
            if (s.ok() &&
                !std::regex_match(out->hostname_prefix, std::regex("^[A-Za-z0-9][A-Za-z0-9.-]{0,48}$"))) {
              return Status::InvalidArgument("hostname_prefix: '" + out->hostname_prefix +
                                             "' is not the start of a host name" + YamlLine(value));
            }
            return s;
          }
          if (key == "seed") return ReadBoundedInt(value, "seed", 0, 1000000000, &out->seed);
          if (key == "start_offset_spread") {
            Status s = ReadYamlDuration(value, "start_offset_spread", &out->start_offset_spread);
            if (s.ok() && out->start_offset_spread > std::chrono::hours(24)) {
              return Status::InvalidArgument(
                  "start_offset_spread: at most 24h (a node catches up from 0 at start)" + YamlLine(value));
            }
            return s;
          }
          if (key == "groups") return ReadGroups(value, out);
          if (key == "jobs") return ReadJobs(value, &out->jobs);
          return UnknownYamlKey("fleet description", key, value);
        });
  });
}

void ResolveScenarioPaths(const std::string& base_dir, FleetDescription* description) {
  if (base_dir.empty()) return;
  for (FleetGroup& group : description->groups) {
    if (!group.scenario.empty() && group.scenario[0] != '/') group.scenario = base_dir + "/" + group.scenario;
  }
}

std::vector<size_t> AssignGroups(const std::vector<FleetGroup>& groups, int nodes) {
  std::vector<size_t> out;
  if (groups.empty() || nodes <= 0) return out;
  double total = 0;
  for (const FleetGroup& group : groups) total += group.weight;
  // Node i goes to the group furthest behind its share of the first i + 1 nodes (ties: the earlier group).
  std::vector<double> dealt(groups.size(), 0);
  out.reserve(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    size_t best = 0;
    double best_deficit = -1e300;
    for (size_t g = 0; g < groups.size(); ++g) {
      const double deficit = groups[g].weight / total * (i + 1) - dealt[g];
      if (deficit > best_deficit + 1e-9) {
        best = g;
        best_deficit = deficit;
      }
    }
    dealt[best] += 1;
    out.push_back(best);
  }
  return out;
}

std::string NodeHostname(std::string_view prefix, int node) {
  char number[16];
  std::snprintf(number, sizeof(number), "%04d", node + 1);
  return std::string(prefix) + number;
}

}  // namespace gpuscope::fleet
