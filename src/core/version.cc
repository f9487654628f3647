#include "src/core/version.h"

// Both come from CMake (src/core/CMakeLists.txt): the version from project(VERSION) in the top-level
// CMakeLists.txt, its one place; the revision from git at configure time.
#if !defined(GPUSCOPE_VERSION) || !defined(GPUSCOPE_REVISION)
#error "GPUSCOPE_VERSION and GPUSCOPE_REVISION are set by src/core/CMakeLists.txt"
#endif

namespace gpuscope {

std::string_view Version() { return GPUSCOPE_VERSION; }
std::string_view Revision() { return GPUSCOPE_REVISION; }
std::string_view Compiler() {
#if defined(__clang__)
  return "clang-" __clang_version__;
#elif defined(__GNUC__)
  return "gcc-" __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace gpuscope
