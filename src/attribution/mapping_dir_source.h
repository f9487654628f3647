// MappingDirSource: feeds the JobTable from a job mapping directory (--hpc-job-mapping-dir), the files a
// Slurm prolog writes per GPU (dcgm-exporter, Princeton jobstats, AMD exporter formats) and gpuscope's
// own per-job record (deploy/slurm/prolog.sh). A thread watches the directory with inotify and, after a
// short debounce, re-reads the whole directory into one AttributionUpdate published with
// JobTable::Update(kMapping, ...). Nothing is read on the scrape path.
//
// Hostile or broken input is ignored with a logged reason (once per file and reason) and counted in
// gpuscope_attribution_mapping_files_ignored_total{reason}: names that are not GPU keys or records,
// symlinks (never followed: O_NOFOLLOW), FIFOs, devices and directories (regular files only), files over
// 64 KiB, binary content, invalid job ids. A file whose last line lacks '\n' and that changed less than
// `settle` ago is taken as being written by a non-atomic writer: its previous content is kept and the
// directory is re-read once it has settled. When the directory is missing or disappears, the source
// publishes an empty update, polls for it every `dir_poll` and re-arms the watch when it comes back.
//
// Files named by an NVML UUID (Princeton jobstats' "GPU-<uuid>" next to the index file, and
// "MIG-<uuid>" on MIG) are turned into JobTable keys ("3", "3.1") through the GpuDirectory. A UUID that
// no GPU of this node shows yet (the mapping source starts before the first GPU cycle; a GPU that has
// not been opened) is kept, counted in gpuscope_attribution_mapping_files_unresolved, and applied as
// soon as the GpuDirectory changes to show it: while such files exist the thread looks at the
// directory's version every `dir_poll` and re-scans when it changed.
//
// Thread-safety: Start() and Stop() from one owning thread; SelfMetrics() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/node/gpu_directory.h"
#include "src/node/job_table.h"

namespace gpuscope {

struct MappingDirOptions {
  // Which format GPU-key files ("3", "3.1") are in; "gpuscope-job.<id>" records are always read.
  enum class Format { kAuto, kDcgm, kJobstats, kAmd };
  Format format = Format::kAuto;
  std::chrono::milliseconds debounce{100};   // delay between the first event and the re-scan
  std::chrono::milliseconds dir_poll{1000};  // how often a missing directory is looked for
  std::chrono::milliseconds settle{2000};    // age after which an unterminated file is taken as complete
  // Resolves files named by a GPU or MIG UUID; must outlive the source. Null: such files stay unresolved.
  const GpuDirectory* gpus = nullptr;
};

// Parses "auto", "dcgm", "jobstats", "amd"; returns false (and leaves *format alone) otherwise.
bool ParseMappingFormatOption(std::string_view name, MappingDirOptions::Format* format);

class MappingDirSource {
 public:
  // `table` must outlive this object.
  MappingDirSource(std::string dir, JobTable* table, MappingDirOptions options = {});
  ~MappingDirSource();  // calls Stop()
  MappingDirSource(const MappingDirSource&) = delete;
  MappingDirSource& operator=(const MappingDirSource&) = delete;

  // Starts the watching thread, which scans the directory at once when it exists. Returns Internal when
  // inotify or the wake-up pipe cannot be created (nothing started); a missing directory is not an error.
  Status Start();
  // Stops and joins the thread; returns promptly (the thread waits in poll() on a wake-up pipe). Safe to
  // call twice or without Start().
  void Stop();

  // gpuscope_attribution_mapping_files{format}, gpuscope_attribution_mapping_files_ignored_total{reason},
  // gpuscope_attribution_mapping_files_unresolved, gpuscope_attribution_mapping_dir_present,
  // gpuscope_attribution_mapping_scans_total.
  std::vector<MetricFamily> SelfMetrics() const;

  // Reads the directory once, synchronously, and publishes the result (what the thread does after each
  // debounce). Returns the number of re-scans still wanted (> 0 when some file had not settled).
  // Exposed for callers that want a scan without a thread (e.g. a one-shot CLI); must not run
  // concurrently with the thread.
  int ScanNow();

 private:
  struct FileState {
    std::string reason;      // last ignore reason logged for this file ("" = accepted)
    AttributionUpdate last;  // last accepted content, kept while a rewrite settles
    std::string format;      // format of `last`
    std::string uuid;        // the file's name when it is a GPU or MIG UUID (`last` is keyed by it)
  };

  // The union of a scan's accepted files, as the JobTable gets it, and what the metrics report of it.
  struct MergedFiles {
    AttributionUpdate update;
    std::map<std::string, uint64_t> counts;  // accepted files by format
    size_t uuid_files = 0;                   // files named by a UUID
    uint64_t unresolved = 0;                 // of those, the ones whose GPU is not in the directory yet
  };

  void Run();
  void PublishEmptyIfPresent();
  // Reads and parses one directory entry into `next`; false when it had not settled (scan again).
  bool ScanEntry(int dir_fd, const std::string& name, std::map<std::string, FileState>* next);
  MergedFiles Merge(const std::map<std::string, FileState>& files) const;
  void Ignore(const std::string& name, std::string_view reason, std::string_view detail,
              std::map<std::string, FileState>* next);

  const std::string dir_;
  JobTable* const table_;
  const MappingDirOptions options_;

  int inotify_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Owned by the scanning thread.
  std::map<std::string, FileState> files_;
  bool published_once_ = false;
  AttributionUpdate last_published_;
  size_t uuid_files_ = 0;           // files named by a UUID in the last scan
  uint64_t gpus_version_seen_ = 0;  // options_.gpus->Version() the last scan resolved them with

  mutable Mutex metrics_mu_;
  std::map<std::string, uint64_t> ignored_total_ GUARDED_BY(metrics_mu_);  // by reason
  std::map<std::string, uint64_t> files_by_format_ GUARDED_BY(metrics_mu_);
  bool dir_present_ GUARDED_BY(metrics_mu_) = false;
  uint64_t scans_total_ GUARDED_BY(metrics_mu_) = 0;
  uint64_t unresolved_ GUARDED_BY(metrics_mu_) = 0;
};

}  // namespace gpuscope
