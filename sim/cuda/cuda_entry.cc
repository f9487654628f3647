// The stand-in libcuda.so.1: the CUDA driver API entry points of cuda_api.h, answering from the same
// scenario file the NVML simulator reads (GPUSCOPE_SIM_SCENARIO, loaded by Simulator::FromEnvironment, so
// one parser and one model table). It exists so that eBPF uprobes attach, by symbol name, to real code
// at the allocation entry points; sim/README.md ("Stand-in libcuda.so.1") documents the behaviour.
//
// Allocations hand out fake device addresses: unique, 256-byte aligned, never reused within a process,
// never backed by host memory (dereferencing one faults). Each device counts the bytes allocated on it
// against its free memory: total = the model's memory, free = total - the model's reserved memory -
// allocations. The scenario workload's own memory is not counted (the workload driver plays that
// workload's process, and counting it would count it twice).
//
// Thread-safety: every entry point may be called from any thread. The devices are fixed by cuInit (once
// per process, as the real driver); allocations share one mutex. The current device is per thread.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>  // std::once_flag
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cuda/cuda_api.h"
#include "sim/cuda/visible_devices.h"
#include "sim/simulator.h"
#include "src/core/mutex.h"

// A primary context: one per device, never destroyed (its address is the CUcontext).
struct CUctx_st {
  int device = 0;
};

namespace {

using gpuscope::sim::Simulator;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kAlignment = 256;
// The first address handed out: a plausible UVA device address, away from null.
constexpr CUdeviceptr kFirstAddress = 0x7f0000000000ULL;
// The CUDA version of an R550 driver (12.4), what cuDriverGetVersion reports.
constexpr int kDriverVersion = 12040;

// Which entry point made an allocation (kept for debugging; any free releases any kind, as in CUDA).
enum class Origin : uint8_t { kAlloc, kAsync, kManaged };

struct Device {
  unsigned gpu = 0;  // scenario index
  std::string name;
  uint64_t total = 0;
  uint64_t reserved = 0;
  uint64_t used = 0;  // guarded by Driver::mu
};

struct Allocation {
  int device = 0;
  uint64_t bytes = 0;  // rounded to the alignment
  Origin origin = Origin::kAlloc;
};

struct Driver {
  std::vector<CUctx_st> contexts;  // fixed after cuInit
  gpuscope::Mutex mu;
  std::vector<Device> devices GUARDED_BY(mu);  // the list is fixed after cuInit; `used` changes
  std::unordered_map<CUdeviceptr, Allocation> live GUARDED_BY(mu);
  CUdeviceptr next GUARDED_BY(mu) = kFirstAddress;
};

std::once_flag g_init_once;
CUresult g_init_result = CUDA_ERROR_NOT_INITIALIZED;  // written once under g_init_once
std::atomic<Driver*> g_driver{nullptr};               // set on a successful cuInit, never freed
thread_local int t_device = -1;                       // cuCtxSetCurrent's device; -1: none (device 0)

CUresult Load() {
  auto loaded = Simulator::FromEnvironment();
  if (auto* error = std::get_if<std::string>(&loaded)) {
    std::fprintf(stderr, "gpuscope-sim-cuda: %s\n", error->c_str());
    return CUDA_ERROR_NO_DEVICE;
  }
  const Simulator& sim = *std::get<std::unique_ptr<Simulator>>(loaded);
  std::vector<std::string> uuids;
  for (unsigned i = 0; i < sim.gpu_count(); ++i) uuids.push_back(sim.Uuid(i));
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::vector<unsigned> visible = gpuscope::sim::cuda::VisibleGpus(
      env == nullptr ? std::nullopt : std::optional<std::string_view>(env), uuids);
  if (visible.empty()) return CUDA_ERROR_NO_DEVICE;

  auto* driver = new Driver();  // lives until the process exits, as the real driver's state
  gpuscope::MutexLock lock(&driver->mu);
  for (unsigned gpu : visible) {
    const gpuscope::sim::GpuModel& model = *sim.scenario().gpus[gpu].model;
    driver->devices.push_back(Device{.gpu = gpu,
                                     .name = model.name,
                                     .total = model.memory_mib * kMiB,
                                     .reserved = model.reserved_mib * kMiB,
                                     .used = 0});
    driver->contexts.push_back(CUctx_st{.device = static_cast<int>(driver->contexts.size())});
  }
  g_driver.store(driver, std::memory_order_release);
  return CUDA_SUCCESS;
}

Driver* Ready() { return g_driver.load(std::memory_order_acquire); }

bool ValidDevice(const Driver& d, CUdevice dev) {
  return dev >= 0 && static_cast<size_t>(dev) < d.contexts.size();
}

// The checks a call about one device makes first, in the real driver's order: initialised, an output
// to write, a valid ordinal. CUDA_SUCCESS with `d` set when all pass.
CUresult CheckDeviceCall(Driver*& d, const void* out, CUdevice dev) {
  d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ValidDevice(*d, dev)) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

// The calling thread's device: its current context's, else device 0 (real CUDA would answer
// CUDA_ERROR_INVALID_CONTEXT; the stand-in spares callers the context set-up).
int CurrentDevice() { return t_device < 0 ? 0 : t_device; }

CUresult Allocate(CUdeviceptr* dptr, size_t bytesize, Origin origin) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize > UINT64_MAX - kAlignment) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t bytes = (static_cast<uint64_t>(bytesize) + kAlignment - 1) / kAlignment * kAlignment;
  const int device = CurrentDevice();
  gpuscope::MutexLock lock(&d->mu);
  Device& dev = d->devices[device];
  const uint64_t available = dev.total - dev.reserved - dev.used;
  if (bytes > available || bytes > UINT64_MAX - d->next) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUdeviceptr address = d->next;
  d->next += bytes;
  dev.used += bytes;
  d->live.emplace(address, Allocation{.device = device, .bytes = bytes, .origin = origin});
  *dptr = address;
  return CUDA_SUCCESS;
}

CUresult Release(CUdeviceptr dptr) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  gpuscope::MutexLock lock(&d->mu);
  const auto it = d->live.find(dptr);
  if (it == d->live.end()) return CUDA_ERROR_INVALID_VALUE;
  d->devices[it->second.device].used -= it->second.bytes;
  d->live.erase(it);
  return CUDA_SUCCESS;
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

// cuda.h's names and the real driver's cuGetErrorString texts for the codes the stand-in returns.
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* FindError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

// The entry points. The allocation and free functions are each a separate, non-inlined symbol with its
// own body (the Origin differs, and the build passes -fno-ipa-icf), so a uprobe on one never fires for
// another.
#define GPUSCOPE_CUDA_API extern "C" __attribute__((visibility("default"), noinline))

GPUSCOPE_CUDA_API CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::call_once(g_init_once, [] { g_init_result = Load(); });
  return g_init_result;
}

GPUSCOPE_CUDA_API CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDeviceGetCount(int* count) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(d->contexts.size());
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  Driver* d = nullptr;
  if (const CUresult r = CheckDeviceCall(d, device, ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  Driver* d = nullptr;
  if (const CUresult r = CheckDeviceCall(d, len <= 0 ? nullptr : name, dev); r != CUDA_SUCCESS) return r;
  gpuscope::MutexLock lock(&d->mu);
  // As the real driver: the name is cut to len - 1 characters, always terminated.
  const std::string& model = d->devices[dev].name;
  const size_t n = std::min(model.size(), static_cast<size_t>(len) - 1);
  std::memcpy(name, model.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  Driver* d = nullptr;
  if (const CUresult r = CheckDeviceCall(d, bytes, dev); r != CUDA_SUCCESS) return r;
  gpuscope::MutexLock lock(&d->mu);
  *bytes = d->devices[dev].total;
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Driver* d = nullptr;
  if (const CUresult r = CheckDeviceCall(d, pctx, dev); r != CUDA_SUCCESS) return r;
  *pctx = &d->contexts[dev];
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(*d, dev)) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;  // primary contexts live as long as the process
}

GPUSCOPE_CUDA_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr) {
    t_device = -1;
    return CUDA_SUCCESS;
  }
  const CUctx_st* first = d->contexts.data();
  if (ctx < first || ctx >= first + d->contexts.size()) return CUDA_ERROR_INVALID_CONTEXT;
  t_device = ctx->device;
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = &d->contexts[CurrentDevice()];
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuCtxGetDevice(CUdevice* device) {
  if (Ready() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = CurrentDevice();
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  gpuscope::MutexLock lock(&d->mu);
  const Device& dev = d->devices[CurrentDevice()];
  *free = dev.total - dev.reserved - dev.used;
  *total = dev.total;
  return CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = FindError(error);
  *pStr = e == nullptr ? nullptr : e->name;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = FindError(error);
  *pStr = e == nullptr ? nullptr : e->text;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

GPUSCOPE_CUDA_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return Allocate(dptr, bytesize, Origin::kAlloc);
}

GPUSCOPE_CUDA_API CUresult cuMemFree_v2(CUdeviceptr dptr) { return Release(dptr); }

// The stream is not checked (the stand-in has no streams; NULL is the legacy default stream); the
// allocation is immediate, as if the stream were idle.
GPUSCOPE_CUDA_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  (void)hStream;
  return Allocate(dptr, bytesize, Origin::kAsync);
}

GPUSCOPE_CUDA_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  (void)hStream;
  // A distinct body from cuMemFree_v2's: an identical one could be folded into it.
  Driver* d = Ready();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Release(dptr);
}

// Managed memory counts against the current device like device memory (no oversubscription), and its
// address is as fake as the others: the host cannot touch it either.
GPUSCOPE_CUDA_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (Ready() != nullptr && flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return Allocate(dptr, bytesize, Origin::kManaged);
}
