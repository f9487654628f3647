// FileTailer: follows log files matching glob patterns (job outputs such as slurm-*.out, the slurmd
// log) and hands every appended complete line to a callback. Follows rotation (rename + new file:
// the old inode is read to its end, then the new file from offset 0), truncation (size below our
// offset: restart at 0, counted) and replacement, and persists (device, inode, offset) per file in
// a checkpoint written atomically (tmp + rename) so a restart resumes where it left off.
// Lines longer than max_line_bytes are cut, suffixed with " [truncated]" and counted; the rest of
// such a line is skipped. A last line without '\n' is held until completed (or until its file is
// rotated away, when it is delivered as is). Bytes are passed through untouched (invalid UTF-8 and
// NUL included); classifiers sanitise.
//
// Only regular files are read (symlinks to them are followed). A path the globs match that is a FIFO, a
// device (e.g. a symlink to /dev/zero), a socket, a directory or a symlink to nothing is never opened:
// it is counted in skipped[reason] and logged once each time the path starts being skipped for a reason.
//
// Poll-based: the owner calls PollOnce() at its interval. Known limit: a file truncated and regrown
// past the old offset between two polls is not detected as truncated.
//
// Thread-safety: not thread-safe; one thread drives PollOnce(). counters() from that thread only.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

class FileTailer {
 public:
  struct Options {
    std::vector<std::string> globs;
    std::string checkpoint_path;  // empty: no checkpoint, every file starts at offset 0
    size_t max_line_bytes = 64 * 1024;
  };
  // Why a matched path is not read; every value is a `reason` label (SkipReasonName).
  enum class SkipReason { kFifo, kDevice, kSocket, kDirectory, kDanglingSymlink };
  static constexpr size_t kSkipReasons = 5;
  static std::string_view SkipReasonName(SkipReason reason);

  struct Counters {
    uint64_t lines = 0;
    uint64_t truncated_lines = 0;  // lines cut at max_line_bytes
    uint64_t truncations = 0;      // files that shrank below our offset
    uint64_t rotations = 0;        // files that disappeared from the globs and were finished
    uint64_t read_errors = 0;
    std::array<uint64_t, kSkipReasons> skipped{};  // by SkipReason: paths that started being skipped
  };
  using LineCallback = std::function<void(std::string_view path, std::string_view line)>;

  explicit FileTailer(Options options);
  ~FileTailer();
  FileTailer(const FileTailer&) = delete;
  FileTailer& operator=(const FileTailer&) = delete;

  // Expands the globs, finishes files that went away, reads what was appended to the others and
  // starts new ones (at their checkpointed offset if the checkpoint knows their inode, else at 0),
  // then writes the checkpoint. Returns Ok, or Unavailable when the checkpoint could not be written
  // (lines already delivered stay delivered; the next poll retries the write).
  Status PollOnce(const LineCallback& callback);

  const Counters& counters() const { return counters_; }

 private:
  using FileId = std::pair<dev_t, ino_t>;
  struct Tracked {
    std::string path;
    int fd = -1;
    off_t offset = 0;         // bytes consumed from the file
    std::string partial;      // consumed bytes of an incomplete line
    bool discarding = false;  // inside an over-long line already delivered cut
  };
  struct Saved {
    off_t offset = 0;
    std::string path;
  };

  // Whether `path` (matched by a glob) is a regular file to read; counts and logs it when not.
  bool Readable(const std::string& path, FileId* id, std::map<std::string, SkipReason>* skipped);
  // The regular files the globs match now, by identity; remembers the skipped paths in skipped_.
  std::map<FileId, std::string> MatchGlobs();
  // Finishes the tracked files not in `current` (rotated out, deleted, replaced): reads what is left,
  // delivers an unterminated last line, closes and forgets them.
  void FinishVanished(const std::map<FileId, std::string>& current, const LineCallback& callback);
  // Reads what was appended to each tracked file, under its current path; starts over after truncation.
  void ReadTracked(const std::map<FileId, std::string>& current, const LineCallback& callback);
  // Opens a newly matched file (at its checkpointed offset when the checkpoint knows it) and reads it.
  void OpenNew(const FileId& id, const std::string& path, const LineCallback& callback);
  void LoadCheckpoint();
  Status SaveCheckpoint();
  void ReadAvailable(Tracked& file, const LineCallback& callback);
  void Consume(Tracked& file, std::string_view data, const LineCallback& callback);
  void Emit(Tracked& file, std::string_view line, const LineCallback& callback);
  static off_t Committed(const Tracked& file);

  Options options_;
  std::map<FileId, Tracked> tracked_;
  std::map<FileId, Saved> saved_;              // checkpoint entries not yet claimed by an open file
  std::map<std::string, SkipReason> skipped_;  // matched paths not read at the last poll, and why
  std::string last_written_;
  Counters counters_;
};

}  // namespace gpuscope
