#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "src/collectors/gpu/clock_reasons.h"
#include "src/collectors/gpu/compat.h"
#include "src/collectors/gpu/field_table.h"
#include "src/collectors/gpu/labels.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;

TEST(GpuCompatTest, HostnameLabelFollowsDcgmExporterRelease) {
  EXPECT_EQ(HostnameLabelName(DcgmCompat::kDcgm3), "Hostname");
  EXPECT_EQ(HostnameLabelName(DcgmCompat::kDcgm49), "hostname");
}

TEST(GpuCompatTest, ViolationIsMicrosecondsFor3AndNanosecondsFor49) {
  EXPECT_EQ(ViolationValue(DcgmCompat::kDcgm3, 5'000'999), 5000);
  EXPECT_EQ(ViolationValue(DcgmCompat::kDcgm49, 5'000'999), 5'000'999);
}

TEST(GpuCompatTest, ParsesCompatFlagValues) {
  DcgmCompat c = DcgmCompat::kDcgm3;
  EXPECT_TRUE(ParseDcgmCompat("4.9", &c));
  EXPECT_EQ(c, DcgmCompat::kDcgm49);
  EXPECT_TRUE(ParseDcgmCompat("dcgm3", &c));
  EXPECT_EQ(c, DcgmCompat::kDcgm3);
  EXPECT_FALSE(ParseDcgmCompat("5", &c));
}

TEST(GpuCompatTest, UnitConversions) {
  EXPECT_DOUBLE_EQ(MilliwattsToWatts(312'456), 312.456);
  EXPECT_DOUBLE_EQ(BytesToWholeMiB((3ULL << 20) + 12345), 3);
  EXPECT_DOUBLE_EQ(KiBToBytes(3), 3072);
  EXPECT_DOUBLE_EQ(PcieKBpsToBytesPerSecond(2), 2048);
  EXPECT_DOUBLE_EQ(MiBpsToBytesPerSecond(1.5), 1572864);
  EXPECT_DOUBLE_EQ(PercentToRatio(42), 0.42);
  EXPECT_DOUBLE_EQ(NanosecondsToSeconds(2'500'000'000ULL), 2.5);
}

TEST(GpuClockReasonsTest, DecodesEachBitOfTheMask) {
  uint64_t mask = nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwThermalSlowdown;
  EXPECT_TRUE(ClockEventActive(mask, "sw_power_cap"));
  EXPECT_TRUE(ClockEventActive(mask, "hw_thermal_slowdown"));
  EXPECT_FALSE(ClockEventActive(mask, "gpu_idle"));
  EXPECT_FALSE(ClockEventActive(mask, "no_such_reason"));
  std::set<uint64_t> bits;
  for (const ClockEventReason& r : ClockEventReasons()) bits.insert(r.bit);
  EXPECT_EQ(bits.size(), ClockEventReasons().size()) << "each reason has its own bit";
}

TEST(GpuClockReasonsTest, ViolationPoliciesAreDcgmsSix) {
  ASSERT_EQ(ViolationPolicies().size(), 6u);
  EXPECT_EQ(ViolationPolicies()[0].dcgm_name, "DCGM_FI_DEV_POWER_VIOLATION");
  EXPECT_EQ(ViolationPolicies()[5].dcgm_name, "DCGM_FI_DEV_RELIABILITY_VIOLATION");
}

GpuIdentity Identity() {
  GpuIdentity id;
  id.index = 3;
  id.uuid = "GPU-abc";
  id.pci_bus_id = "00000000:18:00.0";
  id.minor = 5;
  id.model_name = "NVIDIA H100 80GB HBM3";
  id.driver_version = "550.54.15";
  return id;
}

TEST(GpuLabelsTest, CommonLabelsAreInDcgmExporterOrder) {
  Labels labels = BuildGpuLabels(Identity(), HostLabel{"Hostname", "node1"}, nullptr, false);
  EXPECT_THAT(labels,
              ElementsAre(std::pair<std::string, std::string>{"gpu", "3"},
                          std::pair<std::string, std::string>{"UUID", "GPU-abc"},
                          std::pair<std::string, std::string>{"pci_bus_id", "00000000:18:00.0"},
                          std::pair<std::string, std::string>{"device", "nvidia5"},
                          std::pair<std::string, std::string>{"modelName", "NVIDIA H100 80GB HBM3"},
                          std::pair<std::string, std::string>{"Hostname", "node1"},
                          std::pair<std::string, std::string>{"DCGM_FI_DRIVER_VERSION", "550.54.15"}));
}

TEST(GpuLabelsTest, MigLabelsSitBetweenModelNameAndHostname) {
  MigInstanceLabels mig{"1g.10gb", 7};
  Labels labels = BuildGpuLabels(Identity(), HostLabel{"hostname", "node1"}, &mig, true);
  ASSERT_EQ(labels.size(), 9u);
  EXPECT_EQ(labels[5], (std::pair<std::string, std::string>{"GPU_I_PROFILE", "1g.10gb"}));
  EXPECT_EQ(labels[6], (std::pair<std::string, std::string>{"GPU_I_ID", "7"}));
  EXPECT_EQ(labels[7].first, "hostname");
  Labels slots = BuildGpuLabels(Identity(), HostLabel{"hostname", "node1"}, nullptr, true);
  ASSERT_EQ(slots.size(), 9u);
  EXPECT_EQ(slots[5], (std::pair<std::string, std::string>{"GPU_I_PROFILE", ""}));
}

TEST(GpuLabelsTest, PlaceholderHasTheCommonNamesWithOnlyIndexHostAndDriverSet) {
  Labels placeholder = PlaceholderGpuLabels(3, HostLabel{"Hostname", "node1"}, "550.90.07");
  Labels real = BuildGpuLabels(Identity(), HostLabel{"Hostname", "node1"}, nullptr, false);
  ASSERT_EQ(placeholder.size(), real.size());
  for (size_t i = 0; i < real.size(); ++i) EXPECT_EQ(placeholder[i].first, real[i].first);
  EXPECT_EQ(placeholder, (Labels{{"gpu", "3"},
                                 {"UUID", ""},
                                 {"pci_bus_id", ""},
                                 {"device", ""},
                                 {"modelName", ""},
                                 {"Hostname", "node1"},
                                 {"DCGM_FI_DRIVER_VERSION", "550.90.07"}}));
}

TEST(GpuLabelsTest, MigProfileComesFromTheMigDeviceName) {
  EXPECT_EQ(MigProfileFromDeviceName("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), "1g.5gb");
  EXPECT_EQ(MigProfileFromDeviceName("NVIDIA H100 80GB HBM3 MIG 3g.40gb"), "3g.40gb");
  EXPECT_EQ(MigProfileFromDeviceName("NVIDIA A100-SXM4-40GB"), "");
}

TEST(GpuFieldTableTest, EveryFamilyHasAValidUniqueNameHelpAndSource) {
  for (DcgmCompat compat : {DcgmCompat::kDcgm3, DcgmCompat::kDcgm49}) {
    std::set<std::string> names;
    for (const GpuFamilySpec& spec : FamilySpecs(compat)) {
      const MetricDescription& d = spec.description;
      EXPECT_TRUE(IsValidMetricName(d.name)) << d.name;
      EXPECT_FALSE(d.help.empty()) << d.name;
      EXPECT_FALSE(d.source.empty()) << d.name;
      EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
      for (const std::string& label : d.labels) EXPECT_TRUE(IsValidLabelName(label)) << d.name;
      if (d.type == MetricType::kCounter && d.name.starts_with("gpuscope_")) {
        EXPECT_TRUE(d.name.ends_with("_total")) << d.name;
      }
    }
    EXPECT_EQ(names.size(), kGpuFamilyCount);
  }
}

TEST(GpuFieldTableTest, FbReservedHelpAndViolationHelpFollowTheCompatMode) {
  EXPECT_EQ(Spec(FamilySpecs(DcgmCompat::kDcgm3), GpuFamily::kFbReserved).description.help,
            "Frame buffer memory reserved (in MB).");
  EXPECT_EQ(Spec(FamilySpecs(DcgmCompat::kDcgm49), GpuFamily::kFbReserved).description.help,
            "Framebuffer memory reserved (in MiB).");
  EXPECT_EQ(Spec(FamilySpecs(DcgmCompat::kDcgm3), GpuFamily::kPowerViolation).description.help,
            "Throttling duration due to power constraints (in us).");
  EXPECT_EQ(Spec(FamilySpecs(DcgmCompat::kDcgm49), GpuFamily::kPowerViolation).description.help,
            "Throttling duration due to power constraints (in ns).");
}

TEST(GpuFieldTableTest, DcgmDefaultCountersHaveDcgmExporterTypes) {
  const auto& specs = FamilySpecs(DcgmCompat::kDcgm49);
  EXPECT_EQ(Spec(specs, GpuFamily::kTotalEnergyConsumption).description.type, MetricType::kCounter);
  EXPECT_EQ(Spec(specs, GpuFamily::kPcieReplayCounter).description.type, MetricType::kCounter);
  EXPECT_EQ(Spec(specs, GpuFamily::kNvlinkBandwidthTotal).description.type, MetricType::kCounter);
  EXPECT_EQ(Spec(specs, GpuFamily::kXidErrors).description.type, MetricType::kGauge);
  EXPECT_EQ(Spec(specs, GpuFamily::kRowRemapFailure).description.type, MetricType::kGauge);
  EXPECT_EQ(Spec(specs, GpuFamily::kProfPcieTxBytes).description.type, MetricType::kGauge);
  EXPECT_EQ(Spec(specs, GpuFamily::kSmClock).description.help, "SM clock frequency (in MHz).");
}

}  // namespace
}  // namespace gpuscope
