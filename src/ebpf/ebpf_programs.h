// EbpfPrograms: loads the agent's BPF programs (src/ebpf/programs, libbpf CO-RE skeletons built with the
// agent), attaches them, and hands their records to the caller. Three programs, each optional and loaded
// on its own, so one the kernel refuses leaves the others working:
//   cuda     uprobes on libcuda's allocation and free entry points, attached per library file
//            (AttachCudaLibrary) rather than at load
//   connect  outbound TCP connects (tp_btf inet_sock_set_state)
//   files    opens, reads and writes below the watched directories (tp_btf sys_enter / sys_exit)
// A program that fails to open, load or attach is recorded in its ProgramState (and logged once), never
// fatal: the agent goes on without it.
//
// Relocations use the running kernel's BTF (/sys/kernel/btf/vmlinux), so one build runs on every kernel
// with BTF. Needs root, or CAP_BPF and CAP_PERFMON, plus CAP_SYS_ADMIN for the cuda program's uprobes
// (kernels from 6.16, and the stable series that took "perf: Revert to requiring CAP_SYS_ADMIN for
// uprobes", refuse a uprobe without it) and CAP_SYS_PTRACE to read other users' /proc/<pid>/maps and open
// their libraries through /proc/<pid>/root (deploy/systemd/examples/ebpf.conf). RLIMIT_MEMLOCK is not
// raised: kernels since 5.11 charge BPF memory to the cgroup instead.
//
// Thread-safety: not thread-safe; one owner thread (the ebpf collector's Collect()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/status.h"
#include "src/ebpf/programs/records.h"

struct ring_buffer;
struct bpf_link;
struct gpuscope_cuda;
struct gpuscope_connect;
struct gpuscope_files;

namespace gpuscope {

enum class EbpfProgram { kCuda = 0, kConnect = 1, kFiles = 2 };
inline constexpr size_t kEbpfProgramCount = 3;
// "cuda", "connect", "files": the program label and the words of --ebpf.programs.
std::string_view EbpfProgramName(EbpfProgram program);

class EbpfPrograms {
 public:
  struct Options {
    bool cuda = true;
    bool connect = true;
    bool files = true;
    // Watched directories in the order of the records' `dir` index (at most GPUSCOPE_MAX_WATCH_DIRS).
    std::vector<std::string> watch_dirs;
    // Each program's ring buffer (powers of two), sized for a second of records (the collector reads them
    // every second) at the rates of bench/results/ebpf_overhead.md with room to spare: a files record is
    // ~470 bytes (4.7 MB at 10,000 opens/s), a cuda one ~90 (1.8 MB at 10,000 allocations and frees/s),
    // connects are rare. The pages count in the agent's RSS once written.
    uint32_t cuda_ring_bytes = 4u << 20;
    uint32_t connect_ring_bytes = 1u << 20;
    uint32_t files_ring_bytes = 8u << 20;
  };

  struct ProgramState {
    bool requested = false;
    bool loaded = false;  // loaded and attached
    std::string error;    // why not, when requested and not loaded
    uint64_t load_errors = 0;
    uint64_t attach_errors = 0;  // includes per-library uprobe attach failures of cuda
  };

  explicit EbpfPrograms(Options options);
  ~EbpfPrograms();
  EbpfPrograms(const EbpfPrograms&) = delete;
  EbpfPrograms& operator=(const EbpfPrograms&) = delete;

  // Loads and attaches every requested program. Failures are recorded in state(), never returned.
  void Load();

  const ProgramState& state(EbpfProgram program) const { return states_[static_cast<size_t>(program)]; }

  // Attaches the cuda program to the library at `path` (a libcuda.so; the same file by another path is
  // attached once). Ok when cuMemAlloc_v2 and cuMemFree_v2 are probed (the other entry points when the
  // library has them); an error otherwise, counted in attach_errors. Unavailable when cuda is not loaded.
  Status AttachCudaLibrary(const std::string& path);
  size_t cuda_libraries() const { return cuda_libraries_.size(); }
  // Whether the file at `path` (by device and inode) is attached already.
  bool CudaLibraryAttached(const std::string& path) const;

  // Re-reads the watched directories' device and inode (a directory created or replaced since) into the
  // files program. Returns how many directories exist now.
  size_t RefreshWatchDirs();

  // Calls `handler` with every record waiting in the loaded programs' rings; returns how many.
  using Handler = std::function<void(const void* data, size_t size)>;
  size_t Consume(const Handler& handler);

  // Records the kernel dropped because the program's ring was full.
  uint64_t Lost(EbpfProgram program) const;

  // The files program's read and write sums, per (process, directory, operation), since each key's start.
  std::vector<std::pair<gpuscope_io_key, gpuscope_io_value>> ReadIo() const;
  // Forgets a key's sums (its process has ended and the caller has taken them).
  void DeleteIo(const gpuscope_io_key& key);

 private:
  void Fail(EbpfProgram program, std::string_view stage, int error);
  void LoadCuda();
  void LoadConnect();
  void LoadFiles();
  void AddRing(EbpfProgram program, int map_fd);
  static int OnRecord(void* context, void* data, size_t size);

  const Options options_;
  ProgramState states_[kEbpfProgramCount];
  gpuscope_cuda* cuda_ = nullptr;
  gpuscope_connect* connect_ = nullptr;
  gpuscope_files* files_ = nullptr;
  ring_buffer* rings_ = nullptr;
  const Handler* handler_ = nullptr;  // during Consume()
  // Attached library files by (device, inode), with their links.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<bpf_link*>> cuda_libraries_;
  std::vector<gpuscope_watch_key> watch_keys_;  // by directory index; inode 0 when absent
  std::map<uint32_t, int> watch_devs_;          // the file systems of watch_keys_ in the files program
};

}  // namespace gpuscope
