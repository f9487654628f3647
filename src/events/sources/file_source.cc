#include "src/events/sources/file_source.h"

#include <utility>

namespace gpuscope {

FileSource::FileSource(FileTailer::Options options) : tailer_(std::move(options)) {}

Status FileSource::Poll(const Emit& emit) {
  Status status = tailer_.PollOnce([&](std::string_view path, std::string_view text) {
    EventLine line;
    line.text = text;
    line.origin = path;
    line.origin_is_path = true;
    emit(line);
  });
  const FileTailer::Counters& c = tailer_.counters();
  rotations_.store(c.rotations, std::memory_order_relaxed);
  truncations_.store(c.truncations, std::memory_order_relaxed);
  for (size_t i = 0; i < skipped_.size(); ++i) skipped_[i].store(c.skipped[i], std::memory_order_relaxed);
  return status;
}

EventSource::Counters FileSource::counters() const {
  return Counters{tailer_.counters().truncated_lines, tailer_.counters().read_errors};
}

void FileSource::AppendMetrics(std::vector<MetricFamily>& out) const {
  std::vector<MetricDescription> d = Describe();  // rotations, truncations, skipped
  auto family = [&](size_t i) {
    MetricFamily f;
    f.name = std::move(d[i].name);
    f.help = std::move(d[i].help);
    f.type = d[i].type;
    return f;
  };
  MetricFamily rotations = family(0);
  rotations.samples.push_back(Sample{{}, static_cast<double>(rotations_.load(std::memory_order_relaxed))});
  out.push_back(std::move(rotations));
  MetricFamily truncations = family(1);
  truncations.samples.push_back(
      Sample{{}, static_cast<double>(truncations_.load(std::memory_order_relaxed))});
  out.push_back(std::move(truncations));
  // Every reason, pre-declared, so the family has a stable set of series.
  MetricFamily skipped = family(2);
  for (size_t i = 0; i < skipped_.size(); ++i) {
    skipped.samples.push_back(
        Sample{{{"reason", std::string(FileTailer::SkipReasonName(static_cast<FileTailer::SkipReason>(i)))}},
               static_cast<double>(skipped_[i].load(std::memory_order_relaxed))});
  }
  out.push_back(std::move(skipped));
}

std::vector<MetricDescription> FileSource::Describe() {
  std::vector<MetricDescription> out(3);
  out[0].name = "gpuscope_event_file_rotations_total";
  out[0].help = "Tailed files rotated or removed (read to their end first).";
  out[1].name = "gpuscope_event_file_truncations_total";
  out[1].help = "Tailed files that shrank below the read position (read again from 0).";
  out[2].name = "gpuscope_event_files_skipped_total";
  out[2].help =
      "Paths the --events.file globs match that are not regular files and are never opened (fifo, device, "
      "socket, directory, dangling_symlink); counted once each time a path starts being skipped for a "
      "reason, and logged then.";
  out[2].labels = {"reason"};
  for (MetricDescription& d : out) {
    d.type = MetricType::kCounter;
    d.source = "file tailer";
  }
  return out;
}

}  // namespace gpuscope
