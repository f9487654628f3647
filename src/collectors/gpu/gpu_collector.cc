#include "src/collectors/gpu/gpu_collector.h"

#include <map>
#include <utility>

#include "src/collectors/gpu/gpu_worker.h"
#include "src/collectors/gpu/xid_events.h"
#include "src/core/log.h"
#include "src/node/node_state.h"
#include "src/parsers/pci.h"
#include "src/platform/host.h"
#include "src/platform/nvml/nvml_library.h"

namespace gpuscope {

GpuCollector::GpuCollector(GpuCollectorOptions options)
    : options_(std::move(options)),
      specs_(FamilySpecs(options_.dcgm_compat)),
      own_node_state_(options_.node_state != nullptr ? nullptr : std::make_unique<NodeState>()),
      node_state_(options_.node_state != nullptr ? options_.node_state : own_node_state_.get()) {
  node_.compat = options_.dcgm_compat;
  node_.host.name = std::string(HostnameLabelName(options_.dcgm_compat));
  node_.host.value = options_.hostname.empty() ? HostName() : options_.hostname;
  node_labels_ = Labels{{node_.host.name, node_.host.value}};
}

GpuCollector::~GpuCollector() { Shutdown(); }

void GpuCollector::Shutdown() {
  bool stuck = false;
  for (const Gpu& gpu : gpus_) stuck = stuck || gpu.worker->Busy();
  if (xids_ != nullptr && !xids_->Stop()) stuck = true;
  xids_.reset();
  // DCGM goes now, with the node state it reports to still alive; a hung worker may still read it.
  if (dcgm_ != nullptr) dcgm_->Stop();
  gpus_.clear();  // joins idle workers, detaches hung ones
  if (nvml_ != nullptr && initialized_) {
    if (stuck) {
      Log(LogLevel::kWarn, "a GPU thread is stuck in NVML: skipping nvmlShutdown", {{"collector", "gpu"}});
    } else {
      nvml_->nvmlShutdown();
    }
  }
  initialized_ = false;
  healthy_ = false;
  nvml_.reset();  // a detached thread may still hold the library; it is closed when that thread ends
}

Status GpuCollector::Init() {
  std::shared_ptr<NvmlLibrary> nvml = options_.nvml;
  if (!nvml) {
    Status status = NvmlLibrary::Open(options_.nvml_library, &nvml);
    if (!status.ok()) return status;
  }
  nvmlReturn_t r = nvml->nvmlInit_v2();
  if (r != NVML_SUCCESS) return Status::Unavailable("nvmlInit_v2: " + nvml->ErrorString(r));

  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvml->nvmlSystemGetDriverVersion(version, sizeof(version)) == NVML_SUCCESS)
    node_.driver_version = version;
  char nvml_version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = {};
  if (nvml->nvmlSystemGetNVMLVersion(nvml_version, sizeof(nvml_version)) == NVML_SUCCESS) {
    node_.nvml_version = nvml_version;
  }
  unsigned int count = 0;
  r = nvml->nvmlDeviceGetCount_v2(&count);
  if (r != NVML_SUCCESS) {
    nvml->nvmlShutdown();
    return Status::Unavailable("nvmlDeviceGetCount_v2: " + nvml->ErrorString(r));
  }
  node_.pause = &node_state_->profiling_pause();
  if (options_.dcgm != GpuCollectorOptions::Dcgm::kOff && dcgm_ == nullptr) {
    DcgmBackendOptions dcgm_options = options_.dcgm_options;
    dcgm_options.pause = &node_state_->profiling_pause();
    dcgm_ = std::make_shared<DcgmBackend>(std::move(dcgm_options), options_.on_dcgm_incident);
    dcgm_->Start();
  }
  node_.dcgm = dcgm_;
  node_.prefer_dcgm_profiling = options_.prefer_dcgm_profiling;
  // The workers (and, through them, the devices) share one immutable copy of the node context, which
  // stays alive with a worker thread that had to be detached.
  auto node = std::make_shared<const GpuNodeContext>(node_);
  nvml_ = std::move(nvml);
  gpus_.clear();
  gpus_.resize(count);
  for (unsigned int i = 0; i < count; ++i) {
    gpus_[i].worker = std::make_unique<GpuWorker>(nvml_, i, node);
    gpus_[i].placeholder = PlaceholderGpuLabels(i, node_.host, node_.driver_version);
  }
  xids_ = std::make_unique<XidEventMonitor>(nvml_, options_.event_wait);
  Log(LogLevel::kInfo, "NVML loaded: " + std::to_string(count) + " GPUs",
      {{"collector", "gpu"},
       {"gpus", std::to_string(count)},
       {"nvml_version", node_.nvml_version},
       {"driver_version", node_.driver_version},
       {"library", options_.nvml_library}});
  return Status::Ok();
}

Status GpuCollector::EnsureInitialized() {
  if (initialized_) return Status::Ok();
  auto now = std::chrono::steady_clock::now();
  if (attempted_init_ && now - last_init_attempt_ < options_.init_retry_interval) return init_status_;
  attempted_init_ = true;
  last_init_attempt_ = now;
  Status status = Init();
  if (!status.ok()) {
    if (init_status_.message() != status.message()) {
      Log(LogLevel::kWarn, "NVML not usable", {{"collector", "gpu"}, {"error", status.message()}});
    }
    init_status_ = status;
    healthy_ = false;
    return init_status_;
  }
  initialized_ = true;
  healthy_ = true;
  return Status::Ok();
}

std::vector<GpuCollector::WorkerResult> GpuCollector::RunWorkers() {
  // Hand every idle worker its job first (an unopened GPU's open at most every init_retry_interval),
  // then wait for all against one deadline.
  const size_t n = gpus_.size();
  const auto now = std::chrono::steady_clock::now();
  std::vector<char> posted(n, 0);
  for (size_t i = 0; i < n; ++i) {
    Gpu& gpu = gpus_[i];
    const bool opened = gpu.worker->device() != nullptr;
    if (!opened && gpu.open_posted && now - gpu.last_open_post < options_.init_retry_interval) continue;
    posted[i] = gpu.worker->Post() ? 1 : 0;
    if (posted[i] && !opened) {
      gpu.open_posted = true;
      gpu.last_open_post = now;
    }
  }
  const auto deadline = now + options_.call_deadline;
  std::vector<WorkerResult> results(n);
  for (size_t i = 0; i < n; ++i) {
    if (!posted[i] || !gpus_[i].worker->WaitUntil(deadline)) continue;
    GpuWorker::Outcome outcome = gpus_[i].worker->Take(&gpus_[i].buffer, &results[i].open_error);
    results[i].up = outcome == GpuWorker::Outcome::kOk;
    results[i].lost = outcome == GpuWorker::Outcome::kLost;
    results[i].open_failed = outcome == GpuWorker::Outcome::kOpenFailed;
  }
  return results;
}

void GpuCollector::LogDown(size_t i, const GpuDevice* device, const WorkerResult& result) const {
  std::string message = "GPU did not answer within the call deadline";
  std::string error = "call deadline exceeded";
  if (result.lost) {
    message = "GPU lost";
    error = "GPU is lost";
  } else if (result.open_failed) {
    message = "GPU could not be opened";
    error = result.open_error;
  } else if (device == nullptr) {
    message = "GPU did not open within the call deadline";
  }
  Log(LogLevel::kWarn, message,
      {{"collector", "gpu"},
       {"gpu", std::to_string(i)},
       {"uuid", device != nullptr ? device->identity().uuid : ""},
       {"error", error}});
}

void GpuCollector::AppendXidLedger(const XidLedger& ledger,
                                   const std::vector<std::shared_ptr<const GpuDevice>>& devices,
                                   std::vector<MetricFamily>& families) {
  std::map<std::string, size_t> by_bus;  // canonical PCI bus id -> GPU index, for the ledger's XIDs
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == nullptr) continue;
    if (auto bus = CanonicalPciBusId(devices[i]->identity().pci_bus_id)) by_bus.emplace(*bus, i);
  }
  auto family = [&](GpuFamily f) -> MetricFamily& { return families[static_cast<size_t>(f)]; };
  for (const XidLedgerEntry& e : ledger.Entries()) {
    Labels labels;
    SampleSubject subject;
    auto gpu = by_bus.find(e.pci_bus_id);
    if (gpu != by_bus.end()) {
      labels = devices[gpu->second]->labels();
      subject.gpu = static_cast<int32_t>(gpu->second);
    } else {
      // A GPU NVML does not show (lost before the agent started, or not opened): the kernel log's XIDs
      // still count, under its bus id.
      labels = PlaceholderGpuLabels(0, node_.host, node_.driver_version);
      for (auto& [name, value] : labels.Mutable()) {
        if (name == "gpu") value.clear();
        if (name == "pci_bus_id") value = e.pci_bus_id;
      }
    }
    const Labels& with_xid =
        label_cache_.With(labels, {{"xid", std::to_string(e.xid)}, {"action", e.action}});
    family(GpuFamily::kXidErrorsTotal).samples.push_back({with_xid, static_cast<double>(e.count), subject});
    family(GpuFamily::kXidLastSeenTimestampSeconds)
        .samples.push_back({with_xid, e.last_seen_seconds, subject});
  }
}

void GpuCollector::AppendNodeFamilies(std::vector<MetricFamily>& families) {
  auto family = [&](GpuFamily f) -> MetricFamily& { return families[static_cast<size_t>(f)]; };
  const ProfilingPauseState pause = node_state_->profiling_pause().State();
  family(GpuFamily::kProfilingPaused).samples.push_back(Sample{node_labels_, pause.paused ? 1.0 : 0.0});
  family(GpuFamily::kProfilingPauseExpiry).samples.push_back(Sample{node_labels_, pause.until_unix});
  family(GpuFamily::kProfilingPausesTotal)
      .samples.push_back(Sample{node_labels_, static_cast<double>(pause.pauses_total)});
  if (dcgm_ == nullptr) return;
  const DcgmStatus dcgm = dcgm_->status();
  // Without libdcgm, auto reports nothing (DCGM is optional); on reports it down.
  if (!dcgm.library_loaded && options_.dcgm != GpuCollectorOptions::Dcgm::kOn) return;
  family(GpuFamily::kDcgmUp)
      .samples.push_back(
          Sample{label_cache_.With(node_labels_, {{"mode", dcgm.mode}}), dcgm.connected ? 1.0 : 0.0});
  family(GpuFamily::kDcgmConnectsTotal)
      .samples.push_back(Sample{node_labels_, static_cast<double>(dcgm.connects_total)});
}

Status GpuCollector::Collect(std::vector<MetricFamily>& out) {
  node_state_->profiling_pause().Tick();
  if (Status init = EnsureInitialized(); !init.ok()) return init;
  if (gpus_.empty()) return Status::NoData("no GPUs");
  const size_t n = gpus_.size();
  std::vector<WorkerResult> results = RunWorkers();

  // Devices as they are now (a late open counts from here); newly opened ones get their XIDs watched.
  std::vector<std::shared_ptr<const GpuDevice>> devices(n);
  std::vector<std::pair<nvmlDevice_t, unsigned int>> to_watch;
  for (size_t i = 0; i < n; ++i) {
    devices[i] = gpus_[i].worker->device();
    if (devices[i] != nullptr && !gpus_[i].xid_watched) {
      gpus_[i].xid_watched = true;
      to_watch.emplace_back(devices[i]->handle(), static_cast<unsigned int>(i));
    }
  }
  if (!to_watch.empty()) xids_->Watch(to_watch);
  // The typed facts of this cycle go to the node state first: its ledger then holds NVML's new XIDs too.
  std::vector<char> up_by_gpu(n, 0);
  for (size_t i = 0; i < n; ++i) up_by_gpu[i] = results[i].up;
  node_state_->PublishGpuInventory(BuildInventory(devices, up_by_gpu));
  XidLedger& xid_ledger = node_state_->xids();

  std::vector<MetricFamily> families(kGpuFamilyCount);
  for (size_t f = 0; f < kGpuFamilyCount; ++f) {
    const MetricDescription& d = specs_[f].description;
    families[f].name = d.name;
    families[f].help = d.help;
    families[f].type = d.type;
    families[f].unit = d.unit;
    families[f].samples.reserve(family_sizes_[f]);  // as many as last cycle: no growth on the way
  }
  auto family = [&](GpuFamily f) -> MetricFamily& { return families[static_cast<size_t>(f)]; };
  size_t reporting = 0;
  for (size_t i = 0; i < n; ++i) {
    Gpu& gpu = gpus_[i];
    const GpuDevice* device = devices[i].get();
    const bool up = results[i].up;
    const Labels& labels = device != nullptr ? device->labels() : gpu.placeholder;
    const SampleSubject subject{static_cast<int32_t>(i), SampleSubject::kNone, 0};
    family(GpuFamily::kGpuUp).samples.push_back(Sample{labels, up ? 1.0 : 0.0, subject});
    if (device != nullptr) {
      const Labels& info =
          label_cache_.With(labels, {{"serial", device->identity().serial},
                                     {"nvml_version", node_.nvml_version},
                                     {"mig_mode", device->mig_enabled() ? "enabled" : "disabled"}});
      family(GpuFamily::kGpuInfo).samples.push_back(Sample{info, 1, subject});
    }
    if (!up) {
      if (!gpu.was_down) LogDown(i, device, results[i]);
      gpu.was_down = true;
      gpu.buffer.clear();
      continue;
    }
    if (gpu.was_down) {
      Log(LogLevel::kInfo, "GPU reports again",
          {{"collector", "gpu"}, {"gpu", std::to_string(i)}, {"uuid", device->identity().uuid}});
    }
    gpu.was_down = false;
    ++reporting;
    for (GpuSample& s : gpu.buffer) family(s.family).samples.push_back(std::move(s.sample));
    gpu.buffer.clear();
    family(GpuFamily::kXidErrors)
        .samples.push_back(
            Sample{labels, static_cast<double>(xid_ledger.LastXid(device->identity().pci_bus_id)), subject});
  }
  AppendXidLedger(xid_ledger, devices, families);
  AppendNodeFamilies(families);
  label_cache_.EndCycle();
  for (size_t f = 0; f < kGpuFamilyCount; ++f) {
    family_sizes_[f] = families[f].samples.size();
    if (!families[f].samples.empty()) out.push_back(std::move(families[f]));
  }
  if (reporting == 0) return Status::Unavailable("no GPU answered this cycle");
  return Status::Ok();
}

GpuInventory GpuCollector::BuildInventory(const std::vector<std::shared_ptr<const GpuDevice>>& devices,
                                          const std::vector<char>& up) {
  GpuInventory inventory;
  inventory.host_label = node_.host.name;
  inventory.hostname = node_.host.value;
  inventory.devices.resize(gpus_.size());
  for (size_t i = 0; i < gpus_.size(); ++i) {
    GpuDeviceInventory& d = inventory.devices[i];
    d.index = static_cast<uint32_t>(i);
    d.up = up[i] != 0;
    const GpuDevice* device = devices[i].get();
    if (device == nullptr) {
      d.labels = gpus_[i].placeholder;
      continue;
    }
    d.opened = true;
    d.minor = device->identity().minor;
    d.uuid = device->identity().uuid;
    d.pci_bus_id = device->identity().pci_bus_id;
    d.model = device->identity().model_name;
    d.labels = device->labels();
    for (const GpuDevice::MigIdentity& m : device->mig_identities()) {
      d.mig.push_back({m.gpu_instance_id, m.profile, m.uuids, std::nullopt});
    }
    if (!d.up) continue;
    // This cycle's facts, from the worker's typed samples (family and subject), not from their labels.
    for (const GpuSample& s : gpus_[i].buffer) {
      const int32_t instance = s.sample.subject.gpu_instance;
      switch (s.family) {
        case GpuFamily::kGpuUtil:
          d.gpu_utilization = s.sample.value / 100.0;
          break;
        case GpuFamily::kProfSmActive:
          if (instance == SampleSubject::kNone) {
            d.sm_active = s.sample.value;
          } else {
            for (MigInstanceInventory& m : d.mig) {
              if (static_cast<int32_t>(m.gpu_instance_id) == instance) m.sm_active = s.sample.value;
            }
          }
          break;
        case GpuFamily::kProcesses:
          d.processes_listed = true;
          break;
        case GpuFamily::kProcessMemoryBytes:
          inventory.processes.push_back(
              {d.index, instance, s.sample.subject.pid, static_cast<uint64_t>(s.sample.value)});
          break;
        default:
          break;
      }
    }
  }
  // NVML's XID events since the previous cycle, for the ledger the kernel log also feeds.
  for (const XidCount& c : xids_->Counts()) {
    uint64_t& fed = xids_fed_[{c.gpu_index, c.xid}];
    if (c.count <= fed || c.gpu_index >= devices.size() || devices[c.gpu_index] == nullptr) continue;
    const std::string& bus = devices[c.gpu_index]->identity().pci_bus_id;
    for (; fed < c.count; ++fed) {
      inventory.xids.push_back({bus, static_cast<uint32_t>(c.xid), c.last_seen_seconds});
    }
  }
  return inventory;
}

std::vector<MetricDescription> GpuCollector::Describe() const {
  std::vector<MetricDescription> out;
  for (const GpuFamilySpec& spec : specs_) out.push_back(spec.description);
  return out;
}

}  // namespace gpuscope
