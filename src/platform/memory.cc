#include "src/platform/memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpuscope {

bool LimitMallocArenas() {
#if defined(__GLIBC__)
  return mallopt(M_ARENA_MAX, 1) == 1;
#else
  return false;
#endif
}

void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace gpuscope
