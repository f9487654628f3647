// The GPUs of the node as the GPU cycle last published them, looked up by PCI bus id and by UUID.
#include "src/node/gpu_directory.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "tests/unit/node/test_inventory.h"

namespace gpuscope {
namespace {

constexpr const char* kGpuUuid = "GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d";
constexpr const char* kMigUuid = "MIG-265a219d-a49f-578a-825d-222c72699c16";
constexpr const char* kOtherMigUuid = "MIG-0b7e2d1c-5a4f-4e3d-8c2b-1a0f9e8d7c6b";

std::shared_ptr<const GpuInventory> TwoGpus() {
  return testing::OneWholeGpuAndOneInMig(kGpuUuid, {kOtherMigUuid, kMigUuid});
}

TEST(GpuDirectory, FindsGpusByAnySpellingOfTheirBusId) {
  GpuDirectory gpus;
  gpus.Publish(TwoGpus());
  ASSERT_TRUE(gpus.Find("0000:18:00.0").has_value());
  EXPECT_EQ(gpus.Find("0000:18:00.0")->index, "1");
  EXPECT_EQ(gpus.Find("00000000:2a:00.0")->uuid, "GPU-11111111-2222-4333-8444-555555555555");
  EXPECT_EQ(gpus.Current()->devices.size(), 3u) << "the whole inventory, unopened GPUs included";
  EXPECT_FALSE(gpus.Find("00000000:99:00.0").has_value());
}

TEST(GpuDirectory, FindsGpusAndMigDevicesByUuidInEitherCaseAndCountsChanges) {
  GpuDirectory gpus;
  EXPECT_EQ(gpus.Version(), 0u);
  EXPECT_EQ(gpus.GpuKeyOfUuid(kGpuUuid), std::nullopt);
  gpus.Publish(TwoGpus());
  EXPECT_EQ(gpus.Version(), 1u);
  gpus.Publish(TwoGpus());
  EXPECT_EQ(gpus.Version(), 1u) << "the same content again is no change";
  EXPECT_EQ(gpus.GpuKeyOfUuid(kGpuUuid), "1");
  EXPECT_EQ(gpus.GpuKeyOfUuid("GPU-8C6A1B2E-3D4F-4A5B-9C6D-7E8F9A0B1C2D"), "1");
  EXPECT_EQ(gpus.GpuKeyOfUuid(kMigUuid), "2.3");
  EXPECT_EQ(gpus.GpuKeyOfUuid(kOtherMigUuid), "2.3");
  EXPECT_EQ(gpus.GpuKeyOfUuid("GPU-11111111-2222-4333-8444-555555555555"), "2");
  EXPECT_EQ(gpus.GpuKeyOfUuid("GPU-00000000-0000-4000-8000-000000000000"), std::nullopt);
  EXPECT_EQ(gpus.GpuKeyOfUuid(""), std::nullopt);
}

}  // namespace
}  // namespace gpuscope
