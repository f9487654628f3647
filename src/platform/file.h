// Small-file read and atomic replace: the one way gpuscope reads a small file and the one way gpuscope writes
// a checkpoint, a device map or any file a reader must never see half of (temporary file in the same
// directory, fsync, rename over the target).
//
// Thread-safety: free functions; concurrent writers of the same path must be serialised by callers.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/status.h"

namespace gpuscope {

// No cap on what ReadFileInto and ReadWholeFile read.
inline constexpr size_t kUnlimitedFileBytes = static_cast<size_t>(-1);

struct AtomicWriteOptions {
  bool sync = true;             // fsync the data before the rename (off: rename only, for tests/benches)
  bool sync_directory = false;  // fsync the directory after the rename, so the rename itself survives a crash
  mode_t mode = 0644;
};

// Writes `contents` to `path` + ".tmp", optionally fsyncs it and renames it over `path`. On failure the
// old file (if any) is left intact, the temporary file removed, and Unavailable returned.
Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           AtomicWriteOptions options = {});

// The one reader of small files (checkpoints, /proc and /sys attributes): reads `path` whole, or only its
// first `max_bytes` bytes when it is longer (a /proc or /sys file reports no size, and a runaway one must
// not fill memory), into *out, replacing what was there. EINTR is retried. Returns 0, or the errno of the
// open or read that failed (ENOENT for a missing file, ESRCH for a process that exited, EACCES, EIO from
// a driver that refuses the read); *out is then empty.
int ReadFileInto(const std::string& path, std::string* out, size_t max_bytes = kUnlimitedFileBytes);

// ReadFileInto for a descriptor the caller opened itself (openat with O_NOFOLLOW, checked with fstat);
// reads from its current offset and leaves it open.
int ReadDescriptorInto(int fd, std::string* out, size_t max_bytes = kUnlimitedFileBytes);

// ReadFileInto as a value: the contents, or nullopt when `path` cannot be opened or read.
std::optional<std::string> ReadWholeFile(const std::string& path, size_t max_bytes = kUnlimitedFileBytes);

}  // namespace gpuscope
