#include "src/platform/memory.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace gpuscope {
namespace {

#if defined(__GLIBC__)
TEST(MemoryTest, GlibcAcceptsOneArena) { EXPECT_TRUE(LimitMallocArenas()); }
#endif

TEST(MemoryTest, ReleasingFreedMemoryKeepsLiveAllocationsIntact) {
  std::vector<std::unique_ptr<int[]>> kept;
  for (int i = 0; i < 64; ++i) {
    kept.emplace_back(new int[1024]);
    kept.back()[0] = i;
    std::unique_ptr<int[]> freed(new int[4096]);
    freed[0] = i;
  }
  ReleaseFreedMemory();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(kept[i][0], i);
}

}  // namespace
}  // namespace gpuscope
