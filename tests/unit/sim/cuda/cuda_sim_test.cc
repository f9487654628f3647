// The stand-in libcuda.so.1 (sim/cuda/), loaded with dlopen as a CUDA application loads it. cuInit runs
// once per process, as in the real driver, so every test that initialises does so in a child process of
// its own (InFreshProcess); the driver program's tests run it as a command.
#include <dlfcn.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "sim/cuda/cuda_api.h"
#include "sim/cuda/visible_devices.h"
#include "sim/simulator.h"

namespace {

using gpuscope::sim::cuda::VisibleGpus;

constexpr unsigned long long kMiB = 1024ULL * 1024;
constexpr unsigned long long kGiB = 1024 * kMiB;
// The H100's memory and what the driver reserves (sim/gpu_models.cc, sim/README.md's table).
constexpr unsigned long long kH100Total = 81559 * kMiB;
constexpr unsigned long long kH100Free = (81559 - 553) * kMiB;

std::string ScenarioPath(const char* name) { return std::string(GPUSCOPE_SIM_SCENARIO_DIR) + "/" + name; }

// The entry points, resolved from the library by name.
struct Cuda {
  void* lib = nullptr;
  decltype(&cuInit) Init = nullptr;
  decltype(&cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&cuDeviceGet) DeviceGet = nullptr;
  decltype(&cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&cuDeviceTotalMem_v2) DeviceTotalMem = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&cuDevicePrimaryCtxRelease_v2) PrimaryCtxRelease = nullptr;
  decltype(&cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&cuMemGetInfo_v2) MemGetInfo = nullptr;
  decltype(&cuGetErrorName) GetErrorName = nullptr;
  decltype(&cuGetErrorString) GetErrorString = nullptr;
  decltype(&cuMemAlloc_v2) MemAlloc = nullptr;
  decltype(&cuMemFree_v2) MemFree = nullptr;
  decltype(&cuMemAllocAsync) MemAllocAsync = nullptr;
  decltype(&cuMemFreeAsync) MemFreeAsync = nullptr;
  decltype(&cuMemAllocManaged) MemAllocManaged = nullptr;
};

template <typename F>
void Resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  ASSERT_NE(out, nullptr) << name;
}

void Load(Cuda& c) {
  c.lib = dlopen(GPUSCOPE_SIM_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(c.lib, nullptr) << dlerror();
  Resolve(c.lib, "cuInit", c.Init);
  Resolve(c.lib, "cuDriverGetVersion", c.DriverGetVersion);
  Resolve(c.lib, "cuDeviceGetCount", c.DeviceGetCount);
  Resolve(c.lib, "cuDeviceGet", c.DeviceGet);
  Resolve(c.lib, "cuDeviceGetName", c.DeviceGetName);
  Resolve(c.lib, "cuDeviceTotalMem_v2", c.DeviceTotalMem);
  Resolve(c.lib, "cuDevicePrimaryCtxRetain", c.PrimaryCtxRetain);
  Resolve(c.lib, "cuDevicePrimaryCtxRelease_v2", c.PrimaryCtxRelease);
  Resolve(c.lib, "cuCtxSetCurrent", c.CtxSetCurrent);
  Resolve(c.lib, "cuCtxGetCurrent", c.CtxGetCurrent);
  Resolve(c.lib, "cuCtxGetDevice", c.CtxGetDevice);
  Resolve(c.lib, "cuMemGetInfo_v2", c.MemGetInfo);
  Resolve(c.lib, "cuGetErrorName", c.GetErrorName);
  Resolve(c.lib, "cuGetErrorString", c.GetErrorString);
  Resolve(c.lib, "cuMemAlloc_v2", c.MemAlloc);
  Resolve(c.lib, "cuMemFree_v2", c.MemFree);
  Resolve(c.lib, "cuMemAllocAsync", c.MemAllocAsync);
  Resolve(c.lib, "cuMemFreeAsync", c.MemFreeAsync);
  Resolve(c.lib, "cuMemAllocManaged", c.MemAllocManaged);
}

// Runs `body` in a child process with the library freshly loaded and `scenario` (empty: none) as
// GPUSCOPE_SIM_SCENARIO. The child's failed expectations are printed on its stderr, which the failure
// here shows, and make it exit 1.
void InFreshProcess(const std::string& scenario, const std::function<void(Cuda&)>& body) {
  EXPECT_EXIT(
      {
        if (scenario.empty()) {
          unsetenv("GPUSCOPE_SIM_SCENARIO");
        } else {
          setenv("GPUSCOPE_SIM_SCENARIO", scenario.c_str(), 1);
        }
        ::testing::TestPartResultArray results;
        {
          ::testing::ScopedFakeTestPartResultReporter capture(
              ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
          Cuda cuda;
          Load(cuda);
          if (results.size() == 0) body(cuda);
        }
        bool failed = false;
        for (int i = 0; i < results.size(); ++i) {
          const ::testing::TestPartResult& r = results.GetTestPartResult(i);
          if (!r.failed()) continue;
          failed = true;
          std::fprintf(stderr, "%s:%d: %s\n", r.file_name() == nullptr ? "?" : r.file_name(), r.line_number(),
                       r.message());
        }
        std::_Exit(failed ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A scenario file in the test's temporary directory.
std::string WriteScenario(const std::string& name, const std::string& yaml) {
  const std::string path = ::testing::TempDir() + "/sim_cuda_" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

// Three models, so every ordinal is told apart by its name and memory.
std::string MixedScenario() {
  return WriteScenario("mixed", "gpus:\n  - {model: a100}\n  - {model: h200}\n  - {model: h100}\n");
}

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) result.output += buf;
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The fields of the driver's summary line ("allocations=N frees=N ..."); empty when there is none.
std::map<std::string, std::string> Summary(const std::string& output) {
  static const std::regex kLine(
      R"(allocations=(\d+) frees=(\d+) failures=(\d+) first_failure=(\S+) seconds=([0-9.]+) rate=([0-9.]+)\n)");
  std::smatch m;
  if (!std::regex_search(output, m, kLine)) return {};
  return {{"allocations", m[1]},   {"frees", m[2]},   {"failures", m[3]},
          {"first_failure", m[4]}, {"seconds", m[5]}, {"rate", m[6]}};
}

// --- CUDA_VISIBLE_DEVICES (pure) ---

TEST(SimCudaVisibleDevices, UnsetShowsEveryGpuInScenarioOrder) {
  EXPECT_EQ(VisibleGpus(std::nullopt, {"GPU-a", "GPU-b", "GPU-c"}), (std::vector<unsigned>{0, 1, 2}));
}

TEST(SimCudaVisibleDevices, EmptyShowsNone) { EXPECT_TRUE(VisibleGpus("", {"GPU-a"}).empty()); }

TEST(SimCudaVisibleDevices, IndicesAndUuidsReorder) {
  EXPECT_EQ(VisibleGpus("2, GPU-a", {"GPU-a", "GPU-b", "GPU-c"}), (std::vector<unsigned>{2, 0}));
}

TEST(SimCudaVisibleDevices, ListEndsAtTheFirstInvalidOutOfRangeOrRepeatedEntry) {
  const std::vector<std::string> uuids = {"GPU-a", "GPU-b", "GPU-c"};
  EXPECT_EQ(VisibleGpus("1,x,2", uuids), (std::vector<unsigned>{1}));
  EXPECT_EQ(VisibleGpus("1,3,2", uuids), (std::vector<unsigned>{1}));
  EXPECT_EQ(VisibleGpus("1,1,2", uuids), (std::vector<unsigned>{1}));
  EXPECT_EQ(VisibleGpus("-1", uuids), (std::vector<unsigned>{}));
  EXPECT_EQ(VisibleGpus("GPU-z,0", uuids), (std::vector<unsigned>{}));
}

// --- The library's dynamic symbol table ---

// Exported function symbols of the library and their addresses, read with nm.
std::map<std::string, std::string> ExportedFunctions() {
  const CommandResult nm =
      RunCommand(std::string(GPUSCOPE_NM) + " -D --defined-only " GPUSCOPE_SIM_CUDA_PATH);
  EXPECT_EQ(nm.exit_code, 0) << nm.output;
  std::map<std::string, std::string> symbols;
  static const std::regex kSymbol(R"(^([0-9a-f]+) (\S) (\S+)$)");
  std::istringstream lines(nm.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kSymbol) && m[2] != "A") symbols[m[3]] = m[1];
  }
  return symbols;
}

TEST(SimCuda, ExportsExactlyTheDriverApiEntryPointsItImplements) {
  std::set<std::string> names;
  for (const auto& [name, address] : ExportedFunctions()) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{
                       "cuCtxGetCurrent", "cuCtxGetDevice", "cuCtxSetCurrent", "cuDeviceGet",
                       "cuDeviceGetCount", "cuDeviceGetName", "cuDevicePrimaryCtxRelease_v2",
                       "cuDevicePrimaryCtxRetain", "cuDeviceTotalMem_v2", "cuDriverGetVersion",
                       "cuGetErrorName", "cuGetErrorString", "cuInit", "cuMemAllocAsync", "cuMemAllocManaged",
                       "cuMemAlloc_v2", "cuMemFreeAsync", "cuMemFree_v2", "cuMemGetInfo_v2"}));
}

TEST(SimCuda, EachAllocationEntryPointHasItsOwnAddressForItsUprobe) {
  const auto symbols = ExportedFunctions();
  std::set<std::string> addresses;
  for (const char* name :
       {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocManaged"}) {
    ASSERT_TRUE(symbols.contains(name)) << name;
    EXPECT_TRUE(addresses.insert(symbols.at(name)).second) << name << " shares an address";
  }
  const CommandResult soname = RunCommand("readelf -d " GPUSCOPE_SIM_CUDA_PATH);
  EXPECT_NE(soname.output.find("Library soname: [libcuda.so.1]"), std::string::npos) << soname.output;
}

// --- Entry points ---

TEST(SimCuda, EveryCallBeforeCuInitIsNotInitialisedButVersionAndErrorNamesWork) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    CUdeviceptr p = 0;
    int n = 0;
    size_t free = 0, total = 0;
    char name[64];
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    EXPECT_EQ(c.MemAlloc(&p, 1024), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.MemAllocAsync(&p, 1024, nullptr), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.MemAllocManaged(&p, 1024, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.MemFree(0x7f0000000000ULL), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.MemFreeAsync(0x7f0000000000ULL, nullptr), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.DeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.DeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.DeviceGetName(name, sizeof(name), 0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.DeviceTotalMem(&total, 0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.MemGetInfo(&free, &total), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.PrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(c.CtxGetDevice(&dev), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(p, 0u);
    int version = 0;
    EXPECT_EQ(c.DriverGetVersion(&version), CUDA_SUCCESS);
    EXPECT_EQ(version, 12040);
    const char* s = nullptr;
    EXPECT_EQ(c.GetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_EQ(c.GetErrorString(CUDA_ERROR_NOT_INITIALIZED, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, "initialization error");
    EXPECT_EQ(c.GetErrorName(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(c.GetErrorString(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
  });
}

TEST(SimCuda, CuInitWithoutAScenarioFailsWithNoDeviceAndStaysUninitialised) {
  InFreshProcess("", [](Cuda& c) {
    EXPECT_EQ(c.Init(1), CUDA_ERROR_INVALID_VALUE);  // flags must be 0
    EXPECT_EQ(c.Init(0), CUDA_ERROR_NO_DEVICE);
    EXPECT_EQ(c.Init(0), CUDA_ERROR_NO_DEVICE);  // the first answer stands, as in the real driver
    CUdeviceptr p = 0;
    EXPECT_EQ(c.MemAlloc(&p, 1024), CUDA_ERROR_NOT_INITIALIZED);
  });
}

TEST(SimCuda, DevicesAreTheScenarioGpusWithTheirModelNameAndMemory) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    int n = 0;
    ASSERT_EQ(c.DeviceGetCount(&n), CUDA_SUCCESS);
    EXPECT_EQ(n, 8);
    CUdevice dev = -1;
    ASSERT_EQ(c.DeviceGet(&dev, 7), CUDA_SUCCESS);
    EXPECT_EQ(dev, 7);
    EXPECT_EQ(c.DeviceGet(&dev, 8), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_EQ(c.DeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    ASSERT_EQ(c.DeviceGetName(name, sizeof(name), 3), CUDA_SUCCESS);
    EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
    ASSERT_EQ(c.DeviceGetName(name, 7, 3), CUDA_SUCCESS);  // cut to len - 1, terminated
    EXPECT_STREQ(name, "NVIDIA");
    EXPECT_EQ(c.DeviceGetName(name, sizeof(name), 8), CUDA_ERROR_INVALID_DEVICE);
    size_t total = 0, free = 0;
    ASSERT_EQ(c.DeviceTotalMem(&total, 0), CUDA_SUCCESS);
    EXPECT_EQ(total, kH100Total);
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, kH100Total);
    EXPECT_EQ(free, kH100Free);
  });
}

TEST(SimCuda, CudaVisibleDevicesPicksAndReordersTheScenarioGpus) {
  setenv("CUDA_VISIBLE_DEVICES", "2,0", 1);
  InFreshProcess(MixedScenario(), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    int n = 0;
    ASSERT_EQ(c.DeviceGetCount(&n), CUDA_SUCCESS);
    EXPECT_EQ(n, 2);
    char name[64];
    ASSERT_EQ(c.DeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
    EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
    ASSERT_EQ(c.DeviceGetName(name, sizeof(name), 1), CUDA_SUCCESS);
    EXPECT_STREQ(name, "NVIDIA A100-SXM4-80GB");
  });
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  InFreshProcess(MixedScenario(), [](Cuda& c) { EXPECT_EQ(c.Init(0), CUDA_ERROR_NO_DEVICE); });
  unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(SimCuda, AllocationsAreUniqueAlignedFakeAddressesCountedAgainstFreeMemory) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0, m = 0;
    ASSERT_EQ(c.MemAlloc(&a, 1), CUDA_SUCCESS);
    ASSERT_EQ(c.MemAllocAsync(&b, 1000, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(c.MemAllocManaged(&m, kGiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    for (CUdeviceptr p : {a, b, m}) {
      EXPECT_NE(p, 0u);
      EXPECT_EQ(p % 256, 0u) << std::hex << p;
    }
    EXPECT_EQ(std::set<CUdeviceptr>({a, b, m}).size(), 3u);
    size_t free = 0, total = 0;
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(free, kH100Free - 256 - 1024 - kGiB);  // sizes rounded up to 256 bytes
    EXPECT_EQ(c.MemFree(a), CUDA_SUCCESS);
    EXPECT_EQ(c.MemFreeAsync(b, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(c.MemFree(m), CUDA_SUCCESS);
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(free, kH100Free);
    CUdeviceptr again = 0;
    ASSERT_EQ(c.MemAlloc(&again, 1), CUDA_SUCCESS);
    EXPECT_EQ(std::set<CUdeviceptr>({a, b, m, again}).size(), 4u);  // an address is never handed out twice
  });
}

TEST(SimCuda, AllocationBeyondTheScenarioGpusMemoryIsOutOfMemory) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    CUdeviceptr p = 0, q = 0;
    EXPECT_EQ(c.MemAlloc(&p, 80 * kGiB), CUDA_ERROR_OUT_OF_MEMORY);  // an "80 GB" H100 has 79.6 GiB
    EXPECT_EQ(c.MemAllocAsync(&p, kH100Free + 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(c.MemAllocManaged(&p, SIZE_MAX, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(p, 0u);  // untouched on failure
    ASSERT_EQ(c.MemAlloc(&p, kH100Free - kGiB), CUDA_SUCCESS);
    ASSERT_EQ(c.MemAlloc(&q, kGiB), CUDA_SUCCESS);  // exactly full
    CUdeviceptr r = 0;
    EXPECT_EQ(c.MemAlloc(&r, 1), CUDA_ERROR_OUT_OF_MEMORY);
    size_t free = 1, total = 0;
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(free, 0u);
    ASSERT_EQ(c.MemFree(q), CUDA_SUCCESS);
    EXPECT_EQ(c.MemAlloc(&r, 1), CUDA_SUCCESS);
  });
}

TEST(SimCuda, InvalidValuesAreRejected) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    EXPECT_EQ(c.MemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemAllocAsync(&p, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemAlloc(nullptr, 1024), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemAllocManaged(&p, 1024, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemAllocManaged(&p, 1024, CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST),
              CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemFree(0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemFree(0x1234500), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemFreeAsync(0x1234500, nullptr), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(c.MemAllocManaged(&p, 1024, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
    EXPECT_EQ(c.MemFree(p + 256), CUDA_ERROR_INVALID_VALUE);  // not the start of an allocation
    EXPECT_EQ(c.MemFree(p), CUDA_SUCCESS);
    EXPECT_EQ(c.MemFree(p), CUDA_ERROR_INVALID_VALUE);  // twice
    EXPECT_EQ(c.DeviceGetCount(nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.MemGetInfo(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    char name[8];
    EXPECT_EQ(c.DeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.CtxSetCurrent(reinterpret_cast<CUcontext>(&p)), CUDA_ERROR_INVALID_CONTEXT);
  });
}

TEST(SimCuda, TheCurrentContextPicksTheDevicePerThread) {
  InFreshProcess(MixedScenario(), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    CUdevice dev = -1;
    ASSERT_EQ(c.CtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 0);  // no context yet: device 0
    CUcontext h200 = nullptr;
    ASSERT_EQ(c.PrimaryCtxRetain(&h200, 1), CUDA_SUCCESS);
    ASSERT_EQ(c.CtxSetCurrent(h200), CUDA_SUCCESS);
    CUcontext current = nullptr;
    ASSERT_EQ(c.CtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, h200);
    ASSERT_EQ(c.CtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 1);
    size_t free = 0, total = 0;
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, 143771 * kMiB);
    CUdeviceptr p = 0;
    ASSERT_EQ(c.MemAlloc(&p, 100 * kGiB), CUDA_SUCCESS);  // fits the H200, not an 80 GB GPU
    std::thread other([&] {
      CUdevice d = -1;
      EXPECT_EQ(c.CtxGetDevice(&d), CUDA_SUCCESS);
      EXPECT_EQ(d, 0);
      CUdeviceptr q = 0;
      EXPECT_EQ(c.MemAlloc(&q, 100 * kGiB), CUDA_ERROR_OUT_OF_MEMORY);  // device 0: the A100
    });
    other.join();
    EXPECT_EQ(c.PrimaryCtxRelease(1), CUDA_SUCCESS);
    EXPECT_EQ(c.CtxSetCurrent(nullptr), CUDA_SUCCESS);
    ASSERT_EQ(c.CtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(c.MemFree(p), CUDA_SUCCESS);  // a free finds the allocation's device itself
  });
}

TEST(SimCuda, ConcurrentAllocationsAndFreesStayConsistentAboveTenThousandPerSecond) {
  InFreshProcess(ScenarioPath("h100-training.yaml"), [](Cuda& c) {
    ASSERT_EQ(c.Init(0), CUDA_SUCCESS);
    constexpr int kThreads = 4;
    constexpr int kPairs = 10000;  // per thread
    std::vector<std::set<CUdeviceptr>> seen(kThreads);
    std::vector<int> failures(kThreads, 0);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPairs; ++i) {
          CUdeviceptr p = 0;
          const bool async = i % 2 == 1;
          const CUresult r = async ? c.MemAllocAsync(&p, 4096, nullptr) : c.MemAlloc(&p, 4096);
          if (r != CUDA_SUCCESS) {
            ++failures[t];
            continue;
          }
          seen[t].insert(p);
          if ((async ? c.MemFreeAsync(p, nullptr) : c.MemFree(p)) != CUDA_SUCCESS) ++failures[t];
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::set<CUdeviceptr> all;
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(failures[t], 0);
      all.insert(seen[t].begin(), seen[t].end());
    }
    EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPairs));
    size_t free = 0, total = 0;
    ASSERT_EQ(c.MemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(free, kH100Free);
    // 40,000 allocations and 40,000 frees: well over 10,000 each per second even on a loaded,
    // sanitized build (it takes a few tens of milliseconds unsanitized).
    EXPECT_LT(seconds, 4.0);
  });
}

// --- The workload driver ---

std::string Workload(const std::string& scenario, const std::string& flags) {
  return "GPUSCOPE_SIM_SCENARIO=" + scenario + " " GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " " + flags;
}

TEST(SimCudaWorkload, RunsAtTheRequestedRateAndPrintsOneSummaryLine) {
  const CommandResult r =
      RunCommand(Workload(ScenarioPath("h100-training.yaml"),
                          "--allocs-per-second 2000 --seconds 1 --bytes 1M --live 8 --api mixed"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s = Summary(r.output);
  ASSERT_FALSE(s.empty()) << r.output;
  const long allocations = std::stol(s.at("allocations"));
  EXPECT_GT(allocations, 1000) << r.output;                   // on schedule, with room for a loaded machine
  EXPECT_LE(allocations, 2001) << r.output;                   // never ahead of it
  EXPECT_EQ(s.at("frees"), s.at("allocations")) << r.output;  // the last K are freed at exit
  EXPECT_EQ(s.at("failures"), "0");
  EXPECT_EQ(s.at("first_failure"), "none");
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(SimCudaWorkload, CountsOutOfMemoryFailures) {
  const CommandResult r = RunCommand(
      Workload(ScenarioPath("h100-training.yaml"), "--allocs-per-second 100 --seconds 0.2 --bytes 100G"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s = Summary(r.output);
  ASSERT_FALSE(s.empty()) << r.output;
  EXPECT_EQ(s.at("allocations"), "0");
  EXPECT_GT(std::stol(s.at("failures")), 0);
  EXPECT_EQ(s.at("first_failure"), "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(SimCudaWorkload, FollowModeHoldsTheScenarioGpusMemoryUsed) {
  // Frozen simulated time: the target is one figure, what the NVML simulator reports at t = 300.
  setenv("GPUSCOPE_SIM_SCENARIO", ScenarioPath("h100-training.yaml").c_str(), 1);
  setenv("GPUSCOPE_SIM_TIME", "300", 1);
  auto loaded = gpuscope::sim::Simulator::FromEnvironment();
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<gpuscope::sim::Simulator>>(loaded));
  const double used_gib =
      std::get<std::unique_ptr<gpuscope::sim::Simulator>>(loaded)->StateAt(2, 300).mem_used_gib;
  const CommandResult r =
      RunCommand(GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --follow-scenario --device 2 --bytes 1G --seconds 0.3");
  unsetenv("GPUSCOPE_SIM_TIME");
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s = Summary(r.output);
  ASSERT_FALSE(s.empty()) << r.output;
  EXPECT_GT(used_gib, 58);
  EXPECT_EQ(std::stol(s.at("allocations")), static_cast<long>(used_gib)) << used_gib;  // whole GiB pieces
  EXPECT_EQ(s.at("failures"), "0");
}

TEST(SimCudaWorkload, ALibraryThatCannotBeLoadedIsAnError) {
  const CommandResult r =
      RunCommand(Workload(ScenarioPath("h100-training.yaml"), "--library /nonexistent/libcuda.so.1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("/nonexistent/libcuda.so.1"), std::string::npos) << r.output;
  EXPECT_TRUE(Summary(r.output).empty());
}

TEST(SimCudaWorkload, NoScenarioIsAnError) {
  const CommandResult r =
      RunCommand("env -u GPUSCOPE_SIM_SCENARIO " GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --seconds 0.1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << r.output;
}

TEST(SimCudaWorkload, BadFlagsAreRejected) {
  EXPECT_EQ(RunCommand(GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --bytes 0").exit_code, 2);
  EXPECT_EQ(RunCommand(GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --live 0").exit_code, 2);
  EXPECT_EQ(RunCommand(GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --api bogus").exit_code, 2);
  EXPECT_EQ(RunCommand(GPUSCOPE_SIM_CUDA_WORKLOAD_PATH " --frobnicate 1").exit_code, 2);
}

}  // namespace
