// Whole-file read and atomic replace: the one way gpuscope writes a checkpoint, a device map or any file
// a reader must never see half of (temporary file in the same directory, fsync, rename over the target).
//
// Thread-safety: free functions; concurrent writers of the same path must be serialised by callers.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "src/core/status.h"

namespace gpuscope {

struct AtomicWriteOptions {
  bool sync = true;             // fsync the data before the rename (off: rename only, for tests/benches)
  bool sync_directory = false;  // fsync the directory after the rename, so the rename itself survives a crash
  mode_t mode = 0644;
};

// Writes `contents` to `path` + ".tmp", optionally fsyncs it and renames it over `path`. On failure the
// old file (if any) is left intact, the temporary file removed, and Unavailable returned.
Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           AtomicWriteOptions options = {});

// The whole contents of `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpuscope
