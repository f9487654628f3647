#include "src/platform/nvml/nvml_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuscope
