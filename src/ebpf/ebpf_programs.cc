#include "src/ebpf/ebpf_programs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "src/core/log.h"

// Generated at build time by bpftool from the programs in src/ebpf/programs (src/ebpf/CMakeLists.txt).
#include "connect.skel.h"
#include "cuda.skel.h"
#include "files.skel.h"

namespace gpuscope {
namespace {

// libbpf's own messages (verifier logs, relocation notes) go to the agent's log at debug level: the
// failure itself is reported once, at warn, by the loader.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || !LogEnabled(LogLevel::kDebug)) return 0;
  // Whole: a verifier log (why the kernel refused a program) runs to many kilobytes.
  va_list again;
  va_copy(again, args);
  const int n = vsnprintf(nullptr, 0, format, args);
  if (n < 0) {
    va_end(again);
    return 0;
  }
  std::string line(static_cast<size_t>(n) + 1, '\0');
  vsnprintf(line.data(), line.size(), format, again);
  va_end(again);
  line.resize(static_cast<size_t>(n));
  std::string_view text = line;
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  Log(LogLevel::kDebug, "libbpf", {{"message", text}});
  return 0;
}

// The device number as the kernel keeps it in super_block.s_dev (MKDEV), from stat(2)'s st_dev.
uint32_t KernelDev(dev_t dev) { return (major(dev) << 20) | minor(dev); }

struct CudaEntryPoint {
  const char* symbol;
  uint32_t call;
  bool allocation;
  bool required;
};

constexpr CudaEntryPoint kCudaEntryPoints[] = {
    {"cuMemAlloc_v2", GPUSCOPE_CUDA_MEM_ALLOC, true, true},
    {"cuMemAllocAsync", GPUSCOPE_CUDA_MEM_ALLOC_ASYNC, true, false},
    {"cuMemAllocManaged", GPUSCOPE_CUDA_MEM_ALLOC_MANAGED, true, false},
    {"cuMemFree_v2", GPUSCOPE_CUDA_MEM_FREE, false, true},
    {"cuMemFreeAsync", GPUSCOPE_CUDA_MEM_FREE_ASYNC, false, false},
};

}  // namespace

std::string_view EbpfProgramName(EbpfProgram program) {
  switch (program) {
    case EbpfProgram::kCuda:
      return "cuda";
    case EbpfProgram::kConnect:
      return "connect";
    case EbpfProgram::kFiles:
      return "files";
  }
  return "unknown";
}

EbpfPrograms::EbpfPrograms(Options options) : options_(std::move(options)) {
  states_[static_cast<size_t>(EbpfProgram::kCuda)].requested = options_.cuda;
  states_[static_cast<size_t>(EbpfProgram::kConnect)].requested = options_.connect;
  states_[static_cast<size_t>(EbpfProgram::kFiles)].requested = options_.files;
}

EbpfPrograms::~EbpfPrograms() {
  if (rings_ != nullptr) ring_buffer__free(rings_);
  for (auto& [file, links] : cuda_libraries_) {
    for (bpf_link* link : links) bpf_link__destroy(link);
  }
  if (cuda_ != nullptr) gpuscope_cuda::destroy(cuda_);
  if (connect_ != nullptr) gpuscope_connect::destroy(connect_);
  if (files_ != nullptr) gpuscope_files::destroy(files_);
}

void EbpfPrograms::Fail(EbpfProgram program, std::string_view stage, int error) {
  ProgramState& state = states_[static_cast<size_t>(program)];
  state.loaded = false;
  if (stage == "attach") {
    ++state.attach_errors;
  } else {
    ++state.load_errors;
  }
  state.error = std::string(stage) + ": " + std::strerror(error < 0 ? -error : error);
  Log(LogLevel::kWarn, "ebpf program not loaded; the agent goes on without it",
      {{"program", EbpfProgramName(program)},
       {"stage", stage},
       {"error", state.error},
       {"hint",
        "needs root (or CAP_BPF, CAP_PERFMON) and a kernel 5.17+ with BTF; --log.level debug shows "
        "libbpf's log"}});
}

void EbpfPrograms::AddRing(EbpfProgram program, int map_fd) {
  (void)program;
  if (rings_ == nullptr) {
    rings_ = ring_buffer__new(map_fd, &EbpfPrograms::OnRecord, this, nullptr);
  } else {
    ring_buffer__add(rings_, map_fd, &EbpfPrograms::OnRecord, this);
  }
}

void EbpfPrograms::Load() {
  libbpf_set_print(LibbpfPrint);
  if (options_.cuda) LoadCuda();
  if (options_.connect) LoadConnect();
  if (options_.files) LoadFiles();
}

void EbpfPrograms::LoadCuda() {
  cuda_ = gpuscope_cuda::open();
  if (cuda_ == nullptr) return Fail(EbpfProgram::kCuda, "open", errno);
  bpf_map__set_max_entries(cuda_->maps.records, options_.cuda_ring_bytes);
  if (int rc = gpuscope_cuda::load(cuda_); rc != 0) {
    gpuscope_cuda::destroy(cuda_);
    cuda_ = nullptr;
    return Fail(EbpfProgram::kCuda, "load", rc);
  }
  // Attached per library (AttachCudaLibrary); loaded means ready to attach.
  states_[static_cast<size_t>(EbpfProgram::kCuda)].loaded = true;
  AddRing(EbpfProgram::kCuda, bpf_map__fd(cuda_->maps.records));
}

void EbpfPrograms::LoadConnect() {
  connect_ = gpuscope_connect::open();
  if (connect_ == nullptr) return Fail(EbpfProgram::kConnect, "open", errno);
  bpf_map__set_max_entries(connect_->maps.records, options_.connect_ring_bytes);
  if (int rc = gpuscope_connect::load(connect_); rc != 0) {
    gpuscope_connect::destroy(connect_);
    connect_ = nullptr;
    return Fail(EbpfProgram::kConnect, "load", rc);
  }
  if (int rc = gpuscope_connect::attach(connect_); rc != 0) {
    gpuscope_connect::destroy(connect_);
    connect_ = nullptr;
    return Fail(EbpfProgram::kConnect, "attach", rc);
  }
  states_[static_cast<size_t>(EbpfProgram::kConnect)].loaded = true;
  AddRing(EbpfProgram::kConnect, bpf_map__fd(connect_->maps.records));
}

void EbpfPrograms::LoadFiles() {
  files_ = gpuscope_files::open();
  if (files_ == nullptr) return Fail(EbpfProgram::kFiles, "open", errno);
  bpf_map__set_max_entries(files_->maps.records, options_.files_ring_bytes);
  if (int rc = gpuscope_files::load(files_); rc != 0) {
    gpuscope_files::destroy(files_);
    files_ = nullptr;
    return Fail(EbpfProgram::kFiles, "load", rc);
  }
  watch_keys_.assign(std::min<size_t>(options_.watch_dirs.size(), GPUSCOPE_MAX_WATCH_DIRS),
                     gpuscope_watch_key{});
  RefreshWatchDirs();
  if (int rc = gpuscope_files::attach(files_); rc != 0) {
    gpuscope_files::destroy(files_);
    files_ = nullptr;
    return Fail(EbpfProgram::kFiles, "attach", rc);
  }
  states_[static_cast<size_t>(EbpfProgram::kFiles)].loaded = true;
  AddRing(EbpfProgram::kFiles, bpf_map__fd(files_->maps.records));
}

size_t EbpfPrograms::RefreshWatchDirs() {
  if (files_ == nullptr) return 0;
  const int map = bpf_map__fd(files_->maps.watched);
  size_t present = 0;
  for (size_t i = 0; i < watch_keys_.size(); ++i) {
    gpuscope_watch_key now{};
    struct stat st {};
    if (::stat(options_.watch_dirs[i].c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      now.inode = st.st_ino;
      now.dev = KernelDev(st.st_dev);
      ++present;
    }
    gpuscope_watch_key& was = watch_keys_[i];
    if (was.inode == now.inode && was.dev == now.dev) continue;
    if (was.inode != 0) bpf_map_delete_elem(map, &was);
    if (now.inode != 0) {
      const uint32_t index = static_cast<uint32_t>(i);
      bpf_map_update_elem(map, &now, &index, BPF_ANY);
    }
    was = now;
  }
  // The file systems that hold a watched directory, for the program's first test.
  std::map<uint32_t, int> devs;
  for (const gpuscope_watch_key& key : watch_keys_) {
    if (key.inode != 0) ++devs[key.dev];
  }
  const int devs_map = bpf_map__fd(files_->maps.watched_devs);
  for (const auto& [dev, n] : watch_devs_) {
    if (devs.count(dev) == 0) bpf_map_delete_elem(devs_map, &dev);
  }
  for (const auto& [dev, n] : devs) {
    const uint32_t count = static_cast<uint32_t>(n);
    if (watch_devs_.count(dev) == 0) bpf_map_update_elem(devs_map, &dev, &count, BPF_ANY);
  }
  watch_devs_ = std::move(devs);
  return present;
}

bool EbpfPrograms::CudaLibraryAttached(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return cuda_libraries_.count({st.st_dev, st.st_ino}) != 0;
}

Status EbpfPrograms::AttachCudaLibrary(const std::string& path) {
  if (cuda_ == nullptr) return Status::Unavailable("the cuda program is not loaded");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": " + std::strerror(errno));
  const std::pair<uint64_t, uint64_t> file{st.st_dev, st.st_ino};
  if (cuda_libraries_.count(file) != 0) return Status::Ok();
  std::vector<bpf_link*> links;
  std::string missing;
  int attach_errno = 0;
  for (const CudaEntryPoint& entry : kCudaEntryPoints) {
    bpf_uprobe_opts opts{};
    opts.sz = sizeof(opts);
    opts.bpf_cookie = entry.call;
    opts.func_name = entry.symbol;
    std::vector<std::pair<bpf_program*, bool>> probes;
    if (entry.allocation) {
      probes = {{cuda_->progs.cuda_alloc_enter, false}, {cuda_->progs.cuda_alloc_exit, true}};
    } else {
      probes = {{cuda_->progs.cuda_free, false}};
    }
    bool ok = true;
    std::vector<bpf_link*> these;
    for (const auto& [program, ret] : probes) {
      opts.retprobe = ret;
      bpf_link* link = bpf_program__attach_uprobe_opts(program, -1, path.c_str(), 0, &opts);
      if (link == nullptr) {
        attach_errno = errno;
        ok = false;
        break;
      }
      these.push_back(link);
    }
    if (!ok) {
      for (bpf_link* link : these) bpf_link__destroy(link);
      if (entry.required) missing += std::string(missing.empty() ? "" : ", ") + entry.symbol;
      continue;
    }
    links.insert(links.end(), these.begin(), these.end());
  }
  if (!missing.empty()) {
    for (bpf_link* link : links) bpf_link__destroy(link);
    ++states_[static_cast<size_t>(EbpfProgram::kCuda)].attach_errors;
    std::string why = std::strerror(attach_errno);
    // Kernels from 6.16 (and stable series with the same fix) want CAP_SYS_ADMIN for a uprobe.
    if (attach_errno == EPERM || attach_errno == EACCES)
      why += " (a uprobe needs CAP_SYS_ADMIN on this kernel)";
    return Status::NotFound(path + ": cannot probe " + missing + ": " + why);
  }
  cuda_libraries_[file] = std::move(links);
  return Status::Ok();
}

int EbpfPrograms::OnRecord(void* context, void* data, size_t size) {
  auto* self = static_cast<EbpfPrograms*>(context);
  if (self->handler_ != nullptr) (*self->handler_)(data, size);
  return 0;
}

size_t EbpfPrograms::Consume(const Handler& handler) {
  if (rings_ == nullptr) return 0;
  handler_ = &handler;
  const int n = ring_buffer__consume(rings_);
  handler_ = nullptr;
  return n > 0 ? static_cast<size_t>(n) : 0;
}

uint64_t EbpfPrograms::Lost(EbpfProgram program) const {
  bpf_map* map = nullptr;
  switch (program) {
    case EbpfProgram::kCuda:
      map = cuda_ != nullptr ? cuda_->maps.lost : nullptr;
      break;
    case EbpfProgram::kConnect:
      map = connect_ != nullptr ? connect_->maps.lost : nullptr;
      break;
    case EbpfProgram::kFiles:
      map = files_ != nullptr ? files_->maps.lost : nullptr;
      break;
  }
  if (map == nullptr) return 0;
  const uint32_t zero = 0;
  uint64_t value = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(map), &zero, &value) != 0) return 0;
  return value;
}

std::vector<std::pair<gpuscope_io_key, gpuscope_io_value>> EbpfPrograms::ReadIo() const {
  std::vector<std::pair<gpuscope_io_key, gpuscope_io_value>> out;
  if (files_ == nullptr) return out;
  const int map = bpf_map__fd(files_->maps.io);
  gpuscope_io_key key{};
  gpuscope_io_key next{};
  const void* previous = nullptr;
  while (bpf_map_get_next_key(map, previous, &next) == 0) {
    gpuscope_io_value value{};
    if (bpf_map_lookup_elem(map, &next, &value) == 0) out.emplace_back(next, value);
    key = next;
    previous = &key;
  }
  return out;
}

void EbpfPrograms::DeleteIo(const gpuscope_io_key& key) {
  if (files_ != nullptr) bpf_map_delete_elem(bpf_map__fd(files_->maps.io), &key);
}

}  // namespace gpuscope
