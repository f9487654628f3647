#include "src/attribution/attributed_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "src/attribution/gpu_directory.h"
#include "src/attribution/proc_resolver.h"
#include "src/core/gpu_process_table.h"
#include "src/core/log.h"
#include "src/parsers/pci.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr std::string_view kGpuUp = "gpuscope_gpu_up";
constexpr std::string_view kProcessMemory = "gpuscope_gpu_process_memory_bytes";
constexpr std::string_view kProcesses = "gpuscope_gpu_processes";
constexpr std::string_view kMigInstanceInfo = "gpuscope_gpu_mig_instance_info";

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  for (const auto& [key, value] : labels) {
    if (key == name) return value;
  }
  return {};
}

// The JobTable key of a series: "<gpu>" or "<gpu>.<GPU_I_ID>".
std::string GpuKey(const Labels& labels) {
  std::string key(LabelValue(labels, "gpu"));
  std::string_view instance = LabelValue(labels, "GPU_I_ID");
  if (!key.empty() && !instance.empty()) key += "." + std::string(instance);
  return key;
}

// The jobs a series on `key` belongs to: those on the key itself, or for a MIG instance with none, those
// holding the whole GPU.
std::vector<const Allocation*> JobsFor(const JobTable::View& view, const std::string& key) {
  auto jobs = view.JobsOn(key);
  if (jobs.empty()) {
    auto dot = key.find('.');
    if (dot != std::string::npos) jobs = view.JobsOn(std::string_view(key).substr(0, dot));
  }
  return jobs;
}

const std::vector<MetricDescription>& Descriptions() {
  static const std::vector<MetricDescription> kDescriptions = {
      {"gpuscope_job_info",
       MetricType::kInfo,
       "A job holding GPUs of this node, with its owner; join any GPU series on hpc_job to get user and "
       "account. Always 1.",
       "",
       {"Hostname", "hpc_job", "user", "uid", "account", "partition", "job_name", "array_job_id",
        "array_task_id"},
       "JobTable (prolog mapping files, /proc of GPU processes, scontrol)"},
      {"gpuscope_gpu_allocation_info",
       MetricType::kInfo,
       "A GPU (or MIG instance) allocated to a job, with the job's rank on it. Always 1.",
       "",
       {"GPU_I_ID", "hpc_job", "rank", "step"},
       "JobTable"},
      {"gpuscope_gpu_allocated_idle",
       MetricType::kGauge,
       "1 when the GPU (or MIG instance) is allocated to the job but runs no process: the allocated but "
       "unused GPU that process-based tools miss. 0 while it runs a process. Absent when NVML cannot list "
       "the GPU's processes.",
       "",
       {"GPU_I_ID", "hpc_job"},
       "JobTable + nvmlDeviceGetComputeRunningProcesses_v3"},
      {"gpuscope_attribution_jobs",
       MetricType::kGauge,
       "Jobs holding GPUs of this node.",
       "",
       {},
       "JobTable"},
  };
  return kDescriptions;
}

enum Own { kJobInfo, kAllocationInfo, kAllocatedIdle, kJobs };

MetricFamily Empty(Own which) {
  const MetricDescription& d = Descriptions()[which];
  return MetricFamily{d.name, d.help, d.type, d.unit, {}};
}

}  // namespace

AttributedCollector::AttributedCollector(std::unique_ptr<Collector> inner, JobTable* table,
                                         std::unique_ptr<ProcResolver> resolver, AttributionOptions options)
    : inner_(std::move(inner)), table_(table), resolver_(std::move(resolver)), options_(std::move(options)) {}

AttributedCollector::~AttributedCollector() = default;

std::vector<MetricDescription> AttributedCollector::DescribeAttribution() { return Descriptions(); }

std::vector<MetricDescription> AttributedCollector::Describe() const {
  std::vector<MetricDescription> out = inner_->Describe();
  if (options_.hpc_job_label) {
    for (MetricDescription& d : out) d.labels.push_back("hpc_job");
  }
  for (const MetricDescription& d : Descriptions()) out.push_back(d);
  if (resolver_) {
    for (const MetricFamily& family : resolver_->SelfMetrics()) {
      MetricDescription d{family.name, family.type, family.help, family.unit, {}, "/proc of GPU processes"};
      if (!family.samples.empty()) {
        for (const auto& [name, value] : family.samples.front().labels) d.labels.push_back(name);
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

Status AttributedCollector::Collect(std::vector<MetricFamily>& out) {
  std::vector<MetricFamily> families;
  Status status = inner_->Collect(families);

  // What the GPU collector saw: each GPU's identity labels, its processes, and whether NVML could list them.
  std::map<std::string, const Labels*> identity;  // gpu index -> labels of gpuscope_gpu_up
  std::vector<GpuProcess> processes;
  std::set<std::string> process_listing;  // gpu indexes whose processes NVML listed
  for (const MetricFamily& family : families) {
    if (family.name == kGpuUp) {
      for (const Sample& s : family.samples) identity[std::string(LabelValue(s.labels, "gpu"))] = &s.labels;
    } else if (family.name == kProcesses) {
      for (const Sample& s : family.samples) process_listing.insert(std::string(LabelValue(s.labels, "gpu")));
    } else if (family.name == kProcessMemory) {
      for (const Sample& s : family.samples) {
        std::string_view pid = LabelValue(s.labels, "pid");
        uint32_t value = 0;
        if (std::from_chars(pid.data(), pid.data() + pid.size(), value).ec == std::errc()) {
          processes.push_back({GpuKey(s.labels), value});
        }
      }
    }
  }
  if (resolver_) table_->Update(AttributionSource::kProc, resolver_->Resolve(processes));
  std::shared_ptr<const JobTable::View> view = table_->Current();

  // hpc_job on every GPU series, as dcgm-exporter does: one copy per job when several share the GPU. A
  // process series gets its own process's job instead.
  if (options_.hpc_job_label) {
    for (MetricFamily& family : families) {
      if (family.samples.empty() || LabelValue(family.samples.front().labels, "gpu").empty()) continue;
      bool per_process = family.name == kProcessMemory;
      std::vector<Sample> labelled;
      labelled.reserve(family.samples.size());
      for (Sample& sample : family.samples) {
        if (per_process) {
          std::string_view pid = LabelValue(sample.labels, "pid");
          uint32_t value = 0;
          std::from_chars(pid.data(), pid.data() + pid.size(), value);
          sample.labels.emplace_back("hpc_job", resolver_ ? resolver_->JobOf(value) : std::string());
          labelled.push_back(std::move(sample));
          continue;
        }
        auto jobs = JobsFor(*view, GpuKey(sample.labels));
        if (jobs.size() <= 1) {
          sample.labels.emplace_back("hpc_job", jobs.empty() ? std::string() : jobs[0]->job_id);
          labelled.push_back(std::move(sample));
          continue;
        }
        for (const Allocation* job : jobs) {
          Sample copy = sample;
          copy.labels.emplace_back("hpc_job", job->job_id);
          labelled.push_back(std::move(copy));
        }
      }
      family.samples = std::move(labelled);
    }
    // gpuscope_gpu_up's labels moved on; re-point identity at the (now labelled) first copy.
    for (const MetricFamily& family : families) {
      if (family.name != kGpuUp) continue;
      for (const Sample& s : family.samples) identity[std::string(LabelValue(s.labels, "gpu"))] = &s.labels;
    }
  }

  MetricFamily job_info = Empty(kJobInfo);
  MetricFamily allocation_info = Empty(kAllocationInfo);
  MetricFamily allocated_idle = Empty(kAllocatedIdle);
  std::set<std::string> allocated_jobs;
  for (const Allocation& allocation : view->allocations) {
    std::string gpu = allocation.gpu.substr(0, allocation.gpu.find('.'));
    auto it = identity.find(gpu);
    if (it == identity.end()) continue;  // a mapping for a GPU this node does not have
    allocated_jobs.insert(allocation.job_id);
    Labels base;
    for (const auto& [name, value] : *it->second) {
      if (name != "hpc_job") base.emplace_back(name, value);
    }
    std::string instance = allocation.gpu.size() > gpu.size() ? allocation.gpu.substr(gpu.size() + 1) : "";
    base.emplace_back("GPU_I_ID", instance);
    base.emplace_back("hpc_job", allocation.job_id);
    Labels info = base;
    info.emplace_back("rank", allocation.rank);
    info.emplace_back("step", allocation.step_id);
    allocation_info.samples.push_back({std::move(info), 1});
    if (process_listing.contains(gpu)) {
      bool busy = false;
      for (const GpuProcess& p : processes) {
        if (p.gpu == allocation.gpu || (instance.empty() && p.gpu.starts_with(gpu + "."))) busy = true;
      }
      allocated_idle.samples.push_back({std::move(base), busy ? 0.0 : 1.0});
    }
  }
  // The node's host label (Hostname, or hostname in 4.9 compat) goes on gpuscope_job_info too: job ids
  // are per cluster, so a join must match the job_info series of the same node.
  std::pair<std::string, std::string> host{"Hostname", ""};
  if (!identity.empty()) {
    for (const auto& [name, value] : *identity.begin()->second) {
      if (name == "Hostname" || name == "hostname") host = {name, value};
    }
  }
  for (const std::string& id : allocated_jobs) {
    const JobInfo* job = view->Job(id);
    if (job == nullptr) continue;
    job_info.samples.push_back({{host,
                                 {"hpc_job", job->job_id},
                                 {"user", job->user},
                                 {"uid", job->uid},
                                 {"account", job->account},
                                 {"partition", job->partition},
                                 {"job_name", job->job_name},
                                 {"array_job_id", job->array_job_id},
                                 {"array_task_id", job->array_task_id}},
                                1});
  }
  MetricFamily jobs = Empty(kJobs);
  jobs.samples.push_back({{}, static_cast<double>(allocated_jobs.size())});

  if (options_.processes != nullptr) {
    std::vector<GpuProcessRef> refs;
    refs.reserve(processes.size());
    for (const GpuProcess& p : processes) {
      std::string gpu = p.gpu.substr(0, p.gpu.find('.'));
      auto it = identity.find(gpu);
      std::string bus = it == identity.end() ? "" : std::string(LabelValue(*it->second, "pci_bus_id"));
      refs.push_back({gpu, std::move(bus), p.pid, resolver_ ? resolver_->JobOf(p.pid) : std::string()});
    }
    options_.processes->Update(std::move(refs));
  }
  if (!options_.device_map_file.empty()) WriteDeviceMap(families);
  if (options_.gpus != nullptr) PublishGpuDirectory(families);
  for (MetricFamily& family : families) out.push_back(std::move(family));
  out.push_back(std::move(job_info));
  out.push_back(std::move(allocation_info));
  out.push_back(std::move(allocated_idle));
  out.push_back(std::move(jobs));
  if (resolver_) {
    for (MetricFamily& family : resolver_->SelfMetrics()) out.push_back(std::move(family));
  }
  return status;
}

void AttributedCollector::PublishGpuDirectory(const std::vector<MetricFamily>& families) {
  std::map<std::string, GpuIdentityRef> by_bus;
  for (const MetricFamily& family : families) {
    if (family.name != kGpuUp) continue;
    for (const Sample& s : family.samples) {
      std::string_view uuid = LabelValue(s.labels, "UUID");
      std::optional<std::string> bus = CanonicalPciBusId(LabelValue(s.labels, "pci_bus_id"));
      if (uuid.empty() || !bus) continue;  // not opened yet
      by_bus[*bus] = GpuIdentityRef{std::string(LabelValue(s.labels, "gpu")), std::string(uuid)};
    }
  }
  // The MIG devices of each GPU instance ("mig_uuid" is comma-separated when several share it).
  for (const MetricFamily& family : families) {
    if (family.name != kMigInstanceInfo) continue;
    for (const Sample& s : family.samples) {
      std::optional<std::string> bus = CanonicalPciBusId(LabelValue(s.labels, "pci_bus_id"));
      auto gpu = bus ? by_bus.find(*bus) : by_bus.end();
      if (gpu == by_bus.end()) continue;
      std::string_view uuids = LabelValue(s.labels, "mig_uuid");
      while (!uuids.empty()) {
        std::string_view uuid = uuids.substr(0, uuids.find(','));
        uuids.remove_prefix(std::min(uuids.size(), uuid.size() + 1));
        MigDeviceRef device{std::string(LabelValue(s.labels, "GPU_I_ID")), std::string(uuid)};
        auto& mig = gpu->second.mig;  // a series shared by several jobs comes once per job
        if (!uuid.empty() && std::find(mig.begin(), mig.end(), device) == mig.end()) mig.push_back(device);
      }
    }
  }
  options_.gpus->Publish(std::move(by_bus));
}

void AttributedCollector::WriteDeviceMap(const std::vector<MetricFamily>& families) {
  // "nvml_index minor pci_bus_id uuid", the prolog's way from a /dev/nvidiaN minor to the NVML index.
  std::map<int, std::string> lines;
  for (const MetricFamily& family : families) {
    if (family.name != kGpuUp) continue;
    for (const Sample& s : family.samples) {
      std::string_view uuid = LabelValue(s.labels, "UUID");
      std::string_view device = LabelValue(s.labels, "device");
      std::string_view gpu = LabelValue(s.labels, "gpu");
      int index = 0;
      if (uuid.empty() || !device.starts_with("nvidia") ||
          std::from_chars(gpu.data(), gpu.data() + gpu.size(), index).ec != std::errc()) {
        continue;  // not opened yet: no identity to publish
      }
      lines[index] = std::string(gpu) + " " + std::string(device.substr(6)) + " " +
                     std::string(LabelValue(s.labels, "pci_bus_id")) + " " + std::string(uuid) + "\n";
    }
  }
  std::string content = "# nvml_index minor pci_bus_id uuid (written by gpuscope-agent)\n";
  for (const auto& [index, line] : lines) content += line;
  if (lines.empty() || content == device_map_written_) return;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(options_.device_map_file).parent_path(), ignored);
  if (WriteFileAtomically(options_.device_map_file, content).ok()) {
    device_map_written_ = content;
    Log(LogLevel::kInfo, "device map written",
        {{"path", options_.device_map_file}, {"gpus", std::to_string(lines.size())}});
  } else {
    Log(LogLevel::kWarn, "cannot write the device map", {{"path", options_.device_map_file}});
  }
}

}  // namespace gpuscope
