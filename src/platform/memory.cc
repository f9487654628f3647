#include "src/platform/memory.h"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) before the test below

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpuscope {

void LimitMallocArenas() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 1);
#endif
}

void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace gpuscope
