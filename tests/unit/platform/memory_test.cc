#include "src/platform/memory.h"

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gpuscope {
namespace {

#if defined(__GLIBC__)
// The number of arenas malloc_info reports (one <heap nr="..."> element each).
int MallocArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return -1;
  malloc_info(0, stream);
  std::fclose(stream);
  int heaps = 0;
  for (std::string_view rest(text, size); rest.find("<heap nr=") != std::string_view::npos;) {
    rest.remove_prefix(rest.find("<heap nr=") + 1);
    ++heaps;
  }
  std::free(text);
  return heaps;
}

TEST(MemoryTest, ThreadsThatAllocateShareTheOneArena) {
  LimitMallocArenas();
  std::vector<std::thread> threads;
  std::vector<void*> blocks(4, nullptr);
  for (size_t i = 0; i < blocks.size(); ++i) {
    threads.emplace_back([&blocks, i] { blocks[i] = std::malloc(1000); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(MallocArenas(), 1);
  for (void* block : blocks) std::free(block);
}
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
