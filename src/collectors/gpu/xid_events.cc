#include "src/collectors/gpu/xid_events.h"

namespace gpuscope {

XidEventMonitor::XidEventMonitor(std::shared_ptr<const NvmlLibrary> nvml,
                                 std::vector<std::pair<nvmlDevice_t, unsigned int>> devices,
                                 std::chrono::milliseconds wait)
    : nvml_(std::move(nvml)), devices_(std::move(devices)), wait_(wait) {}

XidEventMonitor::~XidEventMonitor() {
  if (!thread_.joinable()) return;
  shared_->stop = true;
  auto give_up = std::chrono::steady_clock::now() + wait_ + std::chrono::milliseconds(500);
  while (!shared_->finished && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (shared_->finished)
    thread_.join();
  else
    thread_.detach();  // hung in NVML: it owns references to the library and its state
}

size_t XidEventMonitor::Start(std::string* why) {
  nvmlEventSet_t set{};
  nvmlReturn_t r = nvml_->nvmlEventSetCreate(&set);
  if (r != NVML_SUCCESS) {
    *why = "nvmlEventSetCreate: " + nvml_->ErrorString(r);
    return 0;
  }
  std::vector<std::pair<nvmlDevice_t, unsigned int>> registered;
  for (const auto& [device, index] : devices_) {
    unsigned long long supported = 0;
    if (nvml_->nvmlDeviceGetSupportedEventTypes(device, &supported) != NVML_SUCCESS ||
        (supported & nvmlEventTypeXidCriticalError) == 0) {
      continue;
    }
    if (nvml_->nvmlDeviceRegisterEvents(device, nvmlEventTypeXidCriticalError, set) == NVML_SUCCESS) {
      registered.emplace_back(device, index);
    }
  }
  if (registered.empty()) {
    nvml_->nvmlEventSetFree(set);
    *why = "no GPU supports XID events";
    return 0;
  }
  size_t count = registered.size();
  thread_ =
      std::thread(Run, nvml_, shared_, set, std::move(registered), static_cast<unsigned int>(wait_.count()));
  return count;
}

void XidEventMonitor::Run(std::shared_ptr<const NvmlLibrary> nvml, std::shared_ptr<Shared> shared,
                          nvmlEventSet_t set, std::vector<std::pair<nvmlDevice_t, unsigned int>> devices,
                          unsigned int wait_ms) {
  while (!shared->stop) {
    nvmlEventData_t data{};
    nvmlReturn_t r = nvml->nvmlEventSetWait_v2(set, &data, wait_ms);
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
    for (const auto& [device, gpu] : devices) {
      if (device == data.device) index = &gpu;
    }
    if (index == nullptr) continue;
    double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::lock_guard<std::mutex> lock(shared->mu);
    XidCount& entry = shared->counts[{*index, data.eventData}];
    entry.gpu_index = *index;
    entry.xid = data.eventData;
    entry.count++;
    entry.last_seen_seconds = now;
    shared->last[*index] = data.eventData;
  }
  nvml->nvmlEventSetFree(set);
  shared->finished = true;
}

std::vector<XidCount> XidEventMonitor::Counts() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  std::vector<XidCount> out;
  out.reserve(shared_->counts.size());
  for (const auto& [key, value] : shared_->counts) out.push_back(value);
  return out;
}

unsigned long long XidEventMonitor::LastXid(unsigned int gpu_index) const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto it = shared_->last.find(gpu_index);
  return it == shared_->last.end() ? 0 : it->second;
}

}  // namespace gpuscope
