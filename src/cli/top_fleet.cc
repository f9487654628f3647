#include "src/cli/top_fleet.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

namespace gpuscope {
namespace {

// The key of a Kubernetes pod in TopNode::jobs (a Slurm job id has no '/').
std::string PodKey(const PromSeries& series) { return series.Label("namespace") + "/" + series.Label("pod"); }

bool GpuIndexLess(const TopGpu& a, const TopGpu& b) { return NaturalLess(a.index, b.index); }

}  // namespace

const std::vector<TopMetricInfo>& TopMetrics() {
  // Memory is the whole GPU's (MIG instances left out); power is against the limit the driver enforces, so
  // that the colours mean the same on a 350 W and a 700 W GPU.
  static const std::vector<TopMetricInfo> metrics = {
      {TopMetric::kUtilization, "utilisation", "util", "%", "DCGM_FI_DEV_GPU_UTIL", 100},
      {TopMetric::kMemory, "memory used", "memory", "%",
       "100 * DCGM_FI_DEV_FB_USED{GPU_I_ID=\"\"} / (DCGM_FI_DEV_FB_USED{GPU_I_ID=\"\"} + "
       "DCGM_FI_DEV_FB_FREE{GPU_I_ID=\"\"})",
       100},
      {TopMetric::kPower, "power of limit", "power", "%",
       "100 * DCGM_FI_DEV_POWER_USAGE / DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 100},
      {TopMetric::kTemperature, "temperature", "temperature", "C", "DCGM_FI_DEV_GPU_TEMP", 100},
  };
  return metrics;
}

const TopMetricInfo& MetricInfo(TopMetric metric) {
  for (const TopMetricInfo& info : TopMetrics()) {
    if (info.metric == metric) return info;
  }
  return TopMetrics().front();
}

bool ParseTopMetric(const std::string& text, TopMetric* metric) {
  for (const TopMetricInfo& info : TopMetrics()) {
    if (text == info.flag || text == info.name) {
      *metric = info.metric;
      return true;
    }
  }
  return false;
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      // Without leading zeros, a longer run is a larger number.
      std::string_view na(a.data() + i, ei - i), nb(b.data() + j, ej - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

bool TopGpu::HasAlert() const {
  return std::any_of(alerts.begin(), alerts.end(), [](const std::string& name) {
    return name != "GpuAllocatedIdle" && name != "GpuPodAllocatedIdle";
  });
}

int TopNode::IdleGpus() const {
  return static_cast<int>(
      std::count_if(gpus.begin(), gpus.end(), [](const TopGpu& g) { return g.allocated_idle; }));
}

bool TopNode::HasAlert() const {
  return !alerts.empty() ||
         std::any_of(gpus.begin(), gpus.end(), [](const TopGpu& g) { return g.HasAlert(); });
}

double TopNode::MeanValue() const {
  double sum = 0;
  int n = 0;
  for (const TopGpu& g : gpus) {
    if (g.value < 0) continue;
    sum += g.value;
    ++n;
  }
  return n == 0 ? -1 : sum / n;
}

std::vector<std::string> FleetQueries(TopMetric metric) {
  return {
      MetricInfo(metric).promql,
      // Who holds the GPUs: Slurm jobs per node (joined on hpc_job) and Kubernetes pods per GPU.
      "gpuscope_job_info or gpuscope_k8s_gpu_allocation_info",
      "gpuscope_gpu_allocated_idle == 1 or gpuscope_k8s_gpu_allocated_idle == 1",
      "ALERTS{alertstate=\"firing\"}",
  };
}

FleetSnapshot BuildFleetSnapshot(TopMetric metric, const std::vector<PromSeries>& values,
                                 const std::vector<PromSeries>& jobs, const std::vector<PromSeries>& idle,
                                 const std::vector<PromSeries>& alerts) {
  FleetSnapshot snapshot;
  snapshot.metric = metric;
  std::map<std::string, TopNode> nodes;
  std::map<std::string, std::string> host_of_instance;
  // (host, gpu index) -> position in the node's gpus, while building.
  std::map<std::pair<std::string, std::string>, size_t> gpu_at;
  auto gpu = [&](const std::string& host, const std::string& index) -> TopGpu* {
    auto it = gpu_at.find({host, index});
    return it == gpu_at.end() ? nullptr : &nodes[host].gpus[it->second];
  };

  for (const PromSeries& s : values) {
    const std::string host = s.Host();
    const std::string index = s.Label("gpu");
    if (host.empty() || index.empty() || s.points.empty()) continue;
    TopNode& node = nodes[host];
    node.hostname = host;
    if (!s.Label("instance").empty()) host_of_instance[s.Label("instance")] = host;
    TopGpu* existing = gpu(host, index);
    if (existing == nullptr) {
      if (node.model.empty()) node.model = s.Label("modelName");
      gpu_at[{host, index}] = node.gpus.size();
      node.gpus.push_back(TopGpu{index, -1, s.Label("hpc_job"), false, {}});
      existing = &node.gpus.back();
    }
    const double v = s.points.front().second;
    if (std::isfinite(v)) existing->value = std::max(existing->value, v);
  }

  // A GPU that stopped answering (fallen off the bus) has no sample: it keeps its place as a cell without a
  // value, so that cells stay in index order under the header and its alerts (GpuLost) land on it.
  for (auto& [host, node] : nodes) {
    long highest = -1;
    for (const TopGpu& g : node.gpus) {
      char* end = nullptr;
      const long index = std::strtol(g.index.c_str(), &end, 10);
      if (*end == '\0' && !g.index.empty()) highest = std::max(highest, index);
    }
    for (long i = 0; i <= highest && i < 1024; ++i) {
      const std::string index = std::to_string(i);
      if (gpu(host, index) != nullptr) continue;
      gpu_at[{host, index}] = node.gpus.size();
      node.gpus.push_back(TopGpu{index, -1, "", false, {}});
    }
  }

  // Slurm: one gpuscope_job_info per node and job; Kubernetes: one allocation per GPU (or MIG instance).
  std::map<std::pair<std::string, std::string>, TopJob> slurm_jobs;
  for (const PromSeries& s : jobs) {
    const std::string host = s.Host();
    if (!s.Label("pod").empty()) {
      TopGpu* g = gpu(host, s.Label("gpu"));
      if (g == nullptr) continue;
      g->job = PodKey(s);
      nodes[host].jobs[g->job] = TopJob{s.Label("pod"), "", s.Label("namespace"), "", s.Label("container")};
    } else if (!s.Label("hpc_job").empty()) {
      slurm_jobs[{host, s.Label("hpc_job")}] = TopJob{s.Label("hpc_job"), s.Label("user"), s.Label("account"),
                                                      s.Label("partition"), s.Label("job_name")};
    }
  }
  for (auto& [host, node] : nodes) {
    for (const TopGpu& g : node.gpus) {
      if (g.job.empty() || node.jobs.count(g.job) != 0) continue;
      auto it = slurm_jobs.find({host, g.job});
      // A GPU series can name a job whose gpuscope_job_info is not (yet) there: shown with its id only.
      node.jobs[g.job] = it != slurm_jobs.end() ? it->second : TopJob{g.job, "", "", "", ""};
    }
  }

  for (const PromSeries& s : idle) {
    TopGpu* g = gpu(s.Host(), s.Label("gpu"));
    if (g != nullptr) g->allocated_idle = true;
  }

  std::set<std::string> fleet_alerts;
  std::map<std::string, std::set<std::string>> node_alerts;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> gpu_alerts;
  for (const PromSeries& s : alerts) {
    const std::string name = s.Label("alertname");
    std::string host = s.Host();
    if (host.empty() && host_of_instance.count(s.Label("instance")) != 0)
      host = host_of_instance[s.Label("instance")];
    if (host.empty() || nodes.count(host) == 0) {
      std::string label = name;
      if (!host.empty()) label.append(" (").append(host).append(")");
      fleet_alerts.insert(label);
    } else if (!s.Label("gpu").empty() && gpu(host, s.Label("gpu")) != nullptr) {
      gpu_alerts[{host, s.Label("gpu")}].insert(name);
    } else {
      node_alerts[host].insert(name);
    }
  }
  for (const auto& [key, names] : gpu_alerts)
    gpu(key.first, key.second)->alerts.assign(names.begin(), names.end());
  for (const auto& [host, names] : node_alerts) nodes[host].alerts.assign(names.begin(), names.end());
  snapshot.fleet_alerts.assign(fleet_alerts.begin(), fleet_alerts.end());

  for (auto& [host, node] : nodes) {
    std::sort(node.gpus.begin(), node.gpus.end(), GpuIndexLess);
    snapshot.nodes.push_back(std::move(node));
  }
  std::sort(snapshot.nodes.begin(), snapshot.nodes.end(),
            [](const TopNode& a, const TopNode& b) { return NaturalLess(a.hostname, b.hostname); });
  return snapshot;
}

Status FetchFleetSnapshot(const PromQueryFunction& query, TopMetric metric, FleetSnapshot* snapshot) {
  const std::vector<std::string> exprs = FleetQueries(metric);
  std::vector<std::vector<PromSeries>> answers(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) {
    Status status = query(exprs[i], &answers[i]);
    if (!status.ok()) return status;
  }
  *snapshot = BuildFleetSnapshot(metric, answers[0], answers[1], answers[2], answers[3]);
  return Status::Ok();
}

}  // namespace gpuscope
