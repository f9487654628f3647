// FileSource: log files matching globs (job outputs such as slurm-*.out, the slurmd log, a kernel log
// file) as an EventSource (FileTailer underneath: rotation, truncation, inode+offset checkpoints). Each
// line's origin is its file's path, from which the job may be read. Exports
// gpuscope_event_file_rotations_total, gpuscope_event_file_truncations_total and
// gpuscope_event_files_skipped_total{reason} (paths matched that are not regular files).
//
// Thread-safety: as EventSource.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "src/events/event_source.h"
#include "src/events/sources/file_tailer.h"

namespace gpuscope {

class FileSource final : public EventSource {
 public:
  explicit FileSource(FileTailer::Options options);

  std::string_view Name() const override { return "file"; }
  Status Poll(const Emit& emit) override;
  Counters counters() const override;
  void AppendMetrics(std::vector<MetricFamily>& out) const override;
  static std::vector<MetricDescription> Describe();

 private:
  FileTailer tailer_;
  std::atomic<uint64_t> rotations_{0};
  std::atomic<uint64_t> truncations_{0};
  std::array<std::atomic<uint64_t>, FileTailer::kSkipReasons> skipped_{};
};

}  // namespace gpuscope
