// Build identity, filled in by CMake (src/core/version.h.in is not needed: definitions come from
// compile options on gpuscope_core's consumers).
#pragma once

#include <string_view>

namespace gpuscope {

#ifndef GPUSCOPE_VERSION
#define GPUSCOPE_VERSION "0.0.0"
#endif
#ifndef GPUSCOPE_REVISION
#define GPUSCOPE_REVISION "unknown"
#endif

inline constexpr std::string_view kVersion = GPUSCOPE_VERSION;
inline constexpr std::string_view kRevision = GPUSCOPE_REVISION;
inline constexpr std::string_view kCompiler =
#if defined(__clang__)
    "clang-" __clang_version__;
#elif defined(__GNUC__)
    "gcc-" __VERSION__;
#else
    "unknown";
#endif

}  // namespace gpuscope
