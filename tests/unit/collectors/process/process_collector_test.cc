#include "src/collectors/process/process_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class ProcessCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuscope-process-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& name, const std::string& contents) {
    fs::create_directories((fs::path(root_) / name).parent_path());
    std::ofstream(root_ + "/" + name) << contents;
  }
  // Sample value of each family with a single unlabelled sample.
  static std::map<std::string, double> Values(const std::vector<MetricFamily>& families) {
    std::map<std::string, double> out;
    for (const MetricFamily& f : families) {
      if (f.samples.size() == 1 && f.samples[0].labels.empty()) out[f.name] = f.samples[0].value;
    }
    return out;
  }
  std::string root_;
};

TEST_F(ProcessCollectorTest, ConstructingReadsNothingAndCollectReadsTheFilesPresentThen) {
  // Neither file exists when the collector is built: the constructor must not need them.
  ProcessCollector collector(root_ + "/self", root_ + "/stat");
  std::vector<MetricFamily> out;
  EXPECT_FALSE(collector.Collect(out).ok());

  const long ticks = sysconf(_SC_CLK_TCK);
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  Write("stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n");
  Write("self/stat", "77 (gpuscope agent) S 1 77 77 0 -1 0 0 0 0 0 " + std::to_string(3 * ticks) + " " +
                         std::to_string(ticks) + " 0 0 20 0 9 0 " + std::to_string(50 * ticks) +
                         " 123456789 1000 0\n");
  fs::create_directories(root_ + "/self/fd");
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  const auto values = Values(out);
  EXPECT_DOUBLE_EQ(values.at("process_cpu_seconds_total"), 4.0);
  EXPECT_DOUBLE_EQ(values.at("process_virtual_memory_bytes"), 123456789.0);
  EXPECT_DOUBLE_EQ(values.at("process_resident_memory_bytes"), 1000 * page);
  EXPECT_DOUBLE_EQ(values.at("process_start_time_seconds"), 1700000000.0 + 50.0);
}

TEST_F(ProcessCollectorTest, StartTimeIsLeftOutWhileTheBootTimeIsUnknown) {
  Write("stat", "cpu  1 2 3\nbtime not-a-number\n");
  Write("self/stat", "77 (a) S 1 77 77 0 -1 0 0 0 0 0 1 1 0 0 20 0 9 0 5 6 7 0\n");
  ProcessCollector collector(root_ + "/self", root_ + "/stat");
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(Values(out).count("process_start_time_seconds"), 0u);
  EXPECT_EQ(Values(out).count("process_cpu_seconds_total"), 1u);
}

}  // namespace
}  // namespace gpuscope
