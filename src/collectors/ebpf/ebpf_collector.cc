#include "src/collectors/ebpf/ebpf_collector.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <cstring>
#include <utility>

#include "src/core/log.h"
#include "src/node/node_state.h"
#include "src/parsers/proc_cgroup.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"
#include "src/platform/users.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxCgroupBytes = 64 * 1024;
constexpr size_t kMaxMapsBytes = 16 << 20;  // a PyTorch process maps a few thousand files

int64_t NowUnixNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The libcuda.so paths in one /proc/<pid>/maps ("... /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15").
std::vector<std::string> CudaLibrariesIn(std::string_view maps) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < maps.size()) {
    size_t end = maps.find('\n', start);
    if (end == std::string_view::npos) end = maps.size();
    const std::string_view line = maps.substr(start, end - start);
    start = end + 1;
    const size_t slash = line.find('/');
    if (slash == std::string_view::npos) continue;
    std::string_view path = line.substr(slash);
    if (path.ends_with(" (deleted)")) continue;  // replaced on disk (a driver upgrade): nothing to probe
    const size_t base = path.rfind('/');
    if (!path.substr(base + 1).starts_with("libcuda.so")) continue;
    if (out.empty() || out.back() != path) out.emplace_back(path);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& EbpfCollector::StandardCudaLibraries() {
  static const std::vector<std::string> paths = {
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1",   // Debian, Ubuntu
      "/usr/lib64/libcuda.so.1",                  // RHEL, SLES
      "/usr/lib/aarch64-linux-gnu/libcuda.so.1",  // Grace (arm64) nodes
      "/usr/lib/libcuda.so.1",
  };
  return paths;
}

EbpfCollector::EbpfCollector(EbpfCollectorOptions options) : options_(std::move(options)) {}

EbpfCollector::~EbpfCollector() = default;

std::string ProcessJob(const std::string& procfs, const NodeState* node, uint32_t tgid, uint32_t ppid) {
  std::string cgroup;
  // The process's own cgroup; when it has exited before its record was read, its parent's (a child
  // inherits its parent's cgroup: a job's curl or scp started by the job's shell or Python).
  for (const uint32_t pid : {tgid, ppid}) {
    if (pid == 0) continue;
    if (ReadFileInto(procfs + "/" + std::to_string(pid) + "/cgroup", &cgroup, kMaxCgroupBytes) != 0) continue;
    if (const std::optional<SlurmCgroup> slurm = ParseProcCgroup(cgroup)) return slurm->job_id;
    break;  // in no job's cgroup: the node state may still know it (below)
  }
  // A GPU process attribution tied to a job some other way (environ, where Slurm's cgroup plugins are off).
  if (node != nullptr) {
    const auto processes = node->gpu_processes().Current();
    for (const GpuProcessRef& process : *processes) {
      if ((process.pid == tgid || (ppid != 0 && process.pid == ppid)) && !process.hpc_job.empty())
        return process.hpc_job;
    }
  }
  return "";
}

std::string EbpfCollector::JobOf(uint32_t tgid, uint32_t ppid) const {
  return ProcessJob(options_.procfs, options_.node, tgid, ppid);
}

bool EbpfCollector::Alive(uint32_t tgid) const {
  struct stat st {};
  return ::stat((options_.procfs + "/" + std::to_string(tgid)).c_str(), &st) == 0;
}

void EbpfCollector::Start() {
  programs_ = std::make_unique<EbpfPrograms>(options_.programs);
  programs_->Load();
  EbpfAccounting::Options a;
  a.watch_dirs = options_.programs.watch_dirs;
  a.allow = options_.allow;
  EbpfAccounting::Hooks hooks;
  hooks.job_of = [this](uint32_t tgid, uint32_t ppid) { return JobOf(tgid, ppid); };
  hooks.user_of = [](uint32_t uid) { return UserNameOf(uid); };
  hooks.alive = [this](uint32_t tgid) { return Alive(tgid); };
  hooks.post = options_.post;
  accounting_ = std::make_unique<EbpfAccounting>(std::move(a), std::move(hooks));
  for (size_t p = 0; p < kEbpfProgramCount; ++p) {
    const auto program = static_cast<EbpfProgram>(p);
    const EbpfPrograms::ProgramState& state = programs_->state(program);
    if (state.requested && state.loaded)
      Log(LogLevel::kInfo, "ebpf program loaded", {{"program", EbpfProgramName(program)}});
  }
  if (!programs_->state(EbpfProgram::kCuda).loaded) return;
  for (const std::string& path : options_.cuda_libraries) AttachCuda(path, true);
  for (const std::string& path : StandardCudaLibraries()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) AttachCuda(path, false);
  }
}

void EbpfCollector::AttachCuda(const std::string& path, bool configured) {
  auto [it, fresh] = cuda_paths_tried_.emplace(path, false);
  if (!fresh && it->second) return;
  if (!fresh && !configured) return;  // failed once: not again for every process that maps it
  const Status status = programs_->AttachCudaLibrary(path);
  it->second = status.ok();
  if (status.ok()) {
    Log(LogLevel::kInfo, "ebpf cuda probes attached", {{"library", path}});
  } else {
    Log(LogLevel::kWarn, "ebpf cuda probes not attached", {{"library", path}, {"error", status.message()}});
  }
}

void EbpfCollector::DiscoverCudaLibraries() {
  const auto now = std::chrono::steady_clock::now();
  std::map<uint32_t, MapsRead> listed;
  DIR* dir = opendir(options_.procfs.c_str());
  if (dir == nullptr) return;
  std::string maps;
  while (dirent* entry = readdir(dir)) {
    const std::optional<uint32_t> pid = text::ParseWhole<uint32_t>(entry->d_name);
    if (!pid) continue;
    auto seen = maps_read_.find(*pid);
    if (seen != maps_read_.end() && (seen->second.found || now - seen->second.when < options_.maps_rescan)) {
      listed.emplace(*pid, seen->second);
      continue;
    }
    MapsRead& read = listed[*pid];
    read.when = now;
    const std::string base = options_.procfs + "/" + entry->d_name;
    if (ReadFileInto(base + "/maps", &maps, kMaxMapsBytes) != 0) continue;  // gone, or a kernel thread
    for (const std::string& library : CudaLibrariesIn(maps)) {
      read.found = true;
      // Through the process's own root: the same file when it lives in a container's mount namespace.
      std::string path = base;
      path.append("/root").append(library);
      if (programs_->CudaLibraryAttached(path)) continue;
      AttachCuda(path, false);
    }
  }
  closedir(dir);
  maps_read_ = std::move(listed);
}

Status EbpfCollector::Collect(std::vector<MetricFamily>& out) {
  if (!programs_) Start();
  const int64_t now = NowUnixNs();
  if (programs_->state(EbpfProgram::kCuda).loaded) DiscoverCudaLibraries();
  programs_->RefreshWatchDirs();
  programs_->Consume([&](const void* data, size_t size) {
    uint32_t kind = 0;
    if (size >= sizeof(kind)) std::memcpy(&kind, data, sizeof(kind));
    const EbpfProgram program = kind == GPUSCOPE_RECORD_CONNECT     ? EbpfProgram::kConnect
                                : kind == GPUSCOPE_RECORD_FILE_OPEN ? EbpfProgram::kFiles
                                                                    : EbpfProgram::kCuda;
    ++records_[static_cast<size_t>(program)];
    accounting_->OnRecord(data, size, now);
  });
  accounting_->OnIo(programs_->ReadIo(), now);
  for (const gpuscope_io_key& key : accounting_->Sweep(now)) programs_->DeleteIo(key);
  AppendProgramFamilies(out);
  accounting_->AppendFamilies(out);
  return Status::Ok();
}

std::vector<MetricDescription> EbpfCollector::Describe() const {
  const MetricType C = MetricType::kCounter;
  const MetricType G = MetricType::kGauge;
  std::vector<MetricDescription> out = {
      {"gpuscope_ebpf_program_loaded",
       G,
       "1 when the BPF program is loaded and attached (cuda: loaded, attached per library), 0 when the "
       "kernel refused it (the log says why); only the programs --ebpf.programs names.",
       "",
       {"program"},
       "libbpf"},
      {"gpuscope_ebpf_program_errors_total",
       C,
       "BPF program load and attach failures, by stage.",
       "",
       {"program", "stage"},
       "libbpf"},
      {"gpuscope_ebpf_records_total",
       C,
       "Records read from the BPF program's ring buffer.",
       "",
       {"program"},
       "the programs' ring buffers"},
      {"gpuscope_ebpf_records_lost_total",
       C,
       "Records the kernel dropped because the program's ring buffer was full.",
       "",
       {"program"},
       "the programs' lost-record counters"},
      {"gpuscope_ebpf_cuda_libraries",
       G,
       "Distinct libcuda.so files the cuda program's uprobes are attached to.",
       "",
       {},
       "libbpf uprobe attach by file"},
  };
  for (MetricDescription& d : EbpfAccounting::Describe()) out.push_back(std::move(d));
  return out;
}

void EbpfCollector::AppendProgramFamilies(std::vector<MetricFamily>& out) const {
  const std::vector<MetricDescription> d = Describe();

  MetricFamily loaded = FamilyOf(d[0]);
  MetricFamily errors = FamilyOf(d[1]);
  MetricFamily records = FamilyOf(d[2]);
  MetricFamily lost = FamilyOf(d[3]);
  for (size_t p = 0; p < kEbpfProgramCount; ++p) {
    const auto program = static_cast<EbpfProgram>(p);
    const EbpfPrograms::ProgramState& state = programs_->state(program);
    if (!state.requested) continue;
    const std::string name(EbpfProgramName(program));
    loaded.samples.push_back(Sample{{{"program", name}}, state.loaded ? 1.0 : 0.0});
    errors.samples.push_back(
        Sample{{{"program", name}, {"stage", "load"}}, static_cast<double>(state.load_errors)});
    errors.samples.push_back(
        Sample{{{"program", name}, {"stage", "attach"}}, static_cast<double>(state.attach_errors)});
    records.samples.push_back(Sample{{{"program", name}}, static_cast<double>(records_[p])});
    lost.samples.push_back(Sample{{{"program", name}}, static_cast<double>(programs_->Lost(program))});
  }
  out.push_back(std::move(loaded));
  out.push_back(std::move(errors));
  out.push_back(std::move(records));
  out.push_back(std::move(lost));
  MetricFamily libraries = FamilyOf(d[4]);
  libraries.samples.push_back(Sample{{}, static_cast<double>(programs_->cuda_libraries())});
  out.push_back(std::move(libraries));
}

}  // namespace gpuscope
