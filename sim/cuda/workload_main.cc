// gpuscope-sim-cuda-workload: an allocation workload against a libcuda.so.1 (by default the stand-in
// beside this program), loaded with dlopen so that uprobes on its entry points see every call. Used by
// the eBPF tests and the probes' overhead benchmark, so the loop does no I/O: one summary line at exit.
//
//   gpuscope-sim-cuda-workload --allocs-per-second 10000 --seconds 30 --bytes 1M --live 64
//   gpuscope-sim-cuda-workload --follow-scenario --bytes 256M --seconds 0     # until SIGTERM
//
// Rate mode: allocations at a fixed rate on an absolute schedule (a late one is caught up, not dropped);
// before each, when K are live, the oldest is freed. Follow mode: every 100 ms the live bytes track the
// scenario GPU's memory-used figure (the NVML simulator's physics, read from GPUSCOPE_SIM_SCENARIO):
// allocations of --bytes until it is reached, frees of the newest above it.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "sim/cuda/cuda_api.h"
#include "sim/cuda/visible_devices.h"
#include "sim/simulator.h"

namespace {

constexpr const char* kUsage =
    "Usage: gpuscope-sim-cuda-workload [flags]\n"
    "\n"
    "Allocates and frees CUDA device memory through a libcuda.so.1 and prints one summary line:\n"
    "  allocations=N frees=N failures=N first_failure=NAME seconds=S rate=R\n"
    "(rate: allocation calls per second, failed ones included).\n"
    "\n"
    "  --library PATH            libcuda.so.1 to load (default: the stand-in beside this program)\n"
    "  --device N                CUDA ordinal to allocate on (default 0)\n"
    "  --allocs-per-second N     allocation rate; 0: as fast as possible (default 1000)\n"
    "  --seconds S               how long to run; 0: until SIGTERM or SIGINT (default 10)\n"
    "  --bytes B                 size of each allocation; suffixes K, M, G (binary) (default 1M)\n"
    "  --live K                  most allocations live at once; the oldest is freed first (default 64)\n"
    "  --api API                 alloc (cuMemAlloc_v2/cuMemFree_v2), async (cuMemAllocAsync/\n"
    "                            cuMemFreeAsync), managed (cuMemAllocManaged/cuMemFree_v2), or mixed\n"
    "                            (the three in turn) (default alloc)\n"
    "  --follow-scenario         instead of a rate, hold the memory-used figure of the scenario GPU behind\n"
    "                            --device (GPUSCOPE_SIM_SCENARIO, CUDA_VISIBLE_DEVICES), in --bytes pieces\n"
    "  --help\n";

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

enum class Api { kAlloc, kAsync, kManaged, kMixed };

struct Options {
  std::string library;
  int device = 0;
  double rate = 1000;
  double seconds = 10;
  uint64_t bytes = 1024 * 1024;
  size_t live = 64;
  Api api = Api::kAlloc;
  bool follow = false;
};

// The entry points used, resolved from the loaded library.
struct Cuda {
  decltype(&cuInit) init = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) ctx_retain = nullptr;
  decltype(&cuCtxSetCurrent) ctx_set = nullptr;
  decltype(&cuGetErrorName) error_name = nullptr;
  decltype(&cuMemAlloc_v2) alloc = nullptr;
  decltype(&cuMemFree_v2) free = nullptr;
  decltype(&cuMemAllocAsync) alloc_async = nullptr;
  decltype(&cuMemFreeAsync) free_async = nullptr;
  decltype(&cuMemAllocManaged) alloc_managed = nullptr;
};

// Resolves every entry point the workload uses; false (with a message) when the library lacks one.
bool ResolveAll(void* lib, const std::string& path, Cuda& cuda) {
  bool ok = true;
  const auto resolve = [&](const char* name, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(lib, name));
    if (out == nullptr) {
      std::fprintf(stderr, "gpuscope-sim-cuda-workload: %s has no %s\n", path.c_str(), name);
      ok = false;
    }
  };
  resolve("cuInit", cuda.init);
  resolve("cuDeviceGet", cuda.device_get);
  resolve("cuDevicePrimaryCtxRetain", cuda.ctx_retain);
  resolve("cuCtxSetCurrent", cuda.ctx_set);
  resolve("cuGetErrorName", cuda.error_name);
  resolve("cuMemAlloc_v2", cuda.alloc);
  resolve("cuMemFree_v2", cuda.free);
  resolve("cuMemAllocAsync", cuda.alloc_async);
  resolve("cuMemFreeAsync", cuda.free_async);
  resolve("cuMemAllocManaged", cuda.alloc_managed);
  return ok;
}

bool ParseNumber(std::string_view text, double& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

bool ParseBytes(std::string_view text, uint64_t& out) {
  uint64_t shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) text.remove_suffix(1);
  }
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n == 0) return false;
  if (n > (UINT64_MAX >> shift)) return false;
  out = n << shift;
  return true;
}

std::string DefaultLibrary() {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return "libcuda.so.1";
  self.resize(static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + "libcuda.so.1";
}

// Parses the flags; nullopt (with a message on stderr) when they are wrong.
std::optional<Options> ParseFlags(int argc, char** argv) {
  Options o;
  o.library = DefaultLibrary();
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    std::string_view value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); eq != std::string_view::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--follow-scenario") {
      o.follow = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpuscope-sim-cuda-workload: %s needs a value\n%s", argv[i], kUsage);
        return std::nullopt;
      }
      value = argv[++i];
    }
    double number = 0;
    bool ok = true;
    if (flag == "--library") {
      o.library = std::string(value);
    } else if (flag == "--device") {
      ok = ParseNumber(value, number) && number == static_cast<int>(number);
      o.device = static_cast<int>(number);
    } else if (flag == "--allocs-per-second") {
      ok = ParseNumber(value, o.rate);
    } else if (flag == "--seconds") {
      ok = ParseNumber(value, o.seconds);
    } else if (flag == "--bytes") {
      ok = ParseBytes(value, o.bytes);
    } else if (flag == "--live") {
      ok = ParseNumber(value, number) && number >= 1 && number == static_cast<size_t>(number);
      o.live = static_cast<size_t>(number);
    } else if (flag == "--api") {
      if (value == "alloc") {
        o.api = Api::kAlloc;
      } else if (value == "async") {
        o.api = Api::kAsync;
      } else if (value == "managed") {
        o.api = Api::kManaged;
      } else if (value == "mixed") {
        o.api = Api::kMixed;
      } else {
        ok = false;
      }
    } else {
      std::fprintf(stderr, "gpuscope-sim-cuda-workload: unknown flag %s\n%s", argv[i], kUsage);
      return std::nullopt;
    }
    if (!ok) {
      std::fprintf(stderr, "gpuscope-sim-cuda-workload: bad value '%.*s' for %.*s\n",
                   static_cast<int>(value.size()), value.data(), static_cast<int>(flag.size()), flag.data());
      return std::nullopt;
    }
  }
  return o;
}

// Allocations and frees with their counts; what the summary line reports.
class Workload {
 public:
  Workload(const Cuda& cuda, Api api, uint64_t bytes) : cuda_(cuda), api_(api), bytes_(bytes) {}

  // One allocation of the configured size through the next entry point. True when it succeeded.
  bool Allocate() {
    const Api api = api_ == Api::kMixed ? static_cast<Api>(calls_ % 3) : api_;
    ++calls_;
    CUdeviceptr p = 0;
    CUresult r = CUDA_SUCCESS;
    switch (api) {
      case Api::kAsync:
        r = cuda_.alloc_async(&p, bytes_, nullptr);
        break;
      case Api::kManaged:
        r = cuda_.alloc_managed(&p, bytes_, CU_MEM_ATTACH_GLOBAL);
        break;
      default:
        r = cuda_.alloc(&p, bytes_);
        break;
    }
    if (r != CUDA_SUCCESS) {
      Fail(r);
      return false;
    }
    ++allocations_;
    live_.push_back(Live{p, api == Api::kAsync});
    return true;
  }

  void FreeOldest() {
    Free(live_.front());
    live_.pop_front();
  }
  void FreeNewest() {
    Free(live_.back());
    live_.pop_back();
  }
  void FreeAll() {
    while (!live_.empty()) FreeOldest();
  }

  size_t live() const { return live_.size(); }
  uint64_t live_bytes() const { return live_.size() * bytes_; }

  void PrintSummary(double seconds) const {
    const char* first = "none";
    if (first_failure_) {
      if (cuda_.error_name(*first_failure_, &first) != CUDA_SUCCESS || first == nullptr) first = "unknown";
    }
    std::printf("allocations=%llu frees=%llu failures=%llu first_failure=%s seconds=%.3f rate=%.1f\n",
                static_cast<unsigned long long>(allocations_), static_cast<unsigned long long>(frees_),
                static_cast<unsigned long long>(failures_), first, seconds,
                seconds > 0 ? static_cast<double>(calls_) / seconds : 0.0);
  }

 private:
  struct Live {
    CUdeviceptr address;
    bool async;
  };

  void Free(const Live& l) {
    const CUresult r = l.async ? cuda_.free_async(l.address, nullptr) : cuda_.free(l.address);
    if (r == CUDA_SUCCESS) {
      ++frees_;
    } else {
      Fail(r);
    }
  }

  void Fail(CUresult r) {
    ++failures_;
    if (!first_failure_) first_failure_ = r;
  }

  const Cuda& cuda_;
  Api api_;
  uint64_t bytes_;
  std::deque<Live> live_;
  uint64_t calls_ = 0;
  uint64_t allocations_ = 0;
  uint64_t frees_ = 0;
  uint64_t failures_ = 0;
  std::optional<CUresult> first_failure_;
};

using Clock = std::chrono::steady_clock;

bool Running(Clock::time_point end, bool forever) { return g_stop == 0 && (forever || Clock::now() < end); }

void RunAtRate(Workload& w, const Options& o, Clock::time_point start) {
  const bool forever = o.seconds == 0;
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  const std::chrono::duration<double> interval(o.rate > 0 ? 1.0 / o.rate : 0.0);
  for (uint64_t i = 0;; ++i) {
    if (o.rate > 0) {
      const auto due = start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i));
      if (!forever && due >= end) break;
      if (Clock::now() < due) std::this_thread::sleep_until(due);
    }
    if (!Running(end, forever)) break;
    if (w.live() >= o.live) w.FreeOldest();
    w.Allocate();
  }
}

int RunFollowingScenario(Workload& w, const Options& o, Clock::time_point start) {
  auto loaded = gpuscope::sim::Simulator::FromEnvironment();
  if (auto* error = std::get_if<std::string>(&loaded)) {
    std::fprintf(stderr, "gpuscope-sim-cuda-workload: %s\n", error->c_str());
    return 1;
  }
  auto& sim = *std::get<std::unique_ptr<gpuscope::sim::Simulator>>(loaded);
  std::vector<std::string> uuids;
  for (unsigned i = 0; i < sim.gpu_count(); ++i) uuids.push_back(sim.Uuid(i));
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const auto visible = gpuscope::sim::cuda::VisibleGpus(
      env == nullptr ? std::nullopt : std::optional<std::string_view>(env), uuids);
  if (static_cast<size_t>(o.device) >= visible.size()) {
    std::fprintf(stderr, "gpuscope-sim-cuda-workload: no scenario GPU behind device %d\n", o.device);
    return 1;
  }
  const unsigned gpu = visible[o.device];
  const bool forever = o.seconds == 0;
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  for (auto tick = start; Running(end, forever); tick += std::chrono::milliseconds(100)) {
    const double target = sim.StateAt(gpu, sim.Now()).mem_used_gib * 1024 * 1024 * 1024;
    while (static_cast<double>(w.live_bytes() + o.bytes) <= target && g_stop == 0) {
      if (!w.Allocate()) break;  // out of memory: hold what there is until the next tick
    }
    while (w.live() > 0 && static_cast<double>(w.live_bytes()) > target) w.FreeNewest();
    const auto next = tick + std::chrono::milliseconds(100);
    std::this_thread::sleep_until(forever ? next : std::min(next, end));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = ParseFlags(argc, argv);
  if (!options) return 2;
  const Options& o = *options;

  void* lib = dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "gpuscope-sim-cuda-workload: %s\n", dlerror());
    return 1;
  }
  Cuda cuda;
  if (!ResolveAll(lib, o.library, cuda)) return 1;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUresult r = cuda.init(0);
  if (r == CUDA_SUCCESS) r = cuda.device_get(&device, o.device);
  if (r == CUDA_SUCCESS) r = cuda.ctx_retain(&context, device);
  if (r == CUDA_SUCCESS) r = cuda.ctx_set(context);
  if (r != CUDA_SUCCESS) {
    const char* name = "unknown";
    cuda.error_name(r, &name);
    std::fprintf(stderr, "gpuscope-sim-cuda-workload: CUDA set-up on device %d failed: %s\n", o.device,
                 name == nullptr ? "unknown" : name);
    return 1;
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  Workload workload(cuda, o.api, o.bytes);
  const auto start = Clock::now();
  int rc = 0;
  if (o.follow) {
    rc = RunFollowingScenario(workload, o, start);
  } else {
    RunAtRate(workload, o, start);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  workload.FreeAll();
  workload.PrintSummary(seconds);
  return rc;
}
