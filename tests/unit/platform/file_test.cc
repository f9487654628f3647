#include "src/platform/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace gpuscope {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuscope-file-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, std::string_view contents) {
    const std::string path = dir_ + "/" + name;
    AtomicWriteOptions options;
    options.sync = false;
    EXPECT_TRUE(WriteFileAtomically(path, contents, options).ok());
    return path;
  }
  std::string dir_;
};

TEST_F(FileTest, ReadsAWholeFileWithNulAndHighBytes) {
  const std::string contents("a\0b\xff\n", 5);
  EXPECT_EQ(ReadWholeFile(Write("f", contents)), contents);
}

TEST_F(FileTest, EmptyFileIsAnEmptyString) { EXPECT_EQ(ReadWholeFile(Write("f", "")), ""); }

TEST_F(FileTest, LongerFileIsCutAtTheLimit) {
  const std::string path = Write("f", std::string(20000, 'x') + "tail");
  EXPECT_EQ(ReadWholeFile(path, 10000), std::string(10000, 'x'));
  EXPECT_EQ(ReadWholeFile(path, 0), "");
}

TEST_F(FileTest, MissingFileGivesEnoentAndClearsTheOutput) {
  std::string out = "stale";
  EXPECT_EQ(ReadFileInto(dir_ + "/missing", &out), ENOENT);
  EXPECT_EQ(out, "");
  EXPECT_EQ(ReadWholeFile(dir_ + "/missing"), std::nullopt);
}

TEST_F(FileTest, ReadErrorGivesItsErrnoAndNoPartialContent) {
  // A directory opens read-only but read() fails with EISDIR, like a sysfs attribute whose driver refuses.
  std::string out = "stale";
  EXPECT_EQ(ReadFileInto(dir_, &out), EISDIR);
  EXPECT_EQ(out, "");
  EXPECT_EQ(ReadWholeFile(dir_), std::nullopt);
}

TEST_F(FileTest, ReadsProcFilesThatReportNoSize) {
  // /proc files stat as 0 bytes; the reader reads until end of file, not by size.
  const std::optional<std::string> stat = ReadWholeFile("/proc/self/stat");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->substr(0, std::to_string(getpid()).size() + 2), std::to_string(getpid()) + " (");
}

}  // namespace
}  // namespace gpuscope
