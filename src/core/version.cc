#include "src/core/version.h"

#ifndef GPUSCOPE_VERSION
#define GPUSCOPE_VERSION "0.0.0"
#endif
#ifndef GPUSCOPE_REVISION
#define GPUSCOPE_REVISION "unknown"
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
