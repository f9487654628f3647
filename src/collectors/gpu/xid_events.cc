#include "src/collectors/gpu/xid_events.h"

#include <string>

#include "src/core/log.h"

namespace gpuscope {
namespace {

std::string IndexList(const std::vector<std::pair<nvmlDevice_t, unsigned int>>& devices) {
  std::string out;
  for (const auto& [device, index] : devices) {
    if (!out.empty()) out += ",";
    out += std::to_string(index);
  }
  return out;
}

}  // namespace

XidEventMonitor::XidEventMonitor(std::shared_ptr<const NvmlLibrary> nvml, std::chrono::milliseconds wait)
    : nvml_(std::move(nvml)), wait_(wait) {}

XidEventMonitor::~XidEventMonitor() {
  Stop();
  for (Watcher& w : watchers_) {
    if (*w.finished)
      w.thread.join();
    else
      w.thread.detach();  // hung in NVML: it owns references to the library and its state
  }
}

bool XidEventMonitor::Stop() {
  auto all_finished = [this] {
    for (const Watcher& w : watchers_) {
      if (!*w.finished) return false;
    }
    return true;
  };
  if (shared_->stop.exchange(true)) return all_finished();  // already waited once
  auto give_up = std::chrono::steady_clock::now() + wait_ + std::chrono::milliseconds(500);
  while (!all_finished() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return all_finished();
}

size_t XidEventMonitor::Watch(const std::vector<std::pair<nvmlDevice_t, unsigned int>>& devices) {
  std::vector<std::pair<nvmlDevice_t, unsigned int>> fresh;
  for (const auto& [device, index] : devices) {
    if (watched_.insert(index).second) fresh.emplace_back(device, index);
  }
  if (fresh.empty()) return 0;
  size_t count = fresh.size();
  Watcher w;
  w.finished = std::make_shared<std::atomic<bool>>(false);
  w.thread = std::thread(Run, nvml_, shared_, w.finished, std::move(fresh),
                         static_cast<unsigned int>(wait_.count()));
  watchers_.push_back(std::move(w));
  return count;
}

void XidEventMonitor::Run(const std::shared_ptr<const NvmlLibrary>& nvml,
                          const std::shared_ptr<Shared>& shared,
                          const std::shared_ptr<std::atomic<bool>>& finished,
                          const std::vector<std::pair<nvmlDevice_t, unsigned int>>& devices,
                          unsigned int wait_ms) {
  const std::string gpus = IndexList(devices);
  nvmlEventSet_t set{};
  nvmlReturn_t r = nvml->nvmlEventSetCreate(&set);
  if (r != NVML_SUCCESS) {
    const std::string error = "nvmlEventSetCreate: " + nvml->ErrorString(r);
    Log(LogLevel::kWarn, "XID events not watched", {{"collector", "gpu"}, {"gpus", gpus}, {"error", error}});
    *finished = true;
    return;
  }
  std::vector<std::pair<nvmlDevice_t, unsigned int>> registered;
  for (const auto& [device, index] : devices) {
    if (shared->stop) break;
    unsigned long long supported = 0;
    if (nvml->nvmlDeviceGetSupportedEventTypes(device, &supported) != NVML_SUCCESS ||
        (supported & nvmlEventTypeXidCriticalError) == 0) {
      continue;
    }
    if (nvml->nvmlDeviceRegisterEvents(device, nvmlEventTypeXidCriticalError, set) == NVML_SUCCESS) {
      registered.emplace_back(device, index);
    }
  }
  if (registered.empty() && !shared->stop) {
    Log(LogLevel::kInfo, "XID events not watched: no GPU supports them",
        {{"collector", "gpu"}, {"gpus", gpus}});
  }
  while (!shared->stop && !registered.empty()) {
    nvmlEventData_t data{};
    r = nvml->nvmlEventSetWait_v2(set, &data, wait_ms);
    if (r == NVML_ERROR_TIMEOUT) continue;
    if (r != NVML_SUCCESS) {
      // GPU_IS_LOST and friends: do not spin; try again after one wait period.
      for (unsigned int slept = 0; slept < wait_ms && !shared->stop; slept += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    const unsigned int* index = nullptr;
    for (const auto& [device, gpu] : registered) {
      if (device == data.device) index = &gpu;
    }
    if (index == nullptr) continue;
    double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    MutexLock lock(&shared->mu);
    XidCount& entry = shared->counts[{*index, data.eventData}];
    entry.gpu_index = *index;
    entry.xid = data.eventData;
    entry.count++;
    entry.last_seen_seconds = now;
    shared->last[*index] = data.eventData;
  }
  nvml->nvmlEventSetFree(set);
  *finished = true;
}

std::vector<XidCount> XidEventMonitor::Counts() const {
  MutexLock lock(&shared_->mu);
  std::vector<XidCount> out;
  out.reserve(shared_->counts.size());
  for (const auto& [key, value] : shared_->counts) out.push_back(value);
  return out;
}

unsigned long long XidEventMonitor::LastXid(unsigned int gpu_index) const {
  MutexLock lock(&shared_->mu);
  auto it = shared_->last.find(gpu_index);
  return it == shared_->last.end() ? 0 : it->second;
}

}  // namespace gpuscope
