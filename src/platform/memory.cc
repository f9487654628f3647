#include "src/platform/memory.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) before the test below

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpuscope {
namespace {
constexpr int kMmapThresholdBytes = 128 * 1024;
}  // namespace

void LimitMallocArenas() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 1);
  // A fixed threshold: buffers of this size and more (a rendered exposition, a large response) are
  // mapped on their own and unmapped when freed. glibc would otherwise raise the threshold after the
  // first such free and keep later ones on the heap, where they hold pages after the scrape.
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
#endif
}

void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace gpuscope
