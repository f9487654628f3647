// SeriesMemory: the series of the last batch the remote_write sink queued, kept in a small file in the
// sink's queue directory, so that a series that vanished while the agent was down (a job ended, a GPU
// was lost) or across a restart still gets its stale marker in the first batch after the restart,
// instead of lingering in the receiver for its 5-minute lookback.
//
// File format (written whole through WriteFileAtomically, never appended to):
//   magic "GPSRWSM1" | series count u32 LE | per series: label count u32 LE, then per label name length
//   u32 LE, name, value length u32 LE, value | CRC32C u32 LE of everything before it.
// A missing file is an empty memory (first start); an unreadable, truncated or corrupt one is logged at
// warn level and treated as empty: the only loss is the stale markers of that one restart.
//
// Store() rewrites the file only when the set of series changed since the last Load() or Store(), so a
// steady node writes it once. A crash between a queued batch and its Store() leaves the previous set:
// at the restart a series that batch had already marked stale is marked once more (harmless: a second
// stale marker), and a series that batch added is not remembered (it then goes stale by lookback).
//
// Thread-safety: none; the sink calls it under its own mutex.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

using RemoteWriteLabels = std::vector<std::pair<std::string, std::string>>;  // sorted, __name__ included
// Keyed by RemoteWriteSeriesKey(labels).
using RemoteWriteSeriesSet = std::unordered_map<std::string, RemoteWriteLabels>;

// The identity of one series: its sorted labels joined with separators no valid name contains.
std::string RemoteWriteSeriesKey(const RemoteWriteLabels& labels);

// Pure codec of the file's contents.
std::string EncodeSeriesMemory(const RemoteWriteSeriesSet& series);
// False (and *series empty) for anything but a whole, intact encoding.
bool DecodeSeriesMemory(std::string_view bytes, RemoteWriteSeriesSet* series);

class SeriesMemory {
 public:
  explicit SeriesMemory(std::string path) : path_(std::move(path)) {}

  // The series the file holds; empty when it is missing, and empty with a warning logged when it cannot
  // be read or is corrupt.
  RemoteWriteSeriesSet Load();
  // Writes `series` atomically when its set of keys differs from the last one loaded or stored.
  // Unavailable when the file cannot be written (the old one stays; the next Store() tries again).
  Status Store(const RemoteWriteSeriesSet& series);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t stored_fingerprint_ = 0;  // of the keys last loaded or stored; 0: none yet
  bool stored_ = false;
};

}  // namespace gpuscope
