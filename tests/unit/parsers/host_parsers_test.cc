// Tests of the host collector's pure parsers: CPU lists, PSI files, PCIe link attributes, PCI addresses,
// and the placement fields of /proc/<pid>/{status,stat}.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/parsers/cpulist.h"
#include "src/parsers/pcie_link.h"
#include "src/parsers/proc_placement.h"
#include "src/parsers/psi.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(HostCpuList, ParsesRangesAndSinglesWithTrailingNewline) {
  auto cpus = ParseCpuList("0-3,8-11,20\n");
  ASSERT_TRUE(cpus);
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8, 9, 10, 11, 20));
}

TEST(HostCpuList, EmptyListIsTheEmptySet) {
  auto cpus = ParseCpuList("\n");
  ASSERT_TRUE(cpus);
  EXPECT_THAT(*cpus, IsEmpty());
}

TEST(HostCpuList, SortsAndMergesOverlappingRanges) {
  auto cpus = ParseCpuList("8-9,0-2,1-3,9");
  ASSERT_TRUE(cpus);
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8, 9));
}

TEST(HostCpuList, AcceptsTheKernelStrideForm) {
  auto cpus = ParseCpuList("0-11:2/4");
  ASSERT_TRUE(cpus);
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 4, 5, 8, 9));
}

TEST(HostCpuList, RejectsMalformedLists) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "0-3:2", "0-3:0/4", "0-3:5/4", "0x1", "1 2",
                          "99999999999", "65536", "0-70000"}) {
    EXPECT_FALSE(ParseCpuList(bad)) << bad;
  }
}

TEST(HostCpuList, FormatsTheKernelSpelling) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 9, 10, 11, 20}), "0-3,8-11,20");
  EXPECT_EQ(FormatCpuList({5}), "5");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(HostCpuList, SetOperationsCompareSortedSets) {
  CpuSet local = {0, 1, 2, 3, 8, 9};
  EXPECT_TRUE(CpuSetsIntersect({3, 4}, local));
  EXPECT_FALSE(CpuSetsIntersect({4, 5, 10}, local));
  EXPECT_TRUE(CpuSetIsSubset({1, 8}, local));
  EXPECT_FALSE(CpuSetIsSubset({1, 4}, local));
  EXPECT_TRUE(CpuSetContains(local, 9));
  EXPECT_FALSE(CpuSetContains(local, 7));
}

TEST(HostPsi, ParsesSomeAndFullLines) {
  auto file = ParsePressureFile(
      "some avg10=12.50 avg60=5.00 avg300=1.00 total=98765432\n"
      "full avg10=6.25 avg60=2.50 avg300=0.50 total=45678901\n");
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->some);
  ASSERT_TRUE(file->full);
  EXPECT_DOUBLE_EQ(file->some->avg10, 12.5);
  EXPECT_DOUBLE_EQ(file->some->avg60, 5.0);
  EXPECT_DOUBLE_EQ(file->some->avg300, 1.0);
  EXPECT_EQ(file->some->total_us, 98765432u);
  EXPECT_DOUBLE_EQ(file->full->avg10, 6.25);
  EXPECT_EQ(file->full->total_us, 45678901u);
}

TEST(HostPsi, CpuFileOfOldKernelsHasOnlySome) {
  auto file = ParsePressureFile("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(file);
  EXPECT_TRUE(file->some);
  EXPECT_FALSE(file->full);
}

TEST(HostPsi, IgnoresUnknownFieldsAndLines) {
  auto file = ParsePressureFile("some avg10=1.00 avg60=2.00 avg300=3.00 total=4 avg1=9\nfuture line\n");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->some->total_us, 4u);
}

TEST(HostPsi, RejectsMissingFieldsAndBadNumbers) {
  for (const char* bad :
       {"", "\n", "some avg10=1.00 avg60=2.00 total=4\n", "some avg10=x avg60=0 avg300=0 total=0\n",
        "some avg10=101 avg60=0 avg300=0 total=0\n", "some avg10=nan avg60=0 avg300=0 total=0\n",
        "some avg10=-1 avg60=0 avg300=0 total=0\n", "some avg10=0 avg60=0 avg300=0 total=-5\n",
        "some avg10 avg60=0 avg300=0 total=0\n"}) {
    EXPECT_FALSE(ParsePressureFile(bad)) << bad;
  }
}

TEST(HostPcieLink, ParsesSpeedsOfNewAndOldKernels) {
  EXPECT_EQ(ParsePcieLinkSpeed("16.0 GT/s PCIe\n"), 16.0);
  EXPECT_EQ(ParsePcieLinkSpeed("2.5 GT/s PCIe\n"), 2.5);
  EXPECT_EQ(ParsePcieLinkSpeed("8 GT/s\n"), 8.0);
  EXPECT_EQ(ParsePcieLinkSpeed("5.0 GT/s"), 5.0);
}

TEST(HostPcieLink, UnknownAndPciXSpeedsAreAbsent) {
  for (const char* bad : {"Unknown\n", "Unknown speed\n", "133 MHz PCI-X\n", "", "GT/s PCIe", "x GT/s PCIe",
                          "-8 GT/s", "0 GT/s PCIe", "inf GT/s"}) {
    EXPECT_FALSE(ParsePcieLinkSpeed(bad)) << bad;
  }
}

TEST(HostPcieLink, MapsRatesToGenerations) {
  EXPECT_EQ(PcieGenerationOfSpeed(2.5), 1);
  EXPECT_EQ(PcieGenerationOfSpeed(5.0), 2);
  EXPECT_EQ(PcieGenerationOfSpeed(8.0), 3);
  EXPECT_EQ(PcieGenerationOfSpeed(16.0), 4);
  EXPECT_EQ(PcieGenerationOfSpeed(32.0), 5);
  EXPECT_EQ(PcieGenerationOfSpeed(64.0), 6);
  EXPECT_FALSE(PcieGenerationOfSpeed(20.0));
}

TEST(HostPcieLink, ParsesWidths) {
  EXPECT_EQ(ParsePcieLinkWidth("16\n"), 16u);
  EXPECT_EQ(ParsePcieLinkWidth("0\n"), 0u);
  EXPECT_FALSE(ParsePcieLinkWidth("x16"));
  EXPECT_FALSE(ParsePcieLinkWidth("64"));
  EXPECT_FALSE(ParsePcieLinkWidth(""));
}

TEST(HostPcieLink, ParsesSysfsHex) {
  EXPECT_EQ(ParseSysfsHex("0x10de\n"), 0x10deu);
  EXPECT_EQ(ParseSysfsHex("0x030200\n"), 0x030200u);
  EXPECT_FALSE(ParseSysfsHex("10de"));
  EXPECT_FALSE(ParseSysfsHex("0x"));
  EXPECT_FALSE(ParseSysfsHex("0x1g"));
  EXPECT_FALSE(ParseSysfsHex("0x123456789"));
}

TEST(HostPcieLink, CanonicalBusIdIsNvmlSpelling) {
  EXPECT_EQ(CanonicalPciBusId("0000:3b:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(CanonicalPciBusId("00000000:3B:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(CanonicalPciBusId("0001:af:1f.7"), "00000001:AF:1F.7");
  // Intel VMD puts devices in domains above 0xffff; sysfs then prints five digits.
  EXPECT_EQ(CanonicalPciBusId("10000:01:00.0"), "00010000:01:00.0");
  for (const char* bad : {"pci0000:00", "0000:3b:00", "0000:3b:00.8", "000:3b:00.0", "0000:3g:00.0", ""}) {
    EXPECT_FALSE(CanonicalPciBusId(bad)) << bad;
  }
}

TEST(HostProcPlacement, ReadsCpusAllowedList) {
  auto cpus =
      ParseProcStatusCpusAllowed("Name:\tpython3\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8\nMems:\t0\n");
  ASSERT_TRUE(cpus);
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8));
  EXPECT_FALSE(ParseProcStatusCpusAllowed("Name:\tpython3\n"));
  EXPECT_FALSE(ParseProcStatusCpusAllowed("Cpus_allowed_list:\t\n"));
  EXPECT_FALSE(ParseProcStatusCpusAllowed("Cpus_allowed_list:\tzz\n"));
}

TEST(HostProcPlacement, ReadsLastCpuPastACommandWithSpacesAndParens) {
  std::string stat = "42 (a) b) (c) S";
  for (int field = 4; field <= 52; ++field) stat += " " + std::to_string(field == 39 ? 7 : field * 100);
  stat += "\n";
  EXPECT_EQ(ParseProcStatLastCpu(stat), 7u);
}

TEST(HostProcPlacement, ShortOrMalformedStatHasNoLastCpu) {
  EXPECT_FALSE(ParseProcStatLastCpu("42 (a) S 1 2 3\n"));
  EXPECT_FALSE(ParseProcStatLastCpu("no parenthesis"));
  std::string stat = "42 (a) S";
  for (int field = 4; field <= 52; ++field) stat += field == 39 ? std::string(" x") : " 1";
  EXPECT_FALSE(ParseProcStatLastCpu(stat));
}

}  // namespace
}  // namespace gpuscope
