#include "src/cli/table_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

Table Sample() {
  Table t;
  t.columns = {{"account", false}, {"gpu_hours", true}, {"note", false}};
  t.rows = {{"physics", "12.5", "a,b"}, {"bio\"x", "", "line\nbreak"}, {"ml", "n/a", ""}};
  return t;
}

TEST(TableOutputTest, TextAlignsNumbersRightAndTextLeft) {
  Table t;
  t.columns = {{"name", false}, {"hours", true}};
  t.rows = {{"a", "1.5"}, {"longer", "100.0"}};
  EXPECT_EQ(RenderTableText(t), "name    hours\na         1.5\nlonger  100.0\n");
}

TEST(TableOutputTest, CsvQuotesFieldsWithSeparatorsQuotesAndNewlines) {
  EXPECT_EQ(RenderTableCsv(Sample()),
            "account,gpu_hours,note\r\nphysics,12.5,\"a,b\"\r\n\"bio\"\"x\",,\"line\nbreak\"\r\nml,n/a,\r\n");
}

TEST(TableOutputTest, JsonWritesNumericColumnsAsNumbersAndUnparsableOnesAsNull) {
  nlohmann::json rows = nlohmann::json::parse(RenderTableJson(Sample()));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["gpu_hours"], 12.5);
  EXPECT_TRUE(rows[1]["gpu_hours"].is_null());
  EXPECT_TRUE(rows[2]["gpu_hours"].is_null());
  EXPECT_EQ(rows[1]["account"], "bio\"x");
  EXPECT_EQ(rows[0]["note"], "a,b");
}

TEST(TableOutputTest, JsonReplacesInvalidUtf8InsteadOfThrowing) {
  Table t;
  t.columns = {{"user", false}};
  t.rows = {{std::string("bad\xff")}};
  nlohmann::json rows = nlohmann::json::parse(RenderTableJson(t));
  EXPECT_EQ(rows[0]["user"], "bad\xEF\xBF\xBD");
}

TEST(TableOutputTest, FormatNamesAreTableCsvJsonOnly) {
  TableFormat f = TableFormat::kJson;
  EXPECT_TRUE(ParseTableFormat("table", &f).ok());
  EXPECT_EQ(f, TableFormat::kText);
  EXPECT_TRUE(ParseTableFormat("csv", &f).ok());
  EXPECT_EQ(f, TableFormat::kCsv);
  Status bad = ParseTableFormat("xml", &f);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("xml"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
