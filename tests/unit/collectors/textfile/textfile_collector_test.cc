#include "src/collectors/textfile/textfile_collector.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class TextfileCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuscope-textfile-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& contents) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << contents;
  }
  const MetricFamily* Find(const std::string& name) const {
    for (const MetricFamily& f : out_) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  // Value of the sample whose labels are exactly `labels`; NaN when absent.
  double Value(const std::string& family, const Labels& labels = {}) const {
    const MetricFamily* f = Find(family);
    if (f == nullptr) return std::nan("");
    for (const Sample& s : f->samples) {
      if (s.labels == labels) return s.value;
    }
    return std::nan("");
  }
  Status Collect(TextfileCollector& collector) {
    out_.clear();
    return collector.Collect(out_);
  }
  std::string dir_;
  std::vector<MetricFamily> out_;
};

TEST_F(TextfileCollectorTest, WithoutDirectoryReportsNoDataAndReadsNothing) {
  TextfileCollector collector({});
  EXPECT_EQ(Collect(collector).code(), Status::Code::kNoData);
  EXPECT_TRUE(out_.empty());
}

TEST_F(TextfileCollectorTest, MergesEveryPromFileWithItsMtimeAndIgnoresOtherNames) {
  Write("a.prom", "# HELP site_ok Health check.\n# TYPE site_ok gauge\nsite_ok{check=\"nccl\"} 1\n");
  Write("b.prom", "# TYPE site_ok gauge\nsite_ok{check=\"disk\"} 0\nsite_repairs_total 2\n");
  Write("notes.txt", "not_read 1\n");
  Write(".b.prom.tmp", "half_written");
  const timeval times[2] = {{1700000000, 0}, {1700000000, 500000}};
  ASSERT_EQ(utimes((dir_ + "/a.prom").c_str(), times), 0);
  TextfileCollector collector({.directory = dir_});
  ASSERT_TRUE(Collect(collector).ok());
  const MetricFamily* ok = Find("site_ok");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->type, MetricType::kGauge);
  EXPECT_EQ(ok->help, "Health check.");
  EXPECT_EQ(Value("site_ok", {{"check", "nccl"}}), 1);
  EXPECT_EQ(Value("site_ok", {{"check", "disk"}}), 0);
  EXPECT_EQ(Find("site_repairs_total")->type, MetricType::kUnknown);
  EXPECT_EQ(Find("site_repairs_total")->help, "Metric read from b.prom (textfile collector).");
  EXPECT_EQ(Find("not_read"), nullptr);
  EXPECT_EQ(Value("gpuscope_textfile_scrape_error"), 0);
  EXPECT_EQ(Value("gpuscope_textfile_mtime_seconds", {{"file", "a.prom"}}), 1700000000.5);
  EXPECT_EQ(Find("gpuscope_textfile_mtime_seconds")->samples.size(), 2u);
}

TEST_F(TextfileCollectorTest, RefusesBadFilesWholeCountsThemByReasonAndKeepsTheGoodOnes) {
  Write("good.prom", "site_ok 1\n");
  Write("big.prom", std::string(2048, '#') + "\n");
  Write("timestamp.prom", "site_late 1 1700000000000\n");
  Write("utf8.prom", "site_x{v=\"\xff\"} 1\n");
  Write("own.prom", "gpuscope_gpu_up 1\n");
  Write("repeat.prom", "site_ok 2\n");
  TextfileCollector collector({.directory = dir_, .max_file_bytes = 1024});
  ASSERT_TRUE(Collect(collector).ok());
  EXPECT_EQ(Value("site_ok"), 1);
  EXPECT_EQ(Find("site_late"), nullptr);
  EXPECT_EQ(Find("site_x"), nullptr);
  EXPECT_EQ(Find("gpuscope_gpu_up"), nullptr);
  EXPECT_EQ(Value("gpuscope_textfile_scrape_error"), 1);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "too_large"}}), 1);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "invalid"}}), 1);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "invalid_utf8"}}), 1);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "conflict"}}), 2);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "unreadable"}}), 0);
  // Only the files read get an mtime.
  EXPECT_EQ(Find("gpuscope_textfile_mtime_seconds")->samples.size(), 1u);

  // Refusals count per cycle; once fixed, the file is read and the error clears.
  Write("timestamp.prom", "site_late 1\n");
  fs::remove(dir_ + "/big.prom");
  fs::remove(dir_ + "/utf8.prom");
  fs::remove(dir_ + "/own.prom");
  fs::remove(dir_ + "/repeat.prom");
  ASSERT_TRUE(Collect(collector).ok());
  EXPECT_EQ(Value("site_late"), 1);
  EXPECT_EQ(Value("gpuscope_textfile_scrape_error"), 0);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "conflict"}}), 2);
}

TEST_F(TextfileCollectorTest, AFamilyWithAnotherTypeInALaterFileIsAConflict) {
  Write("1.prom", "# TYPE site_n gauge\nsite_n{a=\"1\"} 1\n");
  Write("2.prom", "# TYPE site_n counter\nsite_n{a=\"2\"} 2\n");
  Write("3.prom", "site_n{b=\"3\"} 3\n");
  TextfileCollector collector({.directory = dir_});
  ASSERT_TRUE(Collect(collector).ok());
  EXPECT_EQ(Find("site_n")->samples.size(), 1u);
  EXPECT_EQ(Value("gpuscope_textfile_files_refused_total", {{"reason", "conflict"}}), 2);
}

TEST_F(TextfileCollectorTest, AMissingDirectoryIsUnavailableWithScrapeErrorOne) {
  TextfileCollector collector({.directory = dir_ + "/absent"});
  EXPECT_EQ(Collect(collector).code(), Status::Code::kUnavailable);
  EXPECT_EQ(Value("gpuscope_textfile_scrape_error"), 1);
}

}  // namespace
}  // namespace gpuscope
