#include "src/cli/inventory_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr double kStep = 60;

// A series with `labels` and value `value` every step from `from` to `to` (inclusive).
PromSeries Series(std::map<std::string, std::string> labels, double from, double to, double value = 1) {
  PromSeries s;
  s.labels = std::move(labels);
  for (double t = from; t <= to; t += kStep) s.points.push_back({t, value});
  return s;
}

// A counter series from explicit (time, value) points.
PromSeries Points(std::map<std::string, std::string> labels, std::vector<std::pair<double, double>> points) {
  PromSeries s;
  s.labels = std::move(labels);
  s.points = std::move(points);
  return s;
}

std::map<std::string, std::string> Card(const std::string& uuid, const std::string& node,
                                        const std::string& gpu, const std::string& serial = "") {
  std::map<std::string, std::string> labels = {
      {"UUID", uuid}, {"Hostname", node}, {"gpu", gpu}, {"modelName", "NVIDIA H100 80GB HBM3"}};
  if (!serial.empty()) labels["serial"] = serial;
  labels["pci_bus_id"] = "00000000:1" + gpu + ":00.0";
  return labels;
}

InventoryOptions Range(double end, double max_gap = 3600) {
  InventoryOptions o;
  o.start = 0;
  o.end = end;
  o.step = kStep;
  o.max_gap_seconds = max_gap;
  return o;
}

std::vector<std::string> Details(const InventoryReport& report) {
  std::vector<std::string> out;
  for (const InventoryEvent& e : report.events)
    out.push_back(InventoryEventKindName(e.kind) + " " + e.detail);
  return out;
}

TEST(InventoryHistory, LabelChurnOfOneCardInOneSlotIsOnePlacement) {
  InventoryInput input;
  // A job change (hpc_job), an agent upgrade that added serial, and dcgm-compat's lowercase hostname.
  auto first = Card("GPU-a", "n1", "0");
  first["hpc_job"] = "100";
  auto second = Card("GPU-a", "n1", "0", "S-A");
  second["hpc_job"] = "101";
  auto third = Card("GPU-a", "", "0", "S-A");
  third.erase("Hostname");
  third["hostname"] = "n1";
  input.gpu_info = {Series(first, 0, 1200), Series(second, 1260, 2400), Series(third, 2460, 3600)};
  InventoryReport report = AnalyzeInventory(input, Range(3600));
  ASSERT_EQ(report.placements.size(), 1u);
  const Placement& p = report.placements[0];
  EXPECT_EQ(p.uuid, "GPU-a");
  EXPECT_EQ(p.serial, "S-A");
  EXPECT_EQ(p.node, "n1");
  EXPECT_EQ(p.first_seen, 0);
  EXPECT_EQ(p.last_seen, 3600);
  EXPECT_TRUE(p.present);
  EXPECT_THAT(report.events, IsEmpty());
}

TEST(InventoryHistory, AbsenceUpToMaxGapKeepsThePlacementLongerSplitsItWithoutAnEvent) {
  InventoryInput input;
  // A node down for 20 minutes, then for 2 hours; max_gap is one hour.
  input.gpu_info = {Series(Card("GPU-a", "n1", "0"), 0, 1200), Series(Card("GPU-a", "n1", "0"), 2400, 3600),
                    Series(Card("GPU-a", "n1", "0"), 10800, 12000)};
  InventoryReport report = AnalyzeInventory(input, Range(14400));
  ASSERT_EQ(report.placements.size(), 2u);
  EXPECT_EQ(report.placements[0].first_seen, 0);
  EXPECT_EQ(report.placements[0].last_seen, 3600);
  EXPECT_EQ(report.placements[1].first_seen, 10800);
  EXPECT_EQ(report.placements[1].last_seen, 12000);
  EXPECT_FALSE(report.placements[1].present);  // gone 40 minutes before the range's end
  EXPECT_THAT(report.events, IsEmpty());       // back in its own slot: no move, no replacement
}

TEST(InventoryHistory, AnotherCardInTheSlotIsAReplacementAtItsFirstSample) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-aaa", "gpu-node-03", "2", "S1"), 0, 1020),
                    Series(Card("GPU-bbb", "gpu-node-03", "2", "S2"), 1800, 3600),
                    Series(Card("GPU-ccc", "gpu-node-03", "1", "S3"), 0, 3600)};
  InventoryReport report = AnalyzeInventory(input, Range(3600));
  EXPECT_THAT(Details(report), ElementsAre("replaced slot gpu-node-03/2: GPU-aaa replaced by GPU-bbb"));
  EXPECT_EQ(report.events[0].time, 1800);
  EXPECT_EQ(report.events[0].uuid, "GPU-bbb");
  EXPECT_EQ(report.events[0].other_uuid, "GPU-aaa");
  ASSERT_EQ(report.placements.size(), 3u);  // by serial
  EXPECT_EQ(report.placements[0].uuid, "GPU-aaa");
  EXPECT_FALSE(report.placements[0].present);
  EXPECT_TRUE(report.placements[1].present);
}

TEST(InventoryHistory, ACardPutBackAfterAnotherSatInItsSlotIsTwoPlacementsEvenWithinMaxGap) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-a", "n1", "0"), 0, 600), Series(Card("GPU-b", "n1", "0"), 720, 900),
                    Series(Card("GPU-a", "n1", "0"), 1020, 1800)};
  InventoryReport report = AnalyzeInventory(input, Range(1800));
  EXPECT_EQ(report.placements.size(), 3u);
  EXPECT_THAT(Details(report), ElementsAre("replaced slot n1/0: GPU-a replaced by GPU-b",
                                           "replaced slot n1/0: GPU-b replaced by GPU-a"));
}

TEST(InventoryHistory, ACardInAnotherSlotIsAMoveAndReplacesWhatWasThere) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-m", "n2", "1", "SM"), 0, 1200),
                    Series(Card("GPU-m", "n3", "1", "SM"), 4800, 7200),
                    Series(Card("GPU-c", "n3", "1"), 0, 3600)};
  InventoryReport report = AnalyzeInventory(input, Range(7200));
  EXPECT_THAT(Details(report), ElementsAre("replaced slot n3/1: GPU-c replaced by GPU-m",
                                           "moved GPU-m (serial SM) moved from n2/1 to n3/1"));
  EXPECT_EQ(report.events[1].from_node, "n2");
  EXPECT_EQ(report.events[1].time, 4800);
  EXPECT_THAT(report.candidates, IsEmpty());
}

TEST(InventoryHistory, OneDoubleBitErrorIsNoCandidateTheSecondIsAndResetsCountAsIncreases) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-one", "n1", "0"), 0, 3600), Series(Card("GPU-two", "n1", "1"), 0, 3600)};
  // GPU-one: a baseline of 5 before the range (not counted), then one error. GPU-two: one error, a
  // driver reload (counter back to 0), one more.
  input.dbe = {
      Points(Card("GPU-one", "n1", "0"), {{0, 5}, {60, 5}, {600, 6}, {3600, 6}}),
      Points(Card("GPU-two", "n1", "1"), {{0, 0}, {300, 1}, {360, 1}, {600, 0}, {900, 1}, {3600, 1}})};
  InventoryReport report = AnalyzeInventory(input, Range(3600));
  ASSERT_EQ(report.candidates.size(), 1u);
  const RmaCandidate& c = report.candidates[0];
  EXPECT_EQ(c.uuid, "GPU-two");
  EXPECT_EQ(c.flagged_at, 900);
  EXPECT_EQ(c.errors.dbe, 2);
  EXPECT_THAT(c.reasons, ElementsAre("2 double-bit ECC errors"));
  EXPECT_FALSE(c.returned);
  EXPECT_THAT(Details(report),
              ElementsAre("rma-candidate GPU-two in n1/1 is an RMA candidate: 2 double-bit ECC errors"));
}

TEST(InventoryHistory, DbeThresholdIsAnOption) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-one", "n1", "0"), 0, 3600)};
  input.dbe = {Points(Card("GPU-one", "n1", "0"), {{0, 0}, {600, 1}, {3600, 1}})};
  InventoryOptions options = Range(3600);
  options.dbe_threshold = 1;
  InventoryReport report = AnalyzeInventory(input, options);
  ASSERT_EQ(report.candidates.size(), 1u);
  EXPECT_THAT(report.candidates[0].reasons, ElementsAre("1 double-bit ECC error"));
}

TEST(InventoryHistory, RowRemapFailureAndXid79BornInsideTheRangeAreCandidates) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-r", "n1", "0", "SR"), 0, 3600),
                    Series(Card("GPU-x", "n1", "1", "SX"), 0, 1500)};
  // Only the failing steps come back (the query keeps > 0); a failure present at the range's start counts.
  input.remap_failure = {Series(Card("GPU-r", "n1", "0"), 1200, 3600)};
  // The XID 79 counter is born at its first event, with value 1, after the GPU left NVML (no UUID, no
  // gpu index: the kernel-log reader knows only the PCI bus id).
  input.xid79 = {Points({{"Hostname", "n1"}, {"pci_bus_id", "00000000:11:00.0"}, {"xid", "79"}, {"gpu", ""}},
                        {{1560, 1}, {1620, 1}, {3600, 1}})};
  InventoryReport report = AnalyzeInventory(input, Range(3600));
  ASSERT_EQ(report.candidates.size(), 2u);
  EXPECT_EQ(report.candidates[0].uuid, "GPU-r");
  EXPECT_EQ(report.candidates[0].flagged_at, 1200);
  EXPECT_THAT(report.candidates[0].reasons, ElementsAre("row-remap failure"));
  EXPECT_EQ(report.candidates[0].errors.remap_failures, 1);
  EXPECT_EQ(report.candidates[1].uuid, "GPU-x");
  EXPECT_EQ(report.candidates[1].flagged_at, 1560);
  EXPECT_EQ(report.candidates[1].errors.xid79, 1);
  EXPECT_THAT(report.candidates[1].reasons, ElementsAre("XID 79 (fallen off the bus)"));
  EXPECT_EQ(report.candidates[1].node, "n1");
  EXPECT_EQ(report.candidates[1].gpu, "1");
}

TEST(InventoryHistory, CounterAlreadyThereAtTheStartIsABaselineNotAnError) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-x", "n1", "1"), 0, 3600)};
  input.xid79 = {Points(Card("GPU-x", "n1", "1"), {{0, 3}, {3600, 3}})};
  EXPECT_THAT(AnalyzeInventory(input, Range(3600)).candidates, IsEmpty());
}

TEST(InventoryHistory, CandidateThatComesBackElsewhereIsFlaggedWithItsErrorsSinceReturn) {
  InventoryInput input;
  const double day = 86400;
  input.gpu_info = {
      Series(Card("GPU-bad", "n2", "0", "S-BAD"), 0, 0.5 * day),
      Series(Card("GPU-new", "n2", "0", "S-NEW"), 0.75 * day, 3 * day),
      Series(Card("GPU-bad", "n4", "0", "S-BAD"), 2 * day, 3 * day),
  };
  input.dbe = {Points(Card("GPU-bad", "n2", "0"), {{0, 0}, {3600, 1}, {7200, 3}, {0.5 * day, 3}}),
               // After the repair its volatile counter starts again at 0: one error since.
               Points(Card("GPU-bad", "n4", "0"), {{2 * day, 0}, {2.5 * day, 1}, {3 * day, 1}})};
  input.xid79 = {Points(Card("GPU-bad", "n2", "0"), {{0.4 * day, 1}, {0.5 * day, 1}})};
  InventoryOptions options = Range(3 * day);
  InventoryReport report = AnalyzeInventory(input, options);
  ASSERT_EQ(report.candidates.size(), 1u);
  const RmaCandidate& c = report.candidates[0];
  EXPECT_EQ(c.flagged_at, 7200);
  EXPECT_EQ(c.node, "n2");
  EXPECT_THAT(c.reasons, ElementsAre("3 double-bit ECC errors", "XID 79 (fallen off the bus)"));
  EXPECT_TRUE(c.returned);
  EXPECT_EQ(c.returned_at, 2 * day);
  EXPECT_EQ(c.returned_node, "n4");
  EXPECT_EQ(c.errors.dbe, 4);
  EXPECT_EQ(c.since_return.dbe, 1);
  EXPECT_EQ(c.since_return.xid79, 0);
  EXPECT_THAT(
      Details(report),
      ElementsAre("rma-candidate GPU-bad (serial S-BAD) in n2/0 is an RMA candidate: 3 double-bit ECC "
                  "errors, XID 79 (fallen off the bus)",
                  "replaced slot n2/0: GPU-bad replaced by GPU-new",
                  "returned RMA candidate GPU-bad (serial S-BAD) (left n2/0) is back in n4/0; since then: "
                  "1 double-bit ECC error"));
  // The placements table says which stay was the bad one and which came after the return.
  Table table = PlacementsTable(report);
  std::vector<std::string> rma;
  for (const auto& row : table.rows) rma.push_back(row[1] + " " + row[3] + " " + row[8]);
  EXPECT_THAT(rma, ElementsAre("GPU-bad n2 candidate", "GPU-bad n4 returned", "GPU-new n2 "));
}

TEST(InventoryHistory, NodeFilterKeepsAMovedCardsWholeHistoryAndRmaOnlyKeepsCandidates) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-m", "n2", "1"), 0, 1200), Series(Card("GPU-m", "n3", "1"), 4800, 7200),
                    Series(Card("GPU-c", "n3", "0"), 0, 7200), Series(Card("GPU-d", "n2", "0"), 0, 7200)};
  input.remap_failure = {Series(Card("GPU-c", "n3", "0"), 600, 7200)};
  InventoryReport report = AnalyzeInventory(input, Range(7200));
  InventoryReport n2 = report;
  ASSERT_TRUE(FilterInventory("n2", false, &n2).ok());
  std::vector<std::string> where;
  for (const Placement& p : n2.placements) where.push_back(p.uuid + "@" + p.node);
  EXPECT_THAT(where, ElementsAre("GPU-d@n2", "GPU-m@n2", "GPU-m@n3"));
  EXPECT_THAT(Details(n2), ElementsAre("moved GPU-m moved from n2/1 to n3/1"));
  EXPECT_THAT(n2.candidates, IsEmpty());

  InventoryReport rma = report;
  ASSERT_TRUE(FilterInventory("", true, &rma).ok());
  ASSERT_EQ(rma.placements.size(), 1u);
  EXPECT_EQ(rma.placements[0].uuid, "GPU-c");
  ASSERT_EQ(rma.candidates.size(), 1u);

  InventoryReport nothing = report;
  ASSERT_TRUE(FilterInventory("n", false, &nothing).ok());  // the whole name must match
  EXPECT_THAT(nothing.placements, IsEmpty());

  Status bad = FilterInventory("n[", false, &report);
  EXPECT_EQ(bad.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(report.placements.size(), 4u);  // a bad filter changes nothing
}

TEST(InventoryHistory, RmaTableLeavesReturnColumnsEmptyForACardStillInPlace) {
  InventoryInput input;
  input.gpu_info = {Series(Card("GPU-r", "n1", "0", "SR"), 0, 3600)};
  input.remap_failure = {Series(Card("GPU-r", "n1", "0"), 1200, 3600)};
  Table table = RmaTable(AnalyzeInventory(input, Range(3600)));
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_THAT(table.rows[0],
              ElementsAre("SR", "GPU-r", "NVIDIA H100 80GB HBM3", "n1", "0", "1970-01-01T00:20:00Z",
                          "row-remap failure", "0", "1", "0", "", "", "", "", ""));
}

}  // namespace
}  // namespace gpuscope
