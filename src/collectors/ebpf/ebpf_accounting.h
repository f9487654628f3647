// EbpfAccounting: what the eBPF programs' records mean per job. It decodes each record (src/ebpf/programs/
// records.h), ties its process to a job through the caller's lookup (the process's cgroup, never its
// name), keeps the sums the ebpf collector exports, and raises the events of the design
// (docs/design/ebpf.md): ebpf_unexpected_connection, ebpf_foreign_file_access, ebpf_cuda_allocation_failure,
// each at most once a minute per subject so a loop cannot flood the event path.
//
// No I/O of its own: the records, the read/write sums, the job and user lookups and whether a process still
// lives all come from the caller, so it is tested without a kernel.
//
// Thread-safety: not thread-safe; one owner thread (the collector's Collect()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/ebpf/programs/records.h"
#include "src/parsers/allow_list.h"

namespace gpuscope {

// What the accounting found worth an event (the agent hands it to the event path's "ebpf" source as a
// warning; the collector does not reach into the event path itself).
struct EbpfNotice {
  std::string
      event_class;      // ebpf_unexpected_connection, ebpf_foreign_file_access, ebpf_cuda_allocation_failure
  std::string summary;  // one human line
  std::vector<std::pair<std::string, std::string>> fields;  // job_id, pid, process, process_user, ...
  int64_t time_unix_ns = 0;

  std::string_view Field(std::string_view key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    return {};
  }
};

class EbpfAccounting {
 public:
  struct Options {
    std::vector<std::string> watch_dirs;  // the `dir` label, by the records' directory index
    std::vector<AllowRule> allow;         // empty: no connection is unexpected
    // Distinct destinations per job in gpuscope_ebpf_unexpected_connections_total before "other".
    size_t max_destinations_per_job = 64;
    int64_t event_repeat_ns = 60'000'000'000;  // one event per subject per this
    // A job with no live process and no record for this long leaves the families.
    int64_t job_idle_ns = 15LL * 60 * 1'000'000'000;
  };
  struct Hooks {
    // The Slurm job of a process ("" when in none): its own cgroup's, else, when it has exited already,
    // its parent's (`ppid`, 0 when unknown). Called once per process (cached until it ends).
    std::function<std::string(uint32_t tgid, uint32_t ppid)> job_of;
    // The user name of a uid ("" when unknown: the uid itself is used). Cached here.
    std::function<std::string(uint32_t uid)> user_of;
    // Whether a process still runs.
    std::function<bool(uint32_t tgid)> alive;
    // Where the events go; may be empty (no events).
    std::function<void(EbpfNotice)> post;
  };

  EbpfAccounting(Options options, Hooks hooks);

  // One record from a ring; a record of an unknown kind or a wrong size is counted, never read.
  void OnRecord(const void* data, size_t size, int64_t now_unix_ns);
  // The files program's read/write sums as of now (each key's running total since it appeared).
  void OnIo(const std::vector<std::pair<gpuscope_io_key, gpuscope_io_value>>& sums, int64_t now_unix_ns);
  // Forgets processes that ended (their live CUDA memory, their cached job) and jobs idle for
  // job_idle_ns. Returns the read/write keys of ended processes, whose sums the caller may delete.
  std::vector<gpuscope_io_key> Sweep(int64_t now_unix_ns);

  // The families of docs/design/ebpf.md that come from records (not the programs' own state).
  void AppendFamilies(std::vector<MetricFamily>& out) const;
  static std::vector<MetricDescription> Describe();

  uint64_t malformed_records() const { return malformed_records_; }
  size_t processes() const { return processes_.size(); }

 private:
  struct Process {
    std::string job;
    bool job_known = false;
    uint64_t live_bytes = 0;
    std::unordered_map<uint64_t, uint64_t> allocations;  // device pointer -> bytes
  };
  struct JobCounters {
    int64_t last_activity_ns = 0;
    uint64_t allocations = 0;
    uint64_t allocated_bytes = 0;
    uint64_t frees = 0;
    std::map<std::string, uint64_t> failures;                       // CUresult name ->
    std::map<std::pair<std::string, bool>, uint64_t> connections;   // (family, allowed) ->
    std::map<std::string, uint64_t> unexpected;                     // destination ->
    std::map<std::pair<std::string, std::string>, uint64_t> opens;  // (dir, user) ->
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t>
        foreign_opens;                                                 // (dir, user, owner)
    std::map<std::string, double> read_bytes, written_bytes;           // dir ->
    std::map<std::pair<std::string, std::string>, double> io_seconds;  // (dir, op) ->
  };

  Process& ProcessOf(uint32_t tgid, uint32_t ppid);
  JobCounters& JobOf(const std::string& job, int64_t now_unix_ns);
  std::string User(uint32_t uid);
  std::string Dir(uint32_t index) const;
  // Whether an event about `subject` may be raised now (and notes that it was).
  bool MayRaise(const std::string& subject, int64_t now_unix_ns);
  void Raise(std::string event_class, std::string summary,
             std::vector<std::pair<std::string, std::string>> fields, int64_t now_unix_ns);

  void OnCuda(const gpuscope_cuda_record& r, int64_t now_unix_ns);
  void OnConnect(const gpuscope_connect_record& r, int64_t now_unix_ns);
  void OnFileOpen(const gpuscope_file_open_record& r, int64_t now_unix_ns);

  const Options options_;
  const Hooks hooks_;
  std::unordered_map<uint32_t, Process> processes_;  // by tgid
  std::map<std::string, JobCounters> jobs_;          // by job id ("" for processes in none)
  std::unordered_map<uint32_t, std::string> users_;
  std::map<gpuscope_io_key, gpuscope_io_value, bool (*)(const gpuscope_io_key&, const gpuscope_io_key&)>
      io_seen_;
  std::unordered_map<std::string, int64_t> raised_;  // subject -> last raised
  uint64_t malformed_records_ = 0;
};

// The name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), or "CUresult_<n>" for one not listed.
std::string CudaResultName(int32_t result);

}  // namespace gpuscope
