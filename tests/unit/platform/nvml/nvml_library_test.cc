#include "src/platform/nvml/nvml_library.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<NvmlLibrary> OpenFake() {
  std::shared_ptr<NvmlLibrary> nvml;
  Status status = NvmlLibrary::Open(GPUSCOPE_FAKE_NVML_PATH, &nvml);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return nvml;
}

TEST(NvmlLibraryTest, OpenOfMissingLibraryReturnsUnavailableWithDlerrorText) {
  std::shared_ptr<NvmlLibrary> nvml;
  Status status = NvmlLibrary::Open("/nonexistent/libnvidia-ml.so.1", &nvml);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(status.message(), HasSubstr("No such file"));
  EXPECT_EQ(nvml, nullptr);
}

TEST(NvmlLibraryTest, CallsThroughToExportedFunctions) {
  auto nvml = OpenFake();
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  EXPECT_EQ(nvml->nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(nvml->nvmlDeviceGetHandleByIndex_v2(1, &device), NVML_SUCCESS);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml->nvmlDeviceGetUUID(device, uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_STREQ(uuid, "GPU-fake-0001");
  EXPECT_TRUE(nvml->Has(NvmlFunction::nvmlDeviceGetUUID));
}

TEST(NvmlLibraryTest, MissingSymbolReturnsFunctionNotFoundInsteadOfCrashing) {
  auto nvml = OpenFake();
  ASSERT_NE(nvml, nullptr);
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(nvml->nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_SUCCESS);
  unsigned int mw = 0;
  EXPECT_EQ(nvml->nvmlDeviceGetPowerUsage(device, &mw), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(nvml->nvmlDeviceGetPowerUsage(device, &mw), NVML_ERROR_FUNCTION_NOT_FOUND);  // cached answer
  EXPECT_FALSE(nvml->Has(NvmlFunction::nvmlGpmSampleGet));
}

TEST(NvmlLibraryTest, ClocksEventReasonsFallsBackToThrottleReasonsOnOlderDrivers) {
  auto nvml = OpenFake();
  ASSERT_NE(nvml, nullptr);
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(nvml->nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_SUCCESS);
  unsigned long long reasons = 0;
  EXPECT_EQ(nvml->nvmlDeviceGetCurrentClocksEventReasons(device, &reasons), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(nvml->GetClocksEventReasons(device, &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwThermalSlowdown);
}

TEST(NvmlLibraryTest, ErrorStringComesFromTheLibrary) {
  auto nvml = OpenFake();
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->ErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST(NvmlLibraryTest, FunctionAndReturnNamesMatchNvml) {
  EXPECT_EQ(NvmlFunctionName(NvmlFunction::nvmlInit_v2), "nvmlInit_v2");
  EXPECT_EQ(NvmlFunctionName(NvmlFunction::nvmlGpmMetricsGet), "nvmlGpmMetricsGet");
  EXPECT_EQ(NvmlReturnName(NVML_ERROR_GPU_IS_LOST), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(NvmlReturnName(NVML_ERROR_FUNCTION_NOT_FOUND), "NVML_ERROR_FUNCTION_NOT_FOUND");
}

TEST(NvmlLibraryTest, OpenBoundWithoutTheBindSymbolIsUnavailableAndNamesIt) {
  std::shared_ptr<NvmlLibrary> nvml;
  Status status = NvmlLibrary::OpenBound(GPUSCOPE_FAKE_NVML_PATH, "gpuscopeSimBindThread", nullptr, &nvml);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("does not export gpuscopeSimBindThread"));
  EXPECT_EQ(nvml, nullptr);
}

// The fleet runner's binding, on the real simulator: each bound instance's calls reach its own node
// whichever thread makes them and in whatever order.
TEST(NvmlLibraryTest, EachBoundInstanceCallsOnBehalfOfItsOwnContext) {
  void* sim = dlopen(GPUSCOPE_SIM_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(sim, nullptr) << dlerror();
  using Create = void* (*)(const char*, unsigned long long, double, double, char*, unsigned);
  using Destroy = void (*)(void*);
  auto create = reinterpret_cast<Create>(dlsym(sim, "gpuscopeSimNodeCreate"));
  auto destroy = reinterpret_cast<Destroy>(dlsym(sim, "gpuscopeSimNodeDestroy"));
  ASSERT_NE(create, nullptr);
  ASSERT_NE(destroy, nullptr);
  void* two = create("gpus: {count: 2, model: h100-sxm}\n", 1, 0, 0, nullptr, 0);
  void* five = create("gpus: {count: 5, model: h100-sxm}\n", 2, 0, 0, nullptr, 0);
  ASSERT_NE(two, nullptr);
  ASSERT_NE(five, nullptr);
  {
    std::shared_ptr<NvmlLibrary> a, b;
    ASSERT_TRUE(NvmlLibrary::OpenBound(GPUSCOPE_SIM_NVML_PATH, "gpuscopeSimBindThread", two, &a).ok());
    ASSERT_TRUE(NvmlLibrary::OpenBound(GPUSCOPE_SIM_NVML_PATH, "gpuscopeSimBindThread", five, &b).ok());
    ASSERT_EQ(a->nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(b->nvmlInit_v2(), NVML_SUCCESS);
    auto count = [](const NvmlLibrary& nvml) {
      unsigned n = 0;
      EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
      return n;
    };
    EXPECT_EQ(count(*a), 2u);
    EXPECT_EQ(count(*b), 5u);
    EXPECT_EQ(count(*a), 2u);
    std::thread([&] {
      EXPECT_EQ(count(*b), 5u);
      EXPECT_EQ(count(*a), 2u);
    }).join();
    EXPECT_EQ(a->nvmlShutdown(), NVML_SUCCESS);
    EXPECT_EQ(b->nvmlShutdown(), NVML_SUCCESS);
  }
  destroy(two);
  destroy(five);
  dlclose(sim);
}

}  // namespace
}  // namespace gpuscope
