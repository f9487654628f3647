#include "src/collectors/ebpf/ebpf_accounting.h"

#include <algorithm>
#include <cstring>

namespace gpuscope {
namespace {

bool IoKeyLess(const gpuscope_io_key& a, const gpuscope_io_key& b) {
  return std::tie(a.tgid, a.dir, a.op) < std::tie(b.tgid, b.dir, b.op);
}

// A NUL-terminated field of fixed size as a string (stops at its end when the kernel filled it whole).
std::string FixedString(const char* text, size_t size) { return std::string(text, strnlen(text, size)); }

constexpr uint32_t kFmodeWrite = 0x2;

}  // namespace

std::string CudaResultName(int32_t result) {
  switch (result) {
    case 0:
      return "CUDA_SUCCESS";
    case 1:
      return "CUDA_ERROR_INVALID_VALUE";
    case 2:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case 4:
      return "CUDA_ERROR_DEINITIALIZED";
    case 100:
      return "CUDA_ERROR_NO_DEVICE";
    case 101:
      return "CUDA_ERROR_INVALID_DEVICE";
    case 201:
      return "CUDA_ERROR_INVALID_CONTEXT";
    case 304:
      return "CUDA_ERROR_OPERATING_SYSTEM";
    case 400:
      return "CUDA_ERROR_INVALID_HANDLE";
    case 700:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 801:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case 999:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return "CUresult_" + std::to_string(result);
  }
}

EbpfAccounting::EbpfAccounting(Options options, Hooks hooks)
    : options_(std::move(options)), hooks_(std::move(hooks)), io_seen_(&IoKeyLess) {}

EbpfAccounting::Process& EbpfAccounting::ProcessOf(uint32_t tgid, uint32_t ppid) {
  Process& p = processes_[tgid];
  if (!p.job_known && hooks_.job_of) {
    p.job = hooks_.job_of(tgid, ppid);
    p.job_known = true;
  }
  return p;
}

EbpfAccounting::JobCounters& EbpfAccounting::JobOf(const std::string& job, int64_t now_unix_ns) {
  JobCounters& c = jobs_[job];
  c.last_activity_ns = now_unix_ns;
  return c;
}

std::string EbpfAccounting::User(uint32_t uid) {
  auto it = users_.find(uid);
  if (it != users_.end()) return it->second;
  std::string name = hooks_.user_of ? hooks_.user_of(uid) : "";
  if (name.empty()) name = std::to_string(uid);
  if (users_.size() > 4096) users_.clear();
  return users_.emplace(uid, std::move(name)).first->second;
}

std::string EbpfAccounting::Dir(uint32_t index) const {
  return index < options_.watch_dirs.size() ? options_.watch_dirs[index] : std::to_string(index);
}

bool EbpfAccounting::MayRaise(const std::string& subject, int64_t now_unix_ns) {
  auto [it, fresh] = raised_.emplace(subject, now_unix_ns);
  if (fresh) return true;
  if (now_unix_ns - it->second < options_.event_repeat_ns) return false;
  it->second = now_unix_ns;
  return true;
}

void EbpfAccounting::Raise(std::string event_class, std::string summary,
                           std::vector<std::pair<std::string, std::string>> fields, int64_t now_unix_ns) {
  if (!hooks_.post) return;
  EbpfNotice notice;
  notice.event_class = std::move(event_class);
  notice.summary = std::move(summary);
  notice.fields = std::move(fields);
  notice.time_unix_ns = now_unix_ns;
  hooks_.post(std::move(notice));
}

void EbpfAccounting::OnRecord(const void* data, size_t size, int64_t now_unix_ns) {
  uint32_t kind = 0;
  if (size < sizeof(kind)) {
    ++malformed_records_;
    return;
  }
  std::memcpy(&kind, data, sizeof(kind));
  switch (kind) {
    case GPUSCOPE_RECORD_CUDA_ALLOC:
    case GPUSCOPE_RECORD_CUDA_FREE: {
      gpuscope_cuda_record r{};
      if (size != sizeof(r)) break;
      std::memcpy(&r, data, sizeof(r));
      return OnCuda(r, now_unix_ns);
    }
    case GPUSCOPE_RECORD_CONNECT: {
      gpuscope_connect_record r{};
      if (size != sizeof(r)) break;
      std::memcpy(&r, data, sizeof(r));
      return OnConnect(r, now_unix_ns);
    }
    case GPUSCOPE_RECORD_FILE_OPEN: {
      gpuscope_file_open_record r{};
      if (size != sizeof(r)) break;
      std::memcpy(&r, data, sizeof(r));
      return OnFileOpen(r, now_unix_ns);
    }
    default:
      break;
  }
  ++malformed_records_;
}

void EbpfAccounting::OnCuda(const gpuscope_cuda_record& r, int64_t now_unix_ns) {
  Process& p = ProcessOf(r.task.tgid, r.task.ppid);
  JobCounters& job = JobOf(p.job, now_unix_ns);
  if (r.kind == GPUSCOPE_RECORD_CUDA_FREE) {
    ++job.frees;
    auto it = p.allocations.find(r.device_ptr);
    if (it != p.allocations.end()) {  // a pointer allocated before the probe was attached is not known
      p.live_bytes -= it->second;
      p.allocations.erase(it);
    }
    return;
  }
  if (r.result == 0) {
    ++job.allocations;
    job.allocated_bytes += r.bytes;
    auto [it, fresh] = p.allocations.emplace(r.device_ptr, r.bytes);
    if (!fresh) {  // a free we did not see (its record lost): the pointer's new size counts
      p.live_bytes -= it->second;
      it->second = r.bytes;
    }
    p.live_bytes += r.bytes;
    return;
  }
  const std::string result = CudaResultName(r.result);
  ++job.failures[result];
  const std::string pid = std::to_string(r.task.tgid);
  if (!MayRaise("cuda/" + pid, now_unix_ns)) return;
  const std::string comm = FixedString(r.task.comm, sizeof(r.task.comm));
  std::string summary = "CUDA allocation of " + std::to_string(r.bytes) + " bytes failed with " + result +
                        " (pid " + pid + " " + comm + (p.job.empty() ? "" : ", job " + p.job) + ")";
  Raise("ebpf_cuda_allocation_failure", std::move(summary),
        {{"job_id", p.job},
         {"pid", pid},
         {"process", comm},
         {"process_user", User(r.task.uid)},
         {"result", result},
         {"bytes", std::to_string(r.bytes)}},
        now_unix_ns);
}

void EbpfAccounting::OnConnect(const gpuscope_connect_record& r, int64_t now_unix_ns) {
  Process& p = ProcessOf(r.task.tgid, r.task.ppid);
  if (p.job.empty()) return;  // outbound connections of job processes only
  JobCounters& job = JobOf(p.job, now_unix_ns);
  Destination d;
  d.ipv6 = r.family == 10;
  std::memcpy(d.address.data(), r.daddr, d.ipv6 ? 16 : 4);
  d.port = r.dport;
  const bool allowed = options_.allow.empty() || Allowed(options_.allow, d);
  ++job.connections[{d.ipv6 ? "ipv6" : "ipv4", allowed}];
  if (allowed) return;
  const std::string destination = DestinationText(d);
  const bool known = job.unexpected.count(destination) != 0;
  const bool room = job.unexpected.size() < options_.max_destinations_per_job;
  ++job.unexpected[known || room ? destination : "other"];
  if (!MayRaise("connect/" + p.job + "/" + destination, now_unix_ns)) return;
  const std::string pid = std::to_string(r.task.tgid);
  const std::string comm = FixedString(r.task.comm, sizeof(r.task.comm));
  const std::string user = User(r.task.uid);
  std::string summary = "job " + p.job + " connected to " + destination + " outside the allow-list (pid " +
                        pid + " " + comm + ", user " + user + ")";
  Raise("ebpf_unexpected_connection", std::move(summary),
        {{"job_id", p.job},
         {"pid", pid},
         {"process", comm},
         {"process_user", user},
         {"destination", destination},
         {"family", d.ipv6 ? "ipv6" : "ipv4"}},
        now_unix_ns);
}

void EbpfAccounting::OnFileOpen(const gpuscope_file_open_record& r, int64_t now_unix_ns) {
  Process& p = ProcessOf(r.task.tgid, r.task.ppid);
  JobCounters& job = JobOf(p.job, now_unix_ns);
  const std::string dir = Dir(r.dir);
  const std::string user = User(r.task.uid);
  ++job.opens[{dir, user}];
  if (r.owner_uid == r.task.uid) return;
  const std::string owner = User(r.owner_uid);
  ++job.foreign_opens[{dir, user, owner}];
  // The path below the directory: names[] holds the deepest components, the file's own name first.
  std::string path = dir;
  const uint32_t kept = std::min<uint32_t>(r.depth, GPUSCOPE_MAX_NAMES);
  if (r.depth > kept) path += "/...";
  for (uint32_t i = kept; i-- > 0;) path += "/" + FixedString(r.names[i], sizeof(r.names[i]));
  if (!MayRaise("file/" + p.job + "/" + user + "/" + path, now_unix_ns)) return;
  const std::string pid = std::to_string(r.task.tgid);
  const std::string comm = FixedString(r.task.comm, sizeof(r.task.comm));
  const std::string access = (r.f_mode & kFmodeWrite) != 0 ? "write" : "read";
  std::string summary = "user " + user + " opened " + path + " (owner " + owner + ") for " + access +
                        " (pid " + pid + " " + comm + (p.job.empty() ? ", in no job" : ", job " + p.job) +
                        ")";
  Raise("ebpf_foreign_file_access", std::move(summary),
        {{"job_id", p.job},
         {"pid", pid},
         {"process", comm},
         {"process_user", user},
         {"owner", owner},
         {"dir", dir},
         {"path", path},
         {"access", access}},
        now_unix_ns);
}

void EbpfAccounting::OnIo(const std::vector<std::pair<gpuscope_io_key, gpuscope_io_value>>& sums,
                          int64_t now_unix_ns) {
  for (const auto& [key, value] : sums) {
    gpuscope_io_value& seen = io_seen_[key];
    if (value.calls == seen.calls) continue;
    // The map's sums only grow while the key lives; smaller means the key was deleted and made again.
    const bool restarted = value.calls < seen.calls || value.bytes < seen.bytes;
    const gpuscope_io_value base = restarted ? gpuscope_io_value{} : seen;
    Process& p = ProcessOf(key.tgid, 0);
    JobCounters& job = JobOf(p.job, now_unix_ns);
    const std::string dir = Dir(key.dir);
    const double bytes = static_cast<double>(value.bytes - base.bytes);
    const double seconds = static_cast<double>(value.nanoseconds - base.nanoseconds) / 1e9;
    if (key.op == 0) {
      job.read_bytes[dir] += bytes;
      job.io_seconds[{dir, "read"}] += seconds;
    } else {
      job.written_bytes[dir] += bytes;
      job.io_seconds[{dir, "write"}] += seconds;
    }
    seen = value;
  }
}

std::vector<gpuscope_io_key> EbpfAccounting::Sweep(int64_t now_unix_ns) {
  std::vector<gpuscope_io_key> ended;
  std::set<uint32_t> gone;
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (hooks_.alive && !hooks_.alive(it->first)) {
      gone.insert(it->first);
      it = processes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = io_seen_.begin(); it != io_seen_.end();) {
    if (gone.count(it->first.tgid) != 0 || (hooks_.alive && !hooks_.alive(it->first.tgid))) {
      ended.push_back(it->first);
      it = io_seen_.erase(it);
    } else {
      ++it;
    }
  }
  std::set<std::string> live_jobs;
  for (const auto& [tgid, p] : processes_) live_jobs.insert(p.job);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const bool idle = now_unix_ns - it->second.last_activity_ns > options_.job_idle_ns;
    if (idle && live_jobs.count(it->first) == 0) {
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = raised_.begin(); it != raised_.end();) {
    if (now_unix_ns - it->second > options_.event_repeat_ns) {
      it = raised_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

std::vector<MetricDescription> EbpfAccounting::Describe() {
  const MetricType C = MetricType::kCounter;
  const MetricType G = MetricType::kGauge;
  const std::string cuda =
      "uprobes on libcuda's cuMemAlloc_v2, cuMemAllocAsync, cuMemAllocManaged, "
      "cuMemFree_v2, cuMemFreeAsync";
  const std::string connect = "tp_btf inet_sock_set_state (TCP_SYN_SENT)";
  const std::string files = "tp_btf sys_exit of open, openat, openat2, creat (the opened file's dentry)";
  const std::string io = "tp_btf sys_enter/sys_exit of read, write, pread64, pwrite64, readv, writev";
  return {
      {"gpuscope_ebpf_cuda_memory_bytes",
       G,
       "CUDA device memory a live process holds through the probed allocation entry points (allocations "
       "made before the probe was attached are not seen).",
       "bytes",
       {"hpc_job", "pid"},
       cuda},
      {"gpuscope_ebpf_cuda_allocations_total",
       C,
       "Successful CUDA device memory allocations.",
       "",
       {"hpc_job"},
       cuda},
      {"gpuscope_ebpf_cuda_allocated_bytes_total",
       C,
       "Bytes of successful CUDA allocations (its rate is the allocation rate).",
       "bytes",
       {"hpc_job"},
       cuda},
      {"gpuscope_ebpf_cuda_frees_total", C, "CUDA device memory frees.", "", {"hpc_job"}, cuda},
      {"gpuscope_ebpf_cuda_allocation_failures_total",
       C,
       "CUDA allocations that failed, by CUresult.",
       "",
       {"hpc_job", "result"},
       cuda},
      {"gpuscope_ebpf_connections_total",
       C,
       "Outbound TCP connects of job processes (tied to the job by cgroup), by address family and whether "
       "the allow-list admits the destination (true for all without --ebpf.allow).",
       "",
       {"hpc_job", "family", "allowed"},
       connect},
      {"gpuscope_ebpf_unexpected_connections_total",
       C,
       "Outbound TCP connects of job processes outside the allow-list, by destination (at most 64 per job, "
       "then destination=\"other\").",
       "",
       {"hpc_job", "destination"},
       connect},
      {"gpuscope_ebpf_file_opens_total",
       C,
       "Opens of files below a watched directory (--ebpf.watch-dir), by the opener's job and user.",
       "",
       {"hpc_job", "dir", "user"},
       files},
      {"gpuscope_ebpf_file_foreign_opens_total",
       C,
       "Opens of files below a watched directory owned by another user than the opener.",
       "",
       {"hpc_job", "dir", "user", "owner"},
       files},
      {"gpuscope_ebpf_file_read_bytes_total",
       C,
       "Bytes read from files opened below a watched directory.",
       "bytes",
       {"hpc_job", "dir"},
       io},
      {"gpuscope_ebpf_file_written_bytes_total",
       C,
       "Bytes written to files opened below a watched directory.",
       "bytes",
       {"hpc_job", "dir"},
       io},
      {"gpuscope_ebpf_file_io_seconds_total",
       C,
       "Time in reads and writes of files opened below a watched directory.",
       "seconds",
       {"hpc_job", "dir", "op"},
       io},
  };
}

void EbpfAccounting::AppendFamilies(std::vector<MetricFamily>& out) const {
  const std::vector<MetricDescription> d = Describe();
  std::vector<MetricFamily> f;
  f.reserve(d.size());
  for (const MetricDescription& m : d) f.push_back(FamilyOf(m));
  // In Describe()'s order.
  MetricFamily& memory = f[0];
  MetricFamily& allocations = f[1];
  MetricFamily& allocated = f[2];
  MetricFamily& frees = f[3];
  MetricFamily& failures = f[4];
  MetricFamily& connections = f[5];
  MetricFamily& unexpected = f[6];
  MetricFamily& opens = f[7];
  MetricFamily& foreign = f[8];
  MetricFamily& read = f[9];
  MetricFamily& written = f[10];
  MetricFamily& io_seconds = f[11];
  for (const auto& [tgid, p] : processes_) {
    if (p.allocations.empty()) continue;
    memory.samples.push_back(
        Sample{{{"hpc_job", p.job}, {"pid", std::to_string(tgid)}}, static_cast<double>(p.live_bytes)});
  }
  for (const auto& [job, c] : jobs_) {
    const bool cuda = c.allocations + c.frees > 0 || !c.failures.empty();
    if (cuda) {
      allocations.samples.push_back(Sample{{{"hpc_job", job}}, static_cast<double>(c.allocations)});
      allocated.samples.push_back(Sample{{{"hpc_job", job}}, static_cast<double>(c.allocated_bytes)});
      frees.samples.push_back(Sample{{{"hpc_job", job}}, static_cast<double>(c.frees)});
    }
    for (const auto& [result, n] : c.failures)
      failures.samples.push_back(Sample{{{"hpc_job", job}, {"result", result}}, static_cast<double>(n)});
    for (const auto& [key, n] : c.connections)
      connections.samples.push_back(
          Sample{{{"hpc_job", job}, {"family", key.first}, {"allowed", key.second ? "true" : "false"}},
                 static_cast<double>(n)});
    for (const auto& [destination, n] : c.unexpected)
      unexpected.samples.push_back(
          Sample{{{"hpc_job", job}, {"destination", destination}}, static_cast<double>(n)});
    for (const auto& [key, n] : c.opens)
      opens.samples.push_back(
          Sample{{{"hpc_job", job}, {"dir", key.first}, {"user", key.second}}, static_cast<double>(n)});
    for (const auto& [key, n] : c.foreign_opens) {
      const auto& [dir, user, owner] = key;
      foreign.samples.push_back(
          Sample{{{"hpc_job", job}, {"dir", dir}, {"user", user}, {"owner", owner}}, static_cast<double>(n)});
    }
    for (const auto& [dir, n] : c.read_bytes)
      read.samples.push_back(Sample{{{"hpc_job", job}, {"dir", dir}}, n});
    for (const auto& [dir, n] : c.written_bytes)
      written.samples.push_back(Sample{{{"hpc_job", job}, {"dir", dir}}, n});
    for (const auto& [key, n] : c.io_seconds)
      io_seconds.samples.push_back(Sample{{{"hpc_job", job}, {"dir", key.first}, {"op", key.second}}, n});
  }
  for (MetricFamily& family : f) out.push_back(std::move(family));
}

}  // namespace gpuscope
