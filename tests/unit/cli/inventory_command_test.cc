#include "src/cli/inventory_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(InventoryCommand, AutomaticStepBoundsThePointsInWholeMinutes) {
  EXPECT_EQ(InventoryStep(0, 30 * 86400, 0, 1000), 2640);  // 2592 s rounded up to 44 minutes
  EXPECT_EQ(InventoryStep(0, 600, 0, 1000), 60);           // never under a minute
  EXPECT_EQ(InventoryStep(0, 30 * 86400, 15, 1000), 15);   // asked for
}

InventoryReport SmallReport() {
  InventoryReport report;
  report.start = 0;
  report.end = 3600;
  report.step = 60;
  report.placements.push_back({"GPU-a", "S,1", "H100", "n1", "0", "00000000:10:00.0", 0, 3600, true});
  report.events.push_back(
      {InventoryEventKind::kMoved, 600, "n1", "0", "GPU-a", "S,1", "", "n2", "0", "moved"});
  return report;
}

TEST(InventoryCommand, CsvOfOneSectionIsPlainCsvAndOfAllHasNamedSections) {
  const std::string gpus = RenderInventory(SmallReport(), TableFormat::kCsv, "gpus");
  EXPECT_EQ(gpus,
            "serial,uuid,model,node,gpu,first_seen,last_seen,status,rma\r\n"
            "\"S,1\",GPU-a,H100,n1,0,1970-01-01T00:00:00Z,1970-01-01T01:00:00Z,present,\r\n");
  const std::string all = RenderInventory(SmallReport(), TableFormat::kCsv, "all");
  EXPECT_THAT(all, StartsWith("# gpus\n" + gpus + "\n# events\ntime,event,"));
  EXPECT_THAT(all, HasSubstr("\n# rma\nserial,uuid,"));
}

TEST(InventoryCommand, JsonHasTheRangeAndOneArrayPerSection) {
  nlohmann::json doc = nlohmann::json::parse(RenderInventory(SmallReport(), TableFormat::kJson, "all"));
  EXPECT_EQ(doc["from"], "1970-01-01T00:00:00Z");
  EXPECT_EQ(doc["to"], "1970-01-01T01:00:00Z");
  EXPECT_EQ(doc["step_seconds"], 60);
  EXPECT_EQ(doc["gpus"][0]["serial"], "S,1");
  EXPECT_EQ(doc["events"][0]["event"], "moved");
  EXPECT_TRUE(doc["rma"].is_array());
  EXPECT_TRUE(doc["rma"].empty());
  nlohmann::json only = nlohmann::json::parse(RenderInventory(SmallReport(), TableFormat::kJson, "events"));
  EXPECT_FALSE(only.contains("gpus"));
  EXPECT_EQ(only["events"].size(), 1u);
}

TEST(InventoryCommand, TextSaysTheResolutionAndNoneForAnEmptySection) {
  const std::string text = RenderInventory(SmallReport(), TableFormat::kText, "all");
  EXPECT_THAT(
      text,
      StartsWith("GPU inventory from 1970-01-01T00:00:00Z to 1970-01-01T01:00:00Z, sampled every 60 s\n"));
  EXPECT_THAT(
      text,
      HasSubstr("RMA candidates: repeated double-bit ECC errors, row-remap failures, XID 79\n  none\n"));
}

}  // namespace
}  // namespace gpuscope
