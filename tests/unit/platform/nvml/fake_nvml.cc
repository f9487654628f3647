// A tiny stand-in libnvidia-ml for tests of the loader and the GPU collector: two GPUs, a handful of
// entry points (so every other one is a missing symbol, like an old driver), and test controls
// (fake_nvml_*) to hang a call, lose a GPU or inject XID events. Only the old clock-reason name
// (nvmlDeviceGetCurrentClocksThrottleReasons) is exported, to prove the loader's fallback.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "src/platform/nvml/nvml_api.h"

namespace {

constexpr unsigned int kGpus = 2;
struct FakeDevice {
  int index;
};
FakeDevice devices[kGpus] = {{0}, {1}};

std::mutex mu;
std::condition_variable cv;
bool hang[kGpus] = {false, false};
bool lost[kGpus] = {false, false};
bool memory_unsupported[kGpus] = {false, true};  // GPU 1 has no memory info: NOT_SUPPORTED
std::deque<std::pair<int, unsigned long long>> xids;
std::map<std::string, int> calls;
bool initialized = false;

int IndexOf(nvmlDevice_t device) {
  for (unsigned int i = 0; i < kGpus; ++i) {
    if (reinterpret_cast<nvmlDevice_t>(&devices[i]) == device) return static_cast<int>(i);
  }
  return -1;
}

void Count(const char* name) {
  std::lock_guard<std::mutex> lock(mu);
  calls[name]++;
}

void Copy(char* out, unsigned int length, const std::string& text) {
  std::snprintf(out, length, "%s", text.c_str());
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_nvml_reset() {
  std::lock_guard<std::mutex> lock(mu);
  for (unsigned int i = 0; i < kGpus; ++i) hang[i] = lost[i] = false;
  xids.clear();
  calls.clear();
  cv.notify_all();
}
__attribute__((visibility("default"))) void fake_nvml_set_hang(int gpu, int on) {
  std::lock_guard<std::mutex> lock(mu);
  hang[gpu] = on != 0;
  cv.notify_all();
}
__attribute__((visibility("default"))) void fake_nvml_set_lost(int gpu, int on) {
  std::lock_guard<std::mutex> lock(mu);
  lost[gpu] = on != 0;
}
__attribute__((visibility("default"))) void fake_nvml_push_xid(int gpu, unsigned long long xid) {
  std::lock_guard<std::mutex> lock(mu);
  xids.emplace_back(gpu, xid);
  cv.notify_all();
}
__attribute__((visibility("default"))) int fake_nvml_calls(const char* name) {
  std::lock_guard<std::mutex> lock(mu);
  return calls[name];
}

nvmlReturn_t nvmlInit_v2() {
  initialized = true;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown() {
  initialized = false;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Copy(version, length, "550.54.15");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = kGpus;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index >= kGpus) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&devices[index]);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t, char* name, unsigned int length) {
  Copy(name, length, "NVIDIA H100 80GB HBM3");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  Copy(uuid, length, "GPU-fake-000" + std::to_string(IndexOf(device)));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", 0x18 + IndexOf(device));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  *minor = static_cast<unsigned int>(IndexOf(device));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t, unsigned int* temp) {
  int i = IndexOf(device);
  std::lock_guard<std::mutex> lock(mu);
  if (lost[i]) return NVML_ERROR_GPU_IS_LOST;
  *temp = 40 + static_cast<unsigned int>(i);
  return NVML_SUCCESS;
}
// Blocks while the GPU is set to hang (a stuck driver call).
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz) {
  int i = IndexOf(device);
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return !hang[i]; });
  if (lost[i]) return NVML_ERROR_GPU_IS_LOST;
  *mhz = type == NVML_CLOCK_SM ? 1980 : 2619;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  int i = IndexOf(device);
  Count("nvmlDeviceGetMemoryInfo_v2");
  if (memory_unsupported[i]) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = 80ULL << 30;
  memory->reserved = 512ULL << 20;
  memory->used = 1ULL << 30;
  memory->free = memory->total - memory->reserved - memory->used;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t, unsigned long long* reasons) {
  *reasons = nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwThermalSlowdown;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t, nvmlPerfPolicyType_t policy,
                                          nvmlViolationTime_t* time) {
  time->referenceTime = 0;
  time->violationTime = policy == NVML_PERF_POLICY_POWER ? 5000000ULL : 0;  // 5 ms
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(&devices[0]);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t, unsigned long long* types) {
  *types = nvmlEventTypeXidCriticalError;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t, unsigned long long, nvmlEventSet_t) {
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t, nvmlEventData_t* data, unsigned int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu);
  if (!cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [] { return !xids.empty(); })) {
    return NVML_ERROR_TIMEOUT;
  }
  auto [gpu, xid] = xids.front();
  xids.pop_front();
  std::memset(data, 0, sizeof(*data));
  data->device = reinterpret_cast<nvmlDevice_t>(&devices[gpu]);
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = xid;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t) { return NVML_SUCCESS; }

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Fake error";
  }
}

}  // extern "C"
