#include "src/attribution/attributed_collector.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "src/attribution/proc_resolver.h"
#include "src/node/node_state.h"

namespace gpuscope {
namespace {

// The JobTable key of a GPU or MIG instance: "<gpu>" or "<gpu>.<GPU_I_ID>".
std::string GpuKey(int32_t gpu, int32_t instance) {
  std::string key = std::to_string(gpu);
  if (instance != SampleSubject::kNone) key += "." + std::to_string(instance);
  return key;
}

// The NVML index and MIG instance of a JobTable key ("3" -> {3, none}, "3.1" -> {3, 1}); nullopt when the
// key is not of that form.
std::optional<std::pair<uint32_t, int32_t>> ParseGpuKey(std::string_view key) {
  uint32_t gpu = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), gpu);
  if (ec != std::errc()) return std::nullopt;
  if (end == key.data() + key.size()) return std::make_pair(gpu, SampleSubject::kNone);
  int32_t instance = 0;
  if (*end != '.' ||
      std::from_chars(end + 1, key.data() + key.size(), instance).ptr != key.data() + key.size())
    return std::nullopt;
  return std::make_pair(gpu, instance);
}

// The utilisation of a GPU (instance kNone) or MIG instance this cycle, as the mixin's
// gpuscope:gpu_utilisation:ratio: SM active where the GPU reports it, else GPU utilisation (whole GPUs).
std::optional<double> Utilisation(const GpuDeviceInventory& device, int32_t instance) {
  if (instance == SampleSubject::kNone) return device.sm_active ? device.sm_active : device.gpu_utilization;
  for (const MigInstanceInventory& m : device.mig) {
    if (static_cast<int32_t>(m.gpu_instance_id) == instance) return m.sm_active;
  }
  return std::nullopt;
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
       "1 when the GPU (or MIG instance) is allocated to the job and its utilisation (SM active where the "
       "GPU reports it, else GPU utilisation) stayed below 5% in every cycle of the last 60 s: an allocated "
       "GPU doing no work, whether or not a process holds it (an idle notebook kernel). 0 otherwise. Absent "
       "while the GPU does not answer or its utilisation is unknown (a MIG instance without GPM).",
       "",
       {"GPU_I_ID", "hpc_job"},
       "JobTable + DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_DEV_GPU_UTIL over 60 s"},
      {"gpuscope_gpu_allocated_without_process",
       MetricType::kGauge,
       "1 when the GPU (or MIG instance) is allocated to the job but runs no process (a job that asked for "
       "GPUs it never opened), 0 while it runs one. Absent when NVML cannot list the GPU's processes.",
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

enum Own { kJobInfo, kAllocationInfo, kAllocatedIdle, kAllocatedWithoutProcess, kJobs };

MetricFamily Empty(Own which) {
  const MetricDescription& d = Descriptions()[which];
  return MetricFamily{d.name, d.help, d.type, d.unit, {}};
}

// hpc_job on every GPU series, as dcgm-exporter does: one copy per job when several share the GPU. A
// process series gets its own process's job instead. The label sets come from `cache`: while a job
// holds a GPU, its series get the same shared set every cycle.
void AddJobLabels(const JobTable::View& view, const ProcResolver* resolver, LabelSetCache& cache,
                  std::vector<MetricFamily>& families) {
  // The jobs of each GPU or MIG instance, looked up once per cycle.
  std::map<std::pair<int32_t, int32_t>, std::vector<const Allocation*>> jobs_by_subject;
  auto jobs_of = [&](const SampleSubject& subject) -> const std::vector<const Allocation*>& {
    auto [it, inserted] = jobs_by_subject.try_emplace({subject.gpu, subject.gpu_instance});
    if (inserted) it->second = JobsFor(view, GpuKey(subject.gpu, subject.gpu_instance));
    return it->second;
  };
  auto about_a_gpu = [](const SampleSubject& subject) {
    return subject.pid == 0 && subject.gpu != SampleSubject::kNone;
  };
  for (MetricFamily& family : families) {
    const bool shared_gpus = std::any_of(family.samples.begin(), family.samples.end(), [&](const Sample& s) {
      return about_a_gpu(s.subject) && jobs_of(s.subject).size() > 1;
    });
    if (!shared_gpus) {  // one job (or none) per series: relabelled in place
      for (Sample& sample : family.samples) {
        std::string job;
        if (!about_a_gpu(sample.subject)) {
          if (sample.subject.pid != 0 && resolver) job = resolver->JobOf(sample.subject.pid);
        } else if (const auto& jobs = jobs_of(sample.subject); !jobs.empty()) {
          job = jobs[0]->job_id;
        }
        sample.labels = cache.With(sample.labels, {{"hpc_job", job}});
      }
      continue;
    }
    std::vector<Sample> labelled;
    labelled.reserve(family.samples.size() + 8);
    for (Sample& sample : family.samples) {
      if (!about_a_gpu(sample.subject)) {
        const std::string job =
            sample.subject.pid != 0 && resolver ? resolver->JobOf(sample.subject.pid) : std::string();
        sample.labels = cache.With(sample.labels, {{"hpc_job", job}});
        labelled.push_back(std::move(sample));
        continue;
      }
      const auto& jobs = jobs_of(sample.subject);
      if (jobs.empty()) {
        sample.labels = cache.With(sample.labels, {{"hpc_job", ""}});
        labelled.push_back(std::move(sample));
        continue;
      }
      for (const Allocation* job : jobs) {
        Sample& copy = labelled.emplace_back(sample);  // the value (a histogram's too) goes along untouched
        copy.labels = cache.With(sample.labels, {{"hpc_job", job->job_id}});
      }
    }
    family.samples = std::move(labelled);
  }
  cache.EndCycle();
}

// The families about allocations and their jobs, built from the JobTable and the GPU inventory.
struct AllocationFamilies {
  MetricFamily job_info = Empty(kJobInfo);
  MetricFamily allocation_info = Empty(kAllocationInfo);
  MetricFamily allocated_idle = Empty(kAllocatedIdle);
  MetricFamily without_process = Empty(kAllocatedWithoutProcess);
  MetricFamily jobs = Empty(kJobs);
};

using QuietSince = std::map<std::pair<std::string, std::string>, std::chrono::steady_clock::time_point>;

// gpuscope_job_info for every job holding one of this node's GPUs, and the node's host label on it: job
// ids are per cluster, so a join must match the job_info series of the same node.
void AppendJobInfo(const std::set<std::string>& allocated_jobs, const GpuInventory& inventory,
                   const JobTable::View& view, MetricFamily& job_info) {
  std::pair<std::string, std::string> host{"Hostname", ""};
  if (!inventory.host_label.empty()) host = {inventory.host_label, inventory.hostname};
  for (const std::string& id : allocated_jobs) {
    const JobInfo* job = view.Job(id);
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
}

// Per allocation of one of this node's GPUs: its info, whether it has a process, whether it has been
// idle for kIdleWindow (`quiet_since` carries the idle windows from cycle to cycle); then the jobs.
AllocationFamilies AllocationSeries(const GpuInventory& inventory, const JobTable::View& view,
                                    std::chrono::steady_clock::time_point now, QuietSince& quiet_since) {
  AllocationFamilies out;
  std::set<std::string> allocated_jobs;
  std::set<std::pair<std::string, std::string>> watched;  // idle windows still open after this cycle
  for (const Allocation& allocation : view.allocations) {
    auto key = ParseGpuKey(allocation.gpu);
    const GpuDeviceInventory* device = key ? inventory.Device(key->first) : nullptr;
    if (device == nullptr) continue;  // a mapping for a GPU this node does not have
    const int32_t instance = key->second;
    allocated_jobs.insert(allocation.job_id);
    Labels base = device->labels;
    base.emplace_back("GPU_I_ID", instance == SampleSubject::kNone ? "" : std::to_string(instance));
    base.emplace_back("hpc_job", allocation.job_id);
    SampleSubject subject{static_cast<int32_t>(device->index), instance, 0};
    Labels info = base;
    info.emplace_back("rank", allocation.rank);
    info.emplace_back("step", allocation.step_id);
    out.allocation_info.samples.push_back({std::move(info), 1, subject});
    if (device->processes_listed) {
      bool busy = false;
      for (const GpuProcessObservation& p : inventory.processes) {
        if (p.gpu == device->index && (instance == SampleSubject::kNone || p.gpu_instance == instance))
          busy = true;
      }
      out.without_process.samples.push_back({base, busy ? 0.0 : 1.0, subject});
    }
    std::optional<double> utilisation = device->up ? Utilisation(*device, instance) : std::nullopt;
    if (!utilisation) continue;  // unknown this cycle: the window starts again
    auto window_key = std::make_pair(allocation.gpu, allocation.job_id);
    watched.insert(window_key);
    auto [since, inserted] = quiet_since.try_emplace(window_key, now);
    if (*utilisation >= AttributedCollector::kIdleUtilisation) since->second = now;
    const bool idle = now - since->second >= AttributedCollector::kIdleWindow;
    out.allocated_idle.samples.push_back({std::move(base), idle ? 1.0 : 0.0, subject});
  }
  std::erase_if(quiet_since, [&](const auto& entry) { return !watched.contains(entry.first); });
  AppendJobInfo(allocated_jobs, inventory, view, out.job_info);
  out.jobs.samples.push_back({{}, static_cast<double>(allocated_jobs.size())});
  return out;
}

// The GPU processes and their jobs, for the host collector and the event path.
std::vector<GpuProcessRef> ProcessRefs(const GpuInventory& inventory, const ProcResolver* resolver) {
  std::vector<GpuProcessRef> refs;
  refs.reserve(inventory.processes.size());
  for (const GpuProcessObservation& p : inventory.processes) {
    const GpuDeviceInventory* device = inventory.Device(p.gpu);
    refs.push_back({std::to_string(p.gpu), device != nullptr ? device->pci_bus_id : std::string(), p.pid,
                    resolver ? resolver->JobOf(p.pid) : std::string()});
  }
  return refs;
}

}  // namespace

AttributedCollector::AttributedCollector(std::unique_ptr<Collector> inner, NodeState* node,
                                         std::unique_ptr<ProcResolver> resolver, AttributionOptions options)
    : inner_(std::move(inner)), node_(node), resolver_(std::move(resolver)), options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return std::chrono::steady_clock::now(); };
}

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

  // What the GPU collector saw this cycle, as it published it.
  std::shared_ptr<const GpuInventory> inventory = node_->gpus().Current();
  std::vector<GpuProcess> processes;
  processes.reserve(inventory->processes.size());
  for (const GpuProcessObservation& p : inventory->processes) {
    processes.push_back({GpuKey(static_cast<int32_t>(p.gpu), p.gpu_instance), p.pid});
  }
  if (resolver_) node_->jobs().Update(AttributionSource::kProc, resolver_->Resolve(processes));
  std::shared_ptr<const JobTable::View> view = node_->jobs().Current();

  if (options_.hpc_job_label) AddJobLabels(*view, resolver_.get(), label_cache_, families);
  AllocationFamilies allocations = AllocationSeries(*inventory, *view, options_.now(), quiet_since_);
  node_->gpu_processes().Update(ProcessRefs(*inventory, resolver_.get()));

  for (MetricFamily& family : families) out.push_back(std::move(family));
  out.push_back(std::move(allocations.job_info));
  out.push_back(std::move(allocations.allocation_info));
  out.push_back(std::move(allocations.allocated_idle));
  out.push_back(std::move(allocations.without_process));
  out.push_back(std::move(allocations.jobs));
  if (resolver_) {
    for (MetricFamily& family : resolver_->SelfMetrics()) out.push_back(std::move(family));
  }
  return status;
}

}  // namespace gpuscope
