// ebpf_load: the load and the per-call timings of bench/ebpf_overhead.py (the cost of the agent's eBPF
// programs). Not a test and not a Google Benchmark: the script starts it with and without the agent and
// compares. Two modes, each printing one JSON object on stdout:
//
//   ebpf_load opens --dir DIR --rate N --seconds S [--files K]
//     open(O_RDONLY)+close of DIR/f0..f{K-1} in turn at N opens/s on an absolute schedule (a late one is
//     caught up, not dropped), for S seconds at most. {"opens": n, "seconds": s, "rate": r}
//
//   ebpf_load micro --watched DIR --other DIR --library LIBCUDA [--scale X] [--batches B]
//     The cost of one call as the calling thread sees it, in ns of its own CPU time
//     (CLOCK_THREAD_CPUTIME_ID: the kernel's time in the syscall and in the BPF programs it triggers, the
//     uprobes' traps included, but not the time the thread waited for a core on a shared machine) and of
//     wall time: B batches of each operation in turn, the median batch reported.
//       open_close_watched  open(DIR/f0)+close, DIR below a watched directory (a record per open)
//       open_close_other    the same in a directory nobody watches (filtered in the kernel)
//       open_close_other_fs the same on another file system than the watched one (--other-fs; filtered
//                           before the walk up the directories)
//       getppid             the cheapest syscall: what every syscall pays for sys_enter/sys_exit hooks
//       pread_tracked       pread(4 KiB, offset 0) on a descriptor opened below the watched directory
//       pread_untracked     the same on a descriptor opened elsewhere
//       cuda_alloc_free     cuMemAlloc_v2(1 MiB)+cuMemFree_v2 through the libcuda.so.1 given (dlopen'ed)
//     {"open_close_watched": {"cpu_ns": x, "wall_ns": y, "calls": n}, ...}
//
// Every loop is bounded by a count (micro) or by --seconds (opens).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sim/cuda/cuda_api.h"

namespace {

int Usage() {
  std::fputs(
      "Usage: ebpf_load opens --dir DIR --rate N --seconds S [--files K]\n"
      "       ebpf_load micro --watched DIR --other DIR --library LIBCUDA [--scale X] [--batches B]\n",
      stderr);
  return 2;
}

int64_t Nanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// --flag value pairs after the mode.
struct Flags {
  std::vector<std::pair<std::string, std::string>> values;
  const char* Get(std::string_view name, const char* fallback = nullptr) const {
    for (const auto& [k, v] : values) {
      if (k == name) return v.c_str();
    }
    return fallback;
  }
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 2; i < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) return false;
    flags.values.emplace_back(argv[i] + 2, argv[i + 1]);
  }
  return true;
}

int RunOpens(const Flags& flags) {
  const char* dir = flags.Get("dir");
  const double rate = std::atof(flags.Get("rate", "10000"));
  const double seconds = std::atof(flags.Get("seconds", "10"));
  const int files = std::max(1, std::atoi(flags.Get("files", "100")));
  if (dir == nullptr || rate <= 0 || seconds <= 0 || seconds > 3600) return Usage();
  std::vector<std::string> paths;
  for (int i = 0; i < files; ++i) paths.push_back(std::string(dir) + "/f" + std::to_string(i));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const std::chrono::duration<double> interval(1.0 / rate);
  const uint64_t total = static_cast<uint64_t>(rate * seconds);
  uint64_t opens = 0;
  uint64_t failures = 0;
  for (uint64_t i = 0; i < total; ++i) {
    const auto due = start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i));
    if (Clock::now() < due) std::this_thread::sleep_until(due);
    if (Clock::now() >= end + std::chrono::seconds(1)) break;  // far behind on a loaded machine: stop
    const int fd = ::open(paths[i % paths.size()].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      ++failures;
      continue;
    }
    ::close(fd);
    ++opens;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("{\"opens\": %llu, \"failures\": %llu, \"seconds\": %.3f, \"rate\": %.1f}\n",
              static_cast<unsigned long long>(opens), static_cast<unsigned long long>(failures), elapsed,
              elapsed > 0 ? static_cast<double>(opens) / elapsed : 0.0);
  return failures == 0 ? 0 : 1;
}

struct Op {
  const char* name;
  uint64_t calls;  // per batch
  std::function<void(uint64_t)> run;
  std::vector<double> cpu_ns;
  std::vector<double> wall_ns;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int RunMicro(const Flags& flags) {
  const char* watched = flags.Get("watched");
  const char* other = flags.Get("other");
  const char* library = flags.Get("library");
  const double scale = std::atof(flags.Get("scale", "1"));
  const int batches = std::atoi(flags.Get("batches", "5"));
  if (watched == nullptr || other == nullptr || library == nullptr || scale <= 0 || scale > 100 ||
      batches < 1 || batches > 100)
    return Usage();
  const std::string watched_file = std::string(watched) + "/f0";
  const std::string other_file = std::string(other) + "/f0";
  const char* other_fs = flags.Get("other-fs");

  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "ebpf_load: %s\n", dlerror());
    return 1;
  }
  const auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(lib, "cuInit"));
  const auto device_get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(lib, "cuDeviceGet"));
  const auto retain =
      reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  const auto set_current = reinterpret_cast<decltype(&cuCtxSetCurrent)>(dlsym(lib, "cuCtxSetCurrent"));
  const auto mem_alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(dlsym(lib, "cuMemAlloc_v2"));
  const auto mem_free = reinterpret_cast<decltype(&cuMemFree_v2)>(dlsym(lib, "cuMemFree_v2"));
  if (init == nullptr || device_get == nullptr || retain == nullptr || set_current == nullptr ||
      mem_alloc == nullptr || mem_free == nullptr) {
    std::fprintf(stderr, "ebpf_load: %s lacks an entry point\n", library);
    return 1;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (init(0) != CUDA_SUCCESS || device_get(&device, 0) != CUDA_SUCCESS ||
      retain(&context, device) != CUDA_SUCCESS || set_current(context) != CUDA_SUCCESS) {
    std::fprintf(stderr, "ebpf_load: CUDA set-up failed (GPUSCOPE_SIM_SCENARIO set?)\n");
    return 1;
  }

  // Opened now, while the agent (when there is one) runs: the files program tracks the first.
  const int tracked_fd = ::open(watched_file.c_str(), O_RDONLY | O_CLOEXEC);
  const int untracked_fd = ::open(other_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (tracked_fd < 0 || untracked_fd < 0) {
    std::fprintf(stderr, "ebpf_load: cannot open %s or %s: %s\n", watched_file.c_str(), other_file.c_str(),
                 std::strerror(errno));
    return 1;
  }
  char buffer[4096];
  uint64_t failures = 0;
  const auto open_close = [&failures](const std::string& path) {
    return [&failures, path](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          ++failures;
        } else {
          ::close(fd);
        }
      }
    };
  };
  const auto pread_on = [&failures, &buffer](int fd) {
    return [&failures, &buffer, fd](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) {
        if (::pread(fd, buffer, sizeof(buffer), 0) != static_cast<ssize_t>(sizeof(buffer))) ++failures;
      }
    };
  };
  const auto calls = [scale](double n) { return std::max<uint64_t>(1, static_cast<uint64_t>(n * scale)); };
  std::vector<Op> ops;
  ops.push_back({"open_close_watched", calls(20000), open_close(watched_file), {}, {}});
  ops.push_back({"open_close_other", calls(20000), open_close(other_file), {}, {}});
  if (other_fs != nullptr)
    ops.push_back({"open_close_other_fs", calls(20000), open_close(std::string(other_fs) + "/f0"), {}, {}});
  ops.push_back({"getppid",
                 calls(200000),
                 [](uint64_t n) {
                   for (uint64_t i = 0; i < n; ++i) syscall(SYS_getppid);
                 },
                 {},
                 {}});
  ops.push_back({"pread_tracked", calls(50000), pread_on(tracked_fd), {}, {}});
  ops.push_back({"pread_untracked", calls(50000), pread_on(untracked_fd), {}, {}});
  ops.push_back({"cuda_alloc_free",
                 calls(20000),
                 [&](uint64_t n) {
                   for (uint64_t i = 0; i < n; ++i) {
                     CUdeviceptr p = 0;
                     if (mem_alloc(&p, 1 << 20) != CUDA_SUCCESS || mem_free(p) != CUDA_SUCCESS) ++failures;
                   }
                 },
                 {},
                 {}});
  for (Op& op : ops) op.run(std::max<uint64_t>(1, op.calls / 10));  // warm caches and maps
  for (int b = 0; b < batches; ++b) {
    for (Op& op : ops) {
      const int64_t c0 = Nanos(CLOCK_THREAD_CPUTIME_ID);
      const int64_t w0 = Nanos(CLOCK_MONOTONIC);
      op.run(op.calls);
      const int64_t w1 = Nanos(CLOCK_MONOTONIC);
      const int64_t c1 = Nanos(CLOCK_THREAD_CPUTIME_ID);
      op.cpu_ns.push_back(static_cast<double>(c1 - c0) / static_cast<double>(op.calls));
      op.wall_ns.push_back(static_cast<double>(w1 - w0) / static_cast<double>(op.calls));
    }
  }
  ::close(tracked_fd);
  ::close(untracked_fd);
  std::printf("{");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::printf("%s\"%s\": {\"cpu_ns\": %.1f, \"wall_ns\": %.1f, \"calls\": %llu}", i == 0 ? "" : ", ",
                ops[i].name, Median(ops[i].cpu_ns), Median(ops[i].wall_ns),
                static_cast<unsigned long long>(ops[i].calls * static_cast<uint64_t>(batches)));
  }
  std::printf(", \"failures\": %llu}\n", static_cast<unsigned long long>(failures));
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string_view mode = argv[1];
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return Usage();
  if (mode == "opens") return RunOpens(flags);
  if (mode == "micro") return RunMicro(flags);
  return Usage();
}
