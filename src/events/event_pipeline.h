// EventPipeline: the event path of the agent. One thread polls the configured sources (/dev/kmsg by
// sequence, log files by glob through rotation, the systemd journal by cursor), classifies every line
// (kernel family: XID, SXid, OOM, Slurm interruptions; job family: NCCL, IB completion errors, PyTorch
// watchdog timeouts, CUDA errors and OOM), attributes each event to a GPU and a job, counts it, feeds
// kernel-log XIDs into the XidLedger (merged there with NVML's), and hands events at or above the ship
// severity to `ship` (the agent binds it to the durable queue of the push sinks).
//
// Sources checkpoint their own positions after each poll; `ship` runs before that, so a crash at any
// point re-reads (duplicates) rather than loses. Lines longer than max_line_bytes are cut with a marker
// and counted. A source that cannot be opened is retried every poll and counted; it never stops the
// others.
//
// Thread-safety: Start/Stop from one owner thread; PollOnce from the pipeline thread (or a test, without
// Start); Metrics()/Describe() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "src/core/metric.h"
#include "src/core/status.h"
#include "src/events/event_record.h"

namespace gpuscope {

class FileTailer;
class GpuDirectory;
class JobTable;
class JournalReader;
class KmsgReader;
class XidLedger;

struct EventPipelineOptions {
  std::string host;                          // the node's name, on every record
  std::string kmsg_path;                     // empty: no kernel log from kmsg (/dev/kmsg on a node)
  std::vector<std::string> file_globs;       // job outputs, the slurmd log, a kernel log file
  bool journal = false;                      // read the systemd journal
  std::string journal_directory;             // empty: the system journal
  std::vector<std::string> journal_matches;  // e.g. "_TRANSPORT=kernel"; empty: every entry
  std::string state_dir;  // checkpoints (kmsg.seq, files.checkpoint, journal.cursor); empty: none
  size_t max_line_bytes = 64 * 1024;
  std::chrono::milliseconds poll_interval{250};
  EventSeverity ship_severity = EventSeverity::kInfo;  // events below it are counted, not shipped
  // Hands one event to the sinks; a non-ok status counts it as not shipped (reason="queue").
  std::function<Status(const EventRecord&)> ship;
  // Called after each poll that shipped something (e.g. sync the queue, wake the senders).
  std::function<void()> flush;
  // Test seams: clocks (Unix ns, CLOCK_MONOTONIC ns).
  std::function<int64_t()> now_unix_ns;
  std::function<int64_t()> now_monotonic_ns;
};

class EventPipeline {
 public:
  // `ledger`, `jobs` and `gpus` may be null and must outlive the pipeline.
  EventPipeline(EventPipelineOptions options, XidLedger* ledger, const JobTable* jobs,
                const GpuDirectory* gpus);
  ~EventPipeline();
  EventPipeline(const EventPipeline&) = delete;
  EventPipeline& operator=(const EventPipeline&) = delete;

  // Starts the polling thread. InvalidArgument when no source is configured.
  Status Start();
  // Stops the thread after its current poll (sources keep their checkpoints).
  void Stop();

  // One poll of every source. Public for tests and the benchmark.
  void PollOnce();

  // Classifies one line as the pipeline does for `source` ("kmsg", "file", "journal") and processes it
  // (event counters, ledger, ship). `origin` is the file path for "file". `time_unix_ns` 0: now. The
  // line itself is counted by the polls (per batch, off the per-line path), not here.
  void ProcessLine(std::string_view source, std::string_view origin, std::string_view line,
                   int64_t time_unix_ns, bool kernel_only);

  std::vector<MetricFamily> Metrics() const;
  static std::vector<MetricDescription> Describe();

 private:
  struct SourceCounters {
    uint64_t lines = 0;
    uint64_t truncated = 0;
    uint64_t errors = 0;
  };
  void Run();
  void PollKmsg();
  void PollFiles();
  void PollJournal();
  void SourceError(const std::string& source, const Status& status);
  int64_t NowUnixNs() const;

  EventPipelineOptions options_;
  XidLedger* ledger_;
  const JobTable* jobs_;
  const GpuDirectory* gpus_;

  std::unique_ptr<KmsgReader> kmsg_;
  bool kmsg_open_ = false;
  std::unique_ptr<FileTailer> files_;
  std::unique_ptr<JournalReader> journal_;
  bool shipped_this_poll_ = false;

  mutable std::mutex mu_;  // guards the counters below
  std::map<std::string, SourceCounters> sources_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> events_;  // (source, class, severity)
  std::map<std::string, double> last_seen_;                                       // class -> Unix seconds
  std::map<std::string, uint64_t> not_shipped_;                                   // reason -> events
  uint64_t shipped_ = 0;
  uint64_t kmsg_overruns_ = 0, kmsg_missed_ = 0, file_rotations_ = 0, file_truncations_ = 0;
  std::map<std::string, std::string> last_error_;  // source -> message, to log changes once

  std::thread thread_;
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  bool stop_ = false;  // guarded by wait_mu_
};

}  // namespace gpuscope
