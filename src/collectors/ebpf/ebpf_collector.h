// EbpfCollector: the `ebpf` collector (--ebpf). At its first cycle it loads the BPF programs
// (src/ebpf/ebpf_programs.h: cuda, connect, files, each optional), then every cycle it
//   - probes each libcuda.so it finds: the standard driver paths and --ebpf.cuda-library at start, then
//     the libraries in the processes' maps (/proc/<pid>/maps, opened through /proc/<pid>/root so a
//     container's copy is found too); a new process is read at once, then again every 10 s until it maps one
//     (a process may load libcuda long after it starts); uprobes are per file, so one attach covers every
//     process mapping that file, those started later included;
//   - re-reads the watched directories (one created or replaced since is watched from then on);
//   - drains the programs' rings into EbpfAccounting (per-job sums and events), with each process tied to
//     its Slurm job by /proc/<pid>/cgroup (never by its name; the parent's when it has exited), else by the
//     node state's GPU processes (attribution's job of a GPU process, environ included), and reads the
//     files program's read/write sums;
//   - forgets ended processes, and appends the families of docs/design/ebpf.md.
// A program the kernel refuses is reported (gpuscope_ebpf_program_loaded 0, the log) and the others go on:
// the collector never fails a cycle for it and never turns /healthz unhealthy.
//
// Thread-safety: as Collector (Collect() from the scheduler thread only).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/collectors/ebpf/ebpf_accounting.h"
#include "src/core/collector.h"
#include "src/ebpf/ebpf_programs.h"

namespace gpuscope {

class NodeState;

struct EbpfCollectorOptions {
  EbpfPrograms::Options programs;
  std::vector<AllowRule> allow;
  std::vector<std::string> cuda_libraries;  // probed at start beside the standard driver paths
  std::string procfs = "/proc";
  // The node's GPU processes with their jobs (as attribution tied them, /proc environ included where the
  // cgroup names no job); consulted for a process whose cgroup names none. May be null.
  const NodeState* node = nullptr;
  // How often a known process's maps are read again. A library found this way is probed from then on:
  // what a process allocated before is not seen (the driver's standard paths are probed from the start).
  std::chrono::seconds maps_rescan{10};
  // Where events go (the event path's "ebpf" source); may be empty.
  std::function<void(EbpfNotice)> post;
};

// The Slurm job the collector ties a process to: the job of <procfs>/<tgid>/cgroup; when the process has
// exited, of its parent's (`ppid`, 0 when unknown); when neither cgroup names a job, the job attribution
// gave that GPU process in `node`'s GPU process table (may be null). "" when none.
std::string ProcessJob(const std::string& procfs, const NodeState* node, uint32_t tgid, uint32_t ppid);

class EbpfCollector final : public Collector {
 public:
  explicit EbpfCollector(EbpfCollectorOptions options);
  ~EbpfCollector() override;

  std::string_view Name() const override { return "ebpf"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

  // The libcuda.so paths the standard driver packages install.
  static const std::vector<std::string>& StandardCudaLibraries();

 private:
  void Start();
  void AttachCuda(const std::string& path, bool configured);
  void DiscoverCudaLibraries();
  std::string JobOf(uint32_t tgid, uint32_t ppid) const;
  bool Alive(uint32_t tgid) const;
  void AppendProgramFamilies(std::vector<MetricFamily>& out) const;

  const EbpfCollectorOptions options_;
  std::unique_ptr<EbpfPrograms> programs_;  // created at the first Collect()
  std::unique_ptr<EbpfAccounting> accounting_;
  struct MapsRead {
    std::chrono::steady_clock::time_point when;
    bool found = false;  // it maps a libcuda (probed or tried): its maps are not read again
  };
  std::map<uint32_t, MapsRead> maps_read_;        // by pid, the processes listed at the last scan
  std::map<std::string, bool> cuda_paths_tried_;  // path -> attached
  uint64_t records_[kEbpfProgramCount] = {};
};

}  // namespace gpuscope
