// EventPipeline: the event path of the agent. One thread polls the sources it is given (EventSource,
// src/events/event_source.h: /dev/kmsg, log files, the systemd journal, ...), classifies every line
// (kernel family: XID, SXid, OOM, Slurm interruptions; job family: NCCL, IB completion errors, PyTorch
// watchdog timeouts, CUDA errors and OOM; a kernel-only line gets the kernel family only; a line that comes
// with its event, from the agent's own detectors, is not classified again), attributes each
// event to a GPU and a job, counts it, feeds kernel-log XIDs into the XidLedger (merged there with
// NVML's), and hands events at or above the ship severity to `ship` (the agent binds it to the durable
// queue of the push sinks).
//
// Sources checkpoint their own positions after each poll; `ship` runs before that, so a crash at any
// point re-reads (duplicates) rather than loses. Lines longer than max_line_bytes are cut with a marker.
// Lines, truncated lines and errors are counted per source (label source=Name()). A source whose poll
// fails is counted and logged (once per change of its message) and polled again; it never stops the
// others.
//
// Thread-safety: Start/Stop from one owner thread; PollOnce from the pipeline thread (or a test, without
// Start); Metrics()/Describe() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/events/event_record.h"
#include "src/events/event_source.h"

namespace gpuscope {

class GpuDirectory;
class JobTable;
class XidLedger;

struct EventPipelineOptions {
  std::string host;                                   // the node's name, on every record
  std::vector<std::unique_ptr<EventSource>> sources;  // polled in this order; names must differ
  size_t max_line_bytes = 64 * 1024;
  std::chrono::milliseconds poll_interval{250};
  EventSeverity ship_severity = EventSeverity::kInfo;  // events below it are counted, not shipped
  // Hands one event to the sinks; a non-ok status counts it as not shipped (reason="queue").
  std::function<Status(const EventRecord&)> ship;
  // Called after each poll that shipped something (e.g. sync the queue, wake the senders).
  std::function<void()> flush;
  // Test seam: the clock (Unix ns) that stamps lines without a time of their own.
  std::function<int64_t()> now_unix_ns;
};

class EventPipeline {
 public:
  // `ledger`, `jobs` and `gpus` may be null and must outlive the pipeline.
  EventPipeline(EventPipelineOptions options, XidLedger* ledger, const JobTable* jobs,
                const GpuDirectory* gpus);
  ~EventPipeline();
  EventPipeline(const EventPipeline&) = delete;
  EventPipeline& operator=(const EventPipeline&) = delete;

  // Starts the polling thread. InvalidArgument when no source is given or two share a name.
  Status Start();
  // Stops the thread after its current poll (sources keep their checkpoints).
  void Stop();

  // One poll of every source. Public for tests and the benchmark.
  void PollOnce();

  // Classifies one line of `source` (its Name()) and processes it (event counters, ledger, ship). The
  // line itself is counted by the polls (per batch, off the per-line path), not here.
  void ProcessLine(std::string_view source, const EventLine& line);

  // The pipeline's families, then each source's own (EventSource::AppendMetrics).
  std::vector<MetricFamily> Metrics() const;
  // The pipeline's own families (not the sources' own).
  static std::vector<MetricDescription> Describe();

 private:
  struct SourceCounters {
    uint64_t lines = 0;
    uint64_t poll_errors = 0;      // failed polls
    EventSource::Counters source;  // the source's own totals, as of its last poll
  };
  void Run();
  void PollSource(EventSource& source);
  void SourceError(const std::string& source, const Status& status);
  int64_t NowUnixNs() const;

  EventPipelineOptions options_;
  XidLedger* ledger_;
  const JobTable* jobs_;
  const GpuDirectory* gpus_;

  bool shipped_this_poll_ = false;

  mutable Mutex mu_;  // guards the counters below
  std::map<std::string, SourceCounters, std::less<>> sources_ GUARDED_BY(mu_);
  // (source, class, severity) -> events
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> events_ GUARDED_BY(mu_);
  std::map<std::string, double> last_seen_ GUARDED_BY(mu_);      // class -> Unix seconds
  std::map<std::string, uint64_t> not_shipped_ GUARDED_BY(mu_);  // reason -> events
  uint64_t shipped_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> last_error_ GUARDED_BY(mu_);  // source -> message, to log changes once

  std::thread thread_;
  Mutex wait_mu_;
  CondVar wait_cv_;
  bool stop_ GUARDED_BY(wait_mu_) = false;
};

}  // namespace gpuscope
