// EventSource: where log lines enter the event path (/dev/kmsg, tailed files, the systemd journal, and the
// events the agent's own detectors raise: PostedEventSource, e.g. the training source's hung ranks). The
// EventPipeline polls every source at its interval, classifies each line a source hands it, and counts lines,
// truncations and errors per source (label source=Name()); it knows sources only through this interface.
// Sources are created by name from the agent's registry (src/agent/event_registry.h).
//
// A source keeps its own position: Poll() delivers what arrived since the last call, in order, then
// checkpoints (so a restart resumes there; a crash between the two re-reads rather than loses). A source
// that cannot open (device missing, journal absent) returns the error from Poll() and tries again at the
// next one; it never blocks the poll of the others.
//
// Thread-safety: Poll() and counters() from the pipeline's thread only, never concurrently; Name(),
// AppendMetrics() from any thread (implementations keep what AppendMetrics reads in atomics or under a
// lock of their own).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "src/core/metric.h"
#include "src/core/status.h"
#include "src/events/event.h"

namespace gpuscope {

// One line as a source hands it to the pipeline. The views are valid during the callback only.
struct EventLine {
  std::string_view text;        // the line, without its newline; may be cut at the line limit
  std::string_view origin;      // where it was read: a file path, a device, a systemd unit
  int64_t time_unix_ns = 0;     // when it was logged; 0: the pipeline stamps it with the time it was read
  bool kernel_only = false;     // a kernel log record: only the kernel classifiers apply
  bool origin_is_path = false;  // origin is a file path that may name the job (slurm-1234.out, job_1234/)
  // The event of the line when the source knows it already (the agent's own detectors): the classifiers
  // are skipped. Null for log lines.
  const Event* event = nullptr;
};

class EventSource {
 public:
  // What the pipeline exports per source, as totals since construction.
  struct Counters {
    uint64_t truncated_lines = 0;  // lines cut at the line limit: gpuscope_event_lines_truncated_total
    // Failures the source counted and carried on from; with failed polls, gpuscope_event_source_errors_total.
    uint64_t read_errors = 0;
  };
  using Emit = std::function<void(const EventLine&)>;

  virtual ~EventSource() = default;

  // Stable name: the `source` label of the pipeline's metrics and of shipped records ("kmsg", "file").
  virtual std::string_view Name() const = 0;

  // Reads what is available now, calls `emit` once per line in order, then checkpoints. Returns Ok, or the
  // error of this poll (cannot open, read failure, checkpoint not written): lines already emitted stay
  // emitted; the pipeline counts the error, logs it when its message changes, and polls again.
  virtual Status Poll(const Emit& emit) = 0;

  // The totals above as of the last Poll() (pipeline thread only, like Poll()).
  virtual Counters counters() const = 0;

  // Appends the families that only this kind of source has (kmsg overruns, file rotations); none by
  // default. Every family appended must be in the source's registry entry's description.
  virtual void AppendMetrics(std::vector<MetricFamily>& out) const { (void)out; }
};

}  // namespace gpuscope
