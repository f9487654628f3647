// Small helpers for the sources' checkpoint files: whole-file read and atomic replace.
//
// Thread-safety: free functions; concurrent writers of the same path must be serialised by callers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/core/status.h"

namespace gpuscope::sources_internal {

// Writes `contents` to `path` + ".tmp", fsyncs it and renames it over `path`. On failure the old
// file (if any) is left intact and an Unavailable status is returned.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The whole contents of `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpuscope::sources_internal
