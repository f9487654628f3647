// KmsgSource: the kernel log from /dev/kmsg as an EventSource (KmsgReader underneath: resume by sequence
// number, ring-buffer overruns counted). Opens the device at the first poll and again at every poll until
// it opens. Records are kernel-only lines; their time is the wall clock minus their age (the kernel stamps
// them with CLOCK_MONOTONIC). Exports gpuscope_kmsg_overruns_total and gpuscope_kmsg_missed_records_total.
//
// Thread-safety: as EventSource.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/events/event_source.h"
#include "src/events/sources/kmsg_reader.h"

namespace gpuscope {

class KmsgSource final : public EventSource {
 public:
  struct Options {
    KmsgReader::Options reader;
    // Test seams: clocks (Unix ns, CLOCK_MONOTONIC ns); empty: the system's.
    std::function<int64_t()> now_unix_ns;
    std::function<int64_t()> now_monotonic_ns;
  };
  explicit KmsgSource(Options options);

  std::string_view Name() const override { return "kmsg"; }
  Status Poll(const Emit& emit) override;
  Counters counters() const override { return {}; }
  void AppendMetrics(std::vector<MetricFamily>& out) const override;
  static std::vector<MetricDescription> Describe();

 private:
  Options options_;
  KmsgReader reader_;
  bool open_ = false;
  std::atomic<uint64_t> overruns_{0};
  std::atomic<uint64_t> missed_{0};
};

}  // namespace gpuscope
