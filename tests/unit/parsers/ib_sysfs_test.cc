// Tests of the InfiniBand sysfs value parsers (src/parsers/ib_sysfs.h) on the formats the kernel prints
// and on garbage.
#include "src/parsers/ib_sysfs.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

using Kind = IbCounterValue::Kind;

TEST(InfinibandSysfsParser, CounterParsesDecimalWithTrailingNewline) {
  IbCounterValue v = ParseIbCounter("1234567890123\n");
  EXPECT_EQ(v.kind, Kind::kValue);
  EXPECT_EQ(v.value, 1234567890123u);
}

TEST(InfinibandSysfsParser, CounterParsesFullUint64Range) {
  EXPECT_EQ(ParseIbCounter("18446744073709551615\n").value, 18446744073709551615u);
  EXPECT_EQ(ParseIbCounter("18446744073709551616\n").kind, Kind::kMalformed);
}

TEST(InfinibandSysfsParser, CounterNoPmaIsNotAvailableNotZero) {
  EXPECT_EQ(ParseIbCounter("N/A (no PMA)\n").kind, Kind::kNotAvailable);
  EXPECT_EQ(ParseIbCounter("N/A\n").kind, Kind::kNotAvailable);
}

TEST(InfinibandSysfsParser, CounterRejectsGarbage) {
  for (const char* bad : {"", "\n", "-1\n", "12 34\n", "0x10\n", "1e3\n", "+5\n", "12abc"}) {
    EXPECT_EQ(ParseIbCounter(bad).kind, Kind::kMalformed) << bad;
  }
}

TEST(InfinibandSysfsParser, EnumParsesStateAndPhysicalState) {
  auto state = ParseIbEnum("4: ACTIVE\n");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->code, 4);
  EXPECT_EQ(state->name, "ACTIVE");
  auto phys = ParseIbEnum("5: LinkUp\n");
  ASSERT_TRUE(phys);
  EXPECT_EQ(phys->code, 5);
  EXPECT_EQ(phys->name, "LinkUp");
  auto training = ParseIbEnum("4: PortConfigurationTraining\n");
  ASSERT_TRUE(training);
  EXPECT_EQ(training->name, "PortConfigurationTraining");
}

TEST(InfinibandSysfsParser, EnumWithoutNameIsUnknown) {
  EXPECT_EQ(ParseIbEnum("3\n")->name, "unknown");
  EXPECT_EQ(ParseIbEnum("3:\n")->name, "unknown");
}

TEST(InfinibandSysfsParser, EnumRejectsGarbage) {
  for (const char* bad : {"", "ACTIVE", ": ACTIVE", "4 ACTIVE", "256: X", "-1: X", "4: AC\x01TIVE"}) {
    EXPECT_FALSE(ParseIbEnum(bad)) << bad;
  }
}

TEST(InfinibandSysfsParser, RateParsesGbitWidthAndSpeed) {
  auto hdr = ParseIbRate("200 Gb/sec (4X HDR)\n");
  ASSERT_TRUE(hdr);
  EXPECT_EQ(hdr->gbit_per_second, 200);
  EXPECT_EQ(hdr->width_lanes, 4);
  EXPECT_EQ(hdr->speed, "HDR");
  EXPECT_EQ(hdr->BytesPerSecond(), 25e9);
  auto ndr = ParseIbRate("400 Gb/sec (4X NDR)\n");
  ASSERT_TRUE(ndr);
  EXPECT_EQ(ndr->BytesPerSecond(), 50e9);
  auto fdr10 = ParseIbRate("40 Gb/sec (4X FDR10)\n");
  ASSERT_TRUE(fdr10);
  EXPECT_EQ(fdr10->speed, "FDR10");
}

TEST(InfinibandSysfsParser, RateParsesHalfGigabitAndTwelveLanes) {
  auto sdr = ParseIbRate("2.5 Gb/sec (1X SDR)\n");
  ASSERT_TRUE(sdr);
  EXPECT_EQ(sdr->gbit_per_second, 2.5);
  EXPECT_EQ(sdr->width_lanes, 1);
  auto wide = ParseIbRate("300 Gb/sec (12X EDR)\n");
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->width_lanes, 12);
}

TEST(InfinibandSysfsParser, RateWithoutSpeedOrWidthKeepsTheRate) {
  auto no_speed = ParseIbRate("10 Gb/sec (4X)\n");
  ASSERT_TRUE(no_speed);
  EXPECT_EQ(no_speed->width_lanes, 4);
  EXPECT_EQ(no_speed->speed, "");
  auto bare = ParseIbRate("10 Gb/sec\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->width_lanes, 0);
  EXPECT_EQ(bare->BytesPerSecond(), 1.25e9);
}

TEST(InfinibandSysfsParser, RateRejectsGarbage) {
  for (const char* bad : {"", "Gb/sec", "200", "200 Mb/sec (4X HDR)", "2. Gb/sec", "x200 Gb/sec"}) {
    EXPECT_FALSE(ParseIbRate(bad)) << bad;
  }
}

TEST(InfinibandSysfsParser, PciAddressConvertsSysfsNameToNvmlBusId) {
  auto address = ParsePciAddress("0000:3b:00.1");
  ASSERT_TRUE(address);
  EXPECT_EQ(address->NvmlBusId(), "00000000:3B:00.1");
  EXPECT_EQ(address->SysfsName(), "0000:3b:00.1");
  EXPECT_EQ(ParsePciAddress("00000000:3B:00.1"), address);
}

TEST(InfinibandSysfsParser, PciAddressRejectsOtherPathComponents) {
  for (const char* bad : {"pci0000:00", "infiniband", "0000:3b:00", "0000:3b:20.0", "0000:3b:00.8",
                          "000:3b:00.0", "0000:3g:00.0", "0000:3b:00.0.0"}) {
    EXPECT_FALSE(ParsePciAddress(bad)) << bad;
  }
}

TEST(InfinibandSysfsParser, HexAndIntAttributes) {
  EXPECT_EQ(ParseSysfsHex("0x10de\n"), 0x10deu);
  EXPECT_EQ(ParseSysfsHex("0x030200\n"), 0x030200u);
  EXPECT_FALSE(ParseSysfsHex("10de\n"));
  EXPECT_FALSE(ParseSysfsHex("0x\n"));
  EXPECT_EQ(ParseSysfsInt("-1\n"), -1);
  EXPECT_EQ(ParseSysfsInt("3\n"), 3);
  EXPECT_FALSE(ParseSysfsInt("-\n"));
  EXPECT_FALSE(ParseSysfsInt("1a\n"));
}

TEST(InfinibandSysfsParser, CounterNamesAreSanitisedForLabels) {
  EXPECT_EQ(SanitizeIbCounterName("np_ecn_marked_roce_packets"), "np_ecn_marked_roce_packets");
  EXPECT_EQ(SanitizeIbCounterName("ip4InOctets"), "ip4InOctets");
  EXPECT_EQ(SanitizeIbCounterName("rx-vport.rdma bytes"), "rx_vport_rdma_bytes");
  EXPECT_EQ(SanitizeIbCounterName(""), "_");
  EXPECT_EQ(SanitizeIbCounterName(std::string(300, 'a')).size(), 128u);
}

}  // namespace
}  // namespace gpuscope
