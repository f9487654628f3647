// SeriesMemory: the remote_write sink's last series set, on disk across restarts; a damaged file is
// ignored (empty), never trusted in part.
#include "src/sinks/remote_write/series_memory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuscope {
namespace {

RemoteWriteSeriesSet Series(int gpus) {
  RemoteWriteSeriesSet out;
  for (int g = 0; g < gpus; ++g) {
    RemoteWriteLabels labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"},
                             {"gpu", std::to_string(g)},
                             {"odd", std::string("a\nb\xff\"\0c", 7)}};
    out.emplace(RemoteWriteSeriesKey(labels), labels);
  }
  return out;
}

class SeriesMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuscope-series-memory-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "series").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(SeriesMemoryTest, WhatIsStoredLoadsBackInANewInstanceLabelsVerbatim) {
  ASSERT_TRUE(SeriesMemory(path_).Store(Series(3)).ok());
  EXPECT_EQ(SeriesMemory(path_).Load(), Series(3));
}

TEST_F(SeriesMemoryTest, AMissingFileIsAnEmptyMemory) { EXPECT_TRUE(SeriesMemory(path_).Load().empty()); }

TEST_F(SeriesMemoryTest, EveryTruncationAndEveryFlippedByteIsRejectedWhole) {
  const std::string good = EncodeSeriesMemory(Series(2));
  RemoteWriteSeriesSet decoded;
  ASSERT_TRUE(DecodeSeriesMemory(good, &decoded));
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeSeriesMemory(good.substr(0, n), &decoded)) << "truncated to " << n;
    EXPECT_TRUE(decoded.empty());
    std::string flipped = good;
    flipped[n] = static_cast<char>(flipped[n] ^ 0x20);
    EXPECT_FALSE(DecodeSeriesMemory(flipped, &decoded)) << "byte " << n;
  }
  EXPECT_FALSE(DecodeSeriesMemory(good + "x", &decoded));
}

TEST_F(SeriesMemoryTest, ACorruptFileLoadsAsEmptyAndIsReplacedByTheNextStore) {
  std::ofstream(path_) << "GPSRWSM1 garbage that is no series set";
  SeriesMemory memory(path_);
  EXPECT_TRUE(memory.Load().empty());
  ASSERT_TRUE(memory.Store(Series(1)).ok());
  EXPECT_EQ(SeriesMemory(path_).Load(), Series(1));
}

TEST_F(SeriesMemoryTest, AnUnchangedSetIsNotRewritten) {
  SeriesMemory memory(path_);
  ASSERT_TRUE(memory.Store(Series(2)).ok());
  std::filesystem::remove(path_);  // a rewrite would bring it back
  ASSERT_TRUE(memory.Store(Series(2)).ok());
  EXPECT_FALSE(std::filesystem::exists(path_));
  ASSERT_TRUE(memory.Store(Series(1)).ok());  // changed: written
  EXPECT_EQ(SeriesMemory(path_).Load(), Series(1));
  ASSERT_TRUE(memory.Store(RemoteWriteSeriesSet{}).ok());  // everything gone is a change too
  EXPECT_TRUE(std::filesystem::exists(path_));
  EXPECT_TRUE(SeriesMemory(path_).Load().empty());
}

TEST_F(SeriesMemoryTest, AnUnwritableDirectoryIsAnErrorAndKeepsTheOldFile) {
  SeriesMemory memory(path_);
  ASSERT_TRUE(memory.Store(Series(2)).ok());
  std::filesystem::remove_all(dir_);  // the directory is gone: nothing can be written
  EXPECT_FALSE(memory.Store(Series(1)).ok());
  std::filesystem::create_directories(dir_);
  ASSERT_TRUE(memory.Store(Series(1)).ok());  // the failed one is tried again
  EXPECT_EQ(SeriesMemory(path_).Load(), Series(1));
}

}  // namespace
}  // namespace gpuscope
