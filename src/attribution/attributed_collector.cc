#include "src/attribution/attributed_collector.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "src/attribution/kubernetes/pod_devices.h"
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
      {"gpuscope_k8s_gpu_allocation_info",
       MetricType::kInfo,
       "With --kubernetes: a GPU (or MIG instance) allocated to a pod's container by the kubelet, with the "
       "device plugin's resource name; shared=\"true\" for a replica of a time-sliced or MPS GPU (each "
       "holding container has its own series). Always 1.",
       "",
       {"GPU_I_ID", "namespace", "pod", "container", "resource", "shared"},
       "PodTable (kubelet pod-resources List)"},
      {"gpuscope_k8s_gpu_allocated_idle",
       MetricType::kGauge,
       "With --kubernetes: 1 when the GPU (or MIG instance) is allocated to the container and its "
       "utilisation stayed below 5% in every cycle of the last 60 s (the signal of "
       "gpuscope_gpu_allocated_idle), 0 otherwise. Absent while the utilisation is unknown (a MIG instance "
       "without GPM).",
       "",
       {"GPU_I_ID", "namespace", "pod", "container"},
       "PodTable + DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_DEV_GPU_UTIL over 60 s"},
      {"gpuscope_k8s_gpus_allocatable",
       MetricType::kGauge,
       "With --kubernetes: GPU devices the node's device plugins advertise, per resource name, in the "
       "kubelet's units (one per device id: a time-slicing or MPS replica counts as one).",
       "",
       {"resource"},
       "kubelet pod-resources GetAllocatableResources"},
      {"gpuscope_k8s_gpus_allocated",
       MetricType::kGauge,
       "With --kubernetes: GPU devices allocated to containers, per resource name, in the kubelet's units.",
       "",
       {"resource"},
       "kubelet pod-resources List"},
      {"gpuscope_k8s_gpus_allocated_idle",
       MetricType::kGauge,
       "With --kubernetes: allocated GPU devices whose gpuscope_k8s_gpu_allocated_idle is 1, per resource "
       "name.",
       "",
       {"resource"},
       "PodTable + GPU utilisation"},
      {"gpuscope_k8s_gpus_in_use",
       MetricType::kGauge,
       "With --kubernetes: allocated GPU devices at 5% utilisation or more this cycle (where the "
       "utilisation is unknown, a MIG instance without GPM: running a process), per resource name. An "
       "idle GPU held by a process is not in use.",
       "",
       {"resource"},
       "PodTable + NVML processes and utilisation"},
  };
  return kDescriptions;
}

enum Own {
  kJobInfo,
  kAllocationInfo,
  kAllocatedIdle,
  kAllocatedWithoutProcess,
  kJobs,
  kPodAllocationInfo,
  kPodAllocatedIdle,
  kPodGpusAllocatable,
  kPodGpusAllocated,
  kPodGpusAllocatedIdle,
  kPodGpusInUse,
};

MetricFamily Empty(Own which) {
  const MetricDescription& d = Descriptions()[which];
  return MetricFamily{d.name, d.help, d.type, d.unit, {}};
}

// The containers holding each GPU ("3") or MIG instance ("3.1") this cycle, by JobTable key: the
// PodTable's GPU and MIG UUIDs joined through the GPU directory, one entry per container and key (a MIG
// instance with two compute instances has two MIG UUIDs), in (namespace, pod, container) order.
using PodsByKey = std::map<std::string, std::vector<const PodDeviceAllocation*>, std::less<>>;
PodsByKey PodsByGpuKey(const PodTable::View& pods, const GpuDirectory& gpus) {
  PodsByKey out;
  for (const PodDeviceAllocation& a : pods.allocations) {
    if (!IsGpuDeviceId(a.resource, a.device_id)) continue;
    std::optional<std::string> key = gpus.GpuKeyOfUuid(a.device_id);
    if (key) out[*key].push_back(&a);
  }
  auto same_container = [](const PodDeviceAllocation* a, const PodDeviceAllocation* b) {
    return std::tie(a->namespace_name, a->pod, a->container) ==
           std::tie(b->namespace_name, b->pod, b->container);
  };
  for (auto& [key, holders] : out) {
    std::sort(holders.begin(), holders.end(), [](const PodDeviceAllocation* a, const PodDeviceAllocation* b) {
      return std::tie(a->namespace_name, a->pod, a->container) <
             std::tie(b->namespace_name, b->pod, b->container);
    });
    holders.erase(std::unique(holders.begin(), holders.end(), same_container), holders.end());
  }
  return out;
}

// The containers a series on `key` belongs to: those on the key itself, or for a MIG instance with none,
// those holding the whole GPU (as JobsFor).
std::vector<const PodDeviceAllocation*> PodsFor(const PodsByKey& pods, const std::string& key) {
  auto it = pods.find(key);
  if (it == pods.end()) {
    auto dot = key.find('.');
    if (dot != std::string::npos) it = pods.find(std::string_view(key).substr(0, dot));
  }
  return it == pods.end() ? std::vector<const PodDeviceAllocation*>{} : it->second;
}

// Who a series is about, as labels: a job, a pod's container, or both on a node that runs both. Empty
// strings where none holds it.
struct Holder {
  std::string_view job;
  std::string_view namespace_name;
  std::string_view pod;
  std::string_view container;
};

// Which labels the holder adds: hpc_job, and namespace, pod, container with Kubernetes.
struct HolderLabels {
  bool job = true;
  bool pod = false;

  const Labels& On(LabelSetCache& cache, const Labels& base, const Holder& h) const {
    if (job && pod) {
      return cache.With(
          base,
          {{"hpc_job", h.job}, {"namespace", h.namespace_name}, {"pod", h.pod}, {"container", h.container}});
    }
    if (pod)
      return cache.With(base, {{"namespace", h.namespace_name}, {"pod", h.pod}, {"container", h.container}});
    return cache.With(base, {{"hpc_job", h.job}});
  }
};

// The holders of a GPU or MIG instance: every (job, container) pair of its jobs and containers, so that
// each gets its copy of the series; one empty holder when none.
std::vector<Holder> HoldersOf(const std::vector<const Allocation*>& jobs,
                              const std::vector<const PodDeviceAllocation*>& pods) {
  std::vector<Holder> out;
  const size_t job_count = std::max<size_t>(jobs.size(), 1);
  const size_t pod_count = std::max<size_t>(pods.size(), 1);
  out.reserve(job_count * pod_count);
  for (size_t j = 0; j < job_count; ++j) {
    for (size_t p = 0; p < pod_count; ++p) {
      Holder h;
      if (j < jobs.size()) h.job = jobs[j]->job_id;
      if (p < pods.size()) h = {h.job, pods[p]->namespace_name, pods[p]->pod, pods[p]->container};
      out.push_back(h);
    }
  }
  return out;
}

// The holder of a process series: its own process's job, and its own pod among those holding its GPU:
// the one whose API-server uid is the pod UID in the process's cgroup (`pod_uid`); failing that, when
// exactly one pod holds the GPU, that pod, unless both UIDs are known and differ (a process of another
// pod that sees the GPU). The container when that pod has exactly one container on the GPU. A process on
// a GPU several pods share whose UID matches none of them (no API server, a pod outside any kubepods
// cgroup) gets no pod: it is never guessed into one of them.
Holder ProcessHolder(std::string_view job, std::string_view pod_uid,
                     const std::vector<const PodDeviceAllocation*>& pods, const PodTable::View& view) {
  Holder h{job, "", "", ""};
  if (pods.empty()) return h;
  auto uid_of = [&](const PodDeviceAllocation* p) -> std::string_view {
    const PodMetadata* metadata = view.Metadata(PodRef{p->namespace_name, p->pod});
    return metadata != nullptr ? std::string_view(metadata->uid) : std::string_view();
  };
  const PodDeviceAllocation* chosen = nullptr;
  if (!pod_uid.empty()) {
    auto match = std::find_if(pods.begin(), pods.end(),
                              [&](const PodDeviceAllocation* p) { return uid_of(p) == pod_uid; });
    if (match != pods.end()) chosen = *match;
  }
  auto same_pod = [](const PodDeviceAllocation* a, const PodDeviceAllocation* b) {
    return a->namespace_name == b->namespace_name && a->pod == b->pod;
  };
  if (chosen == nullptr && std::all_of(pods.begin(), pods.end(),
                                       [&](const PodDeviceAllocation* p) { return same_pod(p, pods[0]); })) {
    const std::string_view holder_uid = uid_of(pods[0]);
    if (pod_uid.empty() || holder_uid.empty()) chosen = pods[0];
  }
  if (chosen == nullptr) return h;
  h.namespace_name = chosen->namespace_name;
  h.pod = chosen->pod;
  if (std::count_if(pods.begin(), pods.end(),
                    [&](const PodDeviceAllocation* p) { return same_pod(p, chosen); }) == 1) {
    h.container = chosen->container;
  }
  return h;
}

// hpc_job (and with Kubernetes namespace, pod, container) on every GPU series, as dcgm-exporter does: one
// copy per holder when several jobs or containers share a GPU. A process series gets its own process's
// job instead. The label sets come from `cache`: while a job or pod holds a GPU, its series get the same
// shared set every cycle.
void AddHolderLabels(const JobTable::View& view, const PodTable::View& pod_view, const PodsByKey& pods,
                     HolderLabels which, const ProcResolver* resolver, LabelSetCache& cache,
                     std::vector<MetricFamily>& families) {
  // The holders of each GPU or MIG instance, looked up once per cycle.
  std::map<std::pair<int32_t, int32_t>, std::vector<Holder>> holders_by_subject;
  std::map<std::pair<int32_t, int32_t>, std::vector<const PodDeviceAllocation*>> pods_by_subject;
  auto pods_of = [&](const SampleSubject& subject) -> const std::vector<const PodDeviceAllocation*>& {
    auto [it, inserted] = pods_by_subject.try_emplace({subject.gpu, subject.gpu_instance});
    if (inserted && which.pod) it->second = PodsFor(pods, GpuKey(subject.gpu, subject.gpu_instance));
    return it->second;
  };
  auto holders_of = [&](const SampleSubject& subject) -> const std::vector<Holder>& {
    auto [it, inserted] = holders_by_subject.try_emplace({subject.gpu, subject.gpu_instance});
    if (inserted) {
      std::vector<const Allocation*> jobs;
      if (which.job) jobs = JobsFor(view, GpuKey(subject.gpu, subject.gpu_instance));
      it->second = HoldersOf(jobs, pods_of(subject));
    }
    return it->second;
  };
  auto about_a_gpu = [](const SampleSubject& subject) {
    return subject.pid == 0 && subject.gpu != SampleSubject::kNone;
  };
  auto label_alone = [&](Sample& sample) {  // not about a GPU: its process's job (and pod)
    const SampleSubject& subject = sample.subject;
    const std::string job = subject.pid != 0 && resolver ? resolver->JobOf(subject.pid) : std::string();
    Holder h{job, "", "", ""};
    if (subject.pid != 0 && subject.gpu != SampleSubject::kNone) {
      const std::string pod_uid = which.pod && resolver ? resolver->PodUidOf(subject.pid) : std::string();
      h = ProcessHolder(job, pod_uid, pods_of(subject), pod_view);
    }
    sample.labels = which.On(cache, sample.labels, h);
  };
  for (MetricFamily& family : families) {
    const bool shared_gpus = std::any_of(family.samples.begin(), family.samples.end(), [&](const Sample& s) {
      return about_a_gpu(s.subject) && holders_of(s.subject).size() > 1;
    });
    if (!shared_gpus) {  // one holder (or none) per series: relabelled in place
      for (Sample& sample : family.samples) {
        if (!about_a_gpu(sample.subject)) {
          label_alone(sample);
        } else {
          sample.labels = which.On(cache, sample.labels, holders_of(sample.subject)[0]);
        }
      }
      continue;
    }
    std::vector<Sample> labelled;
    labelled.reserve(family.samples.size() + 8);
    for (Sample& sample : family.samples) {
      if (!about_a_gpu(sample.subject)) {
        label_alone(sample);
        labelled.push_back(std::move(sample));
        continue;
      }
      for (const Holder& holder : holders_of(sample.subject)) {
        Sample& copy = labelled.emplace_back(sample);  // the value (a histogram's too) goes along untouched
        copy.labels = which.On(cache, sample.labels, holder);
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
using WindowKey = std::pair<std::string, std::string>;  // (GPU key, holder)

// Whether the allocation `key` of the GPU `device` (or its MIG instance `instance`) has been idle for the
// whole kIdleWindow: its utilisation below kIdleUtilisation in every cycle since `quiet_since` says.
// nullopt when the utilisation is unknown this cycle (the window starts again). Marks `key` watched.
std::optional<bool> IdleWindow(const GpuDeviceInventory& device, int32_t instance, const WindowKey& key,
                               std::chrono::steady_clock::time_point now, QuietSince& quiet_since,
                               std::set<WindowKey>& watched) {
  std::optional<double> utilisation = device.up ? Utilisation(device, instance) : std::nullopt;
  if (!utilisation) return std::nullopt;
  watched.insert(key);
  auto [since, inserted] = quiet_since.try_emplace(key, now);
  if (*utilisation >= AttributedCollector::kIdleUtilisation) since->second = now;
  return now - since->second >= AttributedCollector::kIdleWindow;
}

// Whether the GPU (or MIG instance) runs a process this cycle; false when NVML did not list them.
bool RunsAProcess(const GpuInventory& inventory, const GpuDeviceInventory& device, int32_t instance) {
  if (!device.processes_listed) return false;
  return std::any_of(
      inventory.processes.begin(), inventory.processes.end(), [&](const GpuProcessObservation& p) {
        return p.gpu == device.index && (instance == SampleSubject::kNone || p.gpu_instance == instance);
      });
}

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
                                    std::chrono::steady_clock::time_point now, QuietSince& quiet_since,
                                    std::set<WindowKey>& watched) {
  AllocationFamilies out;
  std::set<std::string> allocated_jobs;
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
      const bool busy = RunsAProcess(inventory, *device, instance);
      out.without_process.samples.push_back({base, busy ? 0.0 : 1.0, subject});
    }
    std::optional<bool> idle =
        IdleWindow(*device, instance, {allocation.gpu, allocation.job_id}, now, quiet_since, watched);
    if (!idle) continue;
    out.allocated_idle.samples.push_back({std::move(base), *idle ? 1.0 : 0.0, subject});
  }
  AppendJobInfo(allocated_jobs, inventory, view, out.job_info);
  out.jobs.samples.push_back({{}, static_cast<double>(allocated_jobs.size())});
  return out;
}

// The Kubernetes counterparts of the allocation series, from the PodTable, and the node's counts.
struct KubernetesFamilies {
  MetricFamily allocation_info = Empty(kPodAllocationInfo);
  MetricFamily allocated_idle = Empty(kPodAllocatedIdle);
  MetricFamily allocatable = Empty(kPodGpusAllocatable);
  MetricFamily allocated = Empty(kPodGpusAllocated);
  MetricFamily allocated_idle_count = Empty(kPodGpusAllocatedIdle);
  MetricFamily in_use = Empty(kPodGpusInUse);
};

// Per container holding a GPU or MIG instance of this node: its info and its idle window (`quiet_since`,
// shared with the jobs' windows under a "pod:" holder). Per GPU resource name, the node's counts in the
// kubelet's units: every GPU or MIG device id counts, joined to a GPU of this node or not; the idle and
// in-use counts only the joined ones. The counts are absent until the kubelet first answered.
KubernetesFamilies KubernetesSeries(const GpuInventory& inventory, const PodTable::View& pods,
                                    const GpuDirectory& gpus, std::chrono::steady_clock::time_point now,
                                    QuietSince& quiet_since, std::set<WindowKey>& watched) {
  KubernetesFamilies out;
  struct Counts {
    double allocatable = 0, allocated = 0, idle = 0, in_use = 0;
  };
  std::map<std::string, Counts> by_resource;
  for (const AllocatableDevice& d : pods.allocatable) {
    if (IsGpuDeviceId(d.resource, d.device_id)) by_resource[d.resource].allocatable += d.replicas;
  }
  // (GPU key, holder) -> (idle, in use), once per container even where two device ids of one MIG
  // instance (two compute instances) name the same key.
  std::map<WindowKey, std::pair<bool, bool>> state;
  for (const PodDeviceAllocation& a : pods.allocations) {
    if (!IsGpuDeviceId(a.resource, a.device_id)) continue;
    Counts& counts = by_resource[a.resource];
    counts.allocated += 1;
    std::optional<std::string> key = gpus.GpuKeyOfUuid(a.device_id);
    auto parsed = key ? ParseGpuKey(*key) : std::nullopt;
    const GpuDeviceInventory* device = parsed ? inventory.Device(parsed->first) : nullptr;
    if (device == nullptr) continue;  // a device no GPU of this node shows (gpuscope_k8s_devices_ignored)
    WindowKey window{*key, "pod:" + a.namespace_name + "/" + a.pod + "/" + a.container};
    auto [known, inserted] = state.try_emplace(window, false, false);
    if (inserted) {
      const int32_t instance = parsed->second;
      Labels base = device->labels;
      base.emplace_back("GPU_I_ID", instance == SampleSubject::kNone ? "" : std::to_string(instance));
      base.emplace_back("namespace", a.namespace_name);
      base.emplace_back("pod", a.pod);
      base.emplace_back("container", a.container);
      SampleSubject subject{static_cast<int32_t>(device->index), instance, 0};
      Labels info = base;
      info.emplace_back("resource", a.resource);
      info.emplace_back("shared", a.replica ? "true" : "false");
      out.allocation_info.samples.push_back({std::move(info), 1, subject});
      std::optional<bool> idle = IdleWindow(*device, instance, window, now, quiet_since, watched);
      if (idle) out.allocated_idle.samples.push_back({std::move(base), *idle ? 1.0 : 0.0, subject});
      std::optional<double> utilisation = device->up ? Utilisation(*device, instance) : std::nullopt;
      // In use: working this cycle (utilisation at kIdleUtilisation or more); where the utilisation is
      // unknown (a MIG instance without GPM), running a process. A process that only holds memory on an
      // idle GPU (an idle notebook kernel) is not use: that GPU is counted in allocated_idle instead.
      const bool working = utilisation ? *utilisation >= AttributedCollector::kIdleUtilisation
                                       : RunsAProcess(inventory, *device, instance);
      known->second = {idle.value_or(false), working};
    }
    if (known->second.first) counts.idle += 1;
    if (known->second.second) counts.in_use += 1;
  }
  if (!pods.devices_known) return out;
  for (const auto& [resource, counts] : by_resource) {
    out.allocatable.samples.push_back({{{"resource", resource}}, counts.allocatable});
    out.allocated.samples.push_back({{{"resource", resource}}, counts.allocated});
    out.allocated_idle_count.samples.push_back({{{"resource", resource}}, counts.idle});
    out.in_use.samples.push_back({{{"resource", resource}}, counts.in_use});
  }
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
  for (MetricDescription& d : out) {
    if (options_.hpc_job_label) d.labels.push_back("hpc_job");
    if (options_.kubernetes) d.labels.insert(d.labels.end(), {"namespace", "pod", "container"});
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

  std::shared_ptr<const PodTable::View> pods = node_->pods().Current();
  PodsByKey pods_by_key;
  if (options_.kubernetes) pods_by_key = PodsByGpuKey(*pods, node_->gpus());
  if (options_.hpc_job_label || options_.kubernetes) {
    AddHolderLabels(*view, *pods, pods_by_key, {options_.hpc_job_label, options_.kubernetes}, resolver_.get(),
                    label_cache_, families);
  }
  const auto now = options_.now();
  std::set<WindowKey> watched;  // idle windows still open after this cycle
  AllocationFamilies allocations = AllocationSeries(*inventory, *view, now, quiet_since_, watched);
  std::optional<KubernetesFamilies> kubernetes;
  if (options_.kubernetes) {
    kubernetes = KubernetesSeries(*inventory, *pods, node_->gpus(), now, quiet_since_, watched);
  }
  std::erase_if(quiet_since_, [&](const auto& entry) { return !watched.contains(entry.first); });
  node_->gpu_processes().Update(ProcessRefs(*inventory, resolver_.get()));

  for (MetricFamily& family : families) out.push_back(std::move(family));
  out.push_back(std::move(allocations.job_info));
  out.push_back(std::move(allocations.allocation_info));
  out.push_back(std::move(allocations.allocated_idle));
  out.push_back(std::move(allocations.without_process));
  out.push_back(std::move(allocations.jobs));
  if (kubernetes) {
    out.push_back(std::move(kubernetes->allocation_info));
    out.push_back(std::move(kubernetes->allocated_idle));
    out.push_back(std::move(kubernetes->allocatable));
    out.push_back(std::move(kubernetes->allocated));
    out.push_back(std::move(kubernetes->allocated_idle_count));
    out.push_back(std::move(kubernetes->in_use));
  }
  if (resolver_) {
    for (MetricFamily& family : resolver_->SelfMetrics()) out.push_back(std::move(family));
  }
  return status;
}

}  // namespace gpuscope
