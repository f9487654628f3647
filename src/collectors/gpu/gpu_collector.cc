#include "src/collectors/gpu/gpu_collector.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "src/collectors/gpu/gpu_worker.h"
#include "src/collectors/gpu/xid_events.h"
#include "src/platform/nvml/nvml_library.h"

namespace gpuscope {
namespace {

std::string LocalHostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) return "";
  return buffer;
}

void LogToStderr(std::string_view line) {
  std::fprintf(stderr, "gpu collector: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace

GpuCollector::GpuCollector(GpuCollectorOptions options)
    : options_(std::move(options)), specs_(FamilySpecs(options_.dcgm_compat)) {
  if (!options_.log) options_.log = LogToStderr;
  node_.compat = options_.dcgm_compat;
  node_.host.name = std::string(HostnameLabelName(options_.dcgm_compat));
  node_.host.value = options_.hostname.empty() ? LocalHostname() : options_.hostname;
  node_.log = options_.log;
}

GpuCollector::~GpuCollector() { Shutdown(); }

void GpuCollector::Shutdown() {
  bool stuck = false;
  for (const auto& worker : workers_) stuck = stuck || worker->Busy();
  xids_.reset();
  workers_.clear();  // joins idle workers, detaches hung ones
  if (nvml_ != nullptr && initialized_) {
    if (stuck) {
      options_.log("a GPU worker is stuck in NVML: skipping nvmlShutdown");
    } else {
      nvml_->nvmlShutdown();
    }
  }
  initialized_ = false;
  healthy_ = false;
  nvml_.reset();  // a detached thread may still hold the library; it is closed when that thread ends
}

Status GpuCollector::Init() {
  std::shared_ptr<NvmlLibrary> nvml;
  Status status = NvmlLibrary::Open(options_.nvml_library, &nvml);
  if (!status.ok()) return status;
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
  std::vector<std::pair<nvmlDevice_t, unsigned int>> handles;
  for (unsigned int i = 0; i < count; ++i) {
    Status device_status;
    std::shared_ptr<GpuDevice> device = GpuDevice::Open(nvml, i, node_, &device_status);
    if (device == nullptr) {
      options_.log("GPU " + std::to_string(i) + " skipped: " + device_status.message());
      continue;
    }
    handles.emplace_back(device->handle(), i);
    workers_.push_back(std::make_unique<GpuWorker>(std::move(device)));
  }
  buffers_.assign(workers_.size(), GpuSampleBuffer());
  was_down_.assign(workers_.size(), 0);
  nvml_ = std::move(nvml);
  xids_ = std::make_unique<XidEventMonitor>(nvml_, std::move(handles), options_.event_wait);
  std::string why;
  if (xids_->Start(&why) == 0) options_.log("XID events not watched: " + why);
  options_.log("NVML " + node_.nvml_version + " (driver " + node_.driver_version + ") from " +
               options_.nvml_library + ": " + std::to_string(workers_.size()) + " GPUs");
  return Status::Ok();
}

Status GpuCollector::Collect(std::vector<MetricFamily>& out) {
  if (!initialized_) {
    auto now = std::chrono::steady_clock::now();
    if (attempted_init_ && now - last_init_attempt_ < options_.init_retry_interval) return init_status_;
    attempted_init_ = true;
    last_init_attempt_ = now;
    Status status = Init();
    if (!status.ok()) {
      if (init_status_.message() != status.message()) options_.log(status.message());
      init_status_ = status;
      healthy_ = false;
      return init_status_;
    }
    initialized_ = true;
    healthy_ = true;
  }
  if (workers_.empty()) return Status::NoData("no GPUs");

  // Hand every idle worker its job first, then wait for all against one deadline.
  const size_t n = workers_.size();
  std::vector<char> posted(n, 0);
  for (size_t i = 0; i < n; ++i) posted[i] = workers_[i]->Post() ? 1 : 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.call_deadline;
  std::vector<char> up(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!posted[i] || !workers_[i]->WaitUntil(deadline)) continue;
    up[i] = workers_[i]->Take(&buffers_[i]) == GpuDevice::ReadOutcome::kOk ? 1 : 0;
  }

  std::vector<MetricFamily> families(kGpuFamilyCount);
  for (size_t f = 0; f < kGpuFamilyCount; ++f) {
    const MetricDescription& d = specs_[f].description;
    families[f].name = d.name;
    families[f].help = d.help;
    families[f].type = d.type;
    families[f].unit = d.unit;
  }
  auto family = [&](GpuFamily f) -> MetricFamily& { return families[static_cast<size_t>(f)]; };
  size_t reporting = 0;
  for (size_t i = 0; i < n; ++i) {
    const GpuDevice& device = workers_[i]->device();
    const GpuIdentity& id = device.identity();
    family(GpuFamily::kGpuUp).samples.push_back(Sample{device.labels(), up[i] ? 1.0 : 0.0});
    Sample info{device.labels(), 1};
    info.labels.emplace_back("serial", id.serial);
    info.labels.emplace_back("nvml_version", node_.nvml_version);
    info.labels.emplace_back("mig_mode", device.mig_enabled() ? "enabled" : "disabled");
    family(GpuFamily::kGpuInfo).samples.push_back(std::move(info));
    if (!up[i]) {
      if (!was_down_[i]) {
        options_.log(
            "gpu " + std::to_string(id.index) + " (" + id.uuid + ") " +
            (posted[i] && !workers_[i]->Busy() ? "is lost" : "did not answer within the call deadline"));
      }
      was_down_[i] = 1;
      buffers_[i].clear();
      continue;
    }
    if (was_down_[i]) options_.log("gpu " + std::to_string(id.index) + " reports again");
    was_down_[i] = 0;
    ++reporting;
    for (GpuSample& s : buffers_[i]) family(s.family).samples.push_back(std::move(s.sample));
    buffers_[i].clear();
    family(GpuFamily::kXidErrors)
        .samples.push_back(Sample{device.labels(), static_cast<double>(xids_->LastXid(id.index))});
  }
  if (xids_ != nullptr) {
    for (const XidCount& c : xids_->Counts()) {
      for (size_t i = 0; i < n; ++i) {
        const GpuDevice& device = workers_[i]->device();
        if (device.identity().index != c.gpu_index) continue;
        std::string xid = std::to_string(c.xid);
        Sample total{device.labels(), static_cast<double>(c.count)};
        total.labels.emplace_back("xid", xid);
        family(GpuFamily::kXidErrorsTotal).samples.push_back(std::move(total));
        Sample seen{device.labels(), c.last_seen_seconds};
        seen.labels.emplace_back("xid", std::move(xid));
        family(GpuFamily::kXidLastSeenTimestampSeconds).samples.push_back(std::move(seen));
      }
    }
  }
  for (size_t f = 0; f < kGpuFamilyCount; ++f) {
    if (!families[f].samples.empty() && specs_[f].exported) out.push_back(std::move(families[f]));
  }
  if (reporting == 0) return Status::Unavailable("no GPU answered this cycle");
  return Status::Ok();
}

std::vector<MetricDescription> GpuCollector::Describe() const {
  std::vector<MetricDescription> out;
  for (const GpuFamilySpec& spec : specs_) {
    if (spec.exported) out.push_back(spec.description);
  }
  return out;
}

}  // namespace gpuscope
