#include "src/attribution/proc_resolver.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>
#include <tuple>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/proc_cgroup.h"
#include "src/parsers/proc_environ.h"
#include "src/parsers/proc_stat.h"
#include "src/platform/file.h"
#include "src/platform/users.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxSmallFileBytes = 64 * 1024;  // stat, status, cgroup are a few hundred bytes

enum class ReadResult { kOk, kGone, kDenied, kError };

// Reads at most `cap` bytes of `path` into `out` and sorts the errno into what the resolver does next.
ReadResult ReadCapped(const std::string& path, size_t cap, std::string& out, int& error) {
  error = ReadFileInto(path, &out, cap);
  switch (error) {
    case 0:
      return ReadResult::kOk;
    case ENOENT:
    case ESRCH:  // the process exited between open and read
      return ReadResult::kGone;
    case EACCES:
    case EPERM:
      return ReadResult::kDenied;
    default:
      return ReadResult::kError;
  }
}

void FillBlank(std::string& into, const std::string& from) {
  if (into.empty()) into = from;
}

// Numeric order of ranks; an unknown (empty) rank sorts last.
std::pair<bool, uint64_t> RankKey(const std::string& rank) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), value);
  if (rank.empty() || ec != std::errc() || ptr != rank.data() + rank.size()) return {true, 0};
  return {false, value};
}

}  // namespace

ProcResolver::ProcResolver(std::string procfs_root) : ProcResolver(std::move(procfs_root), Options()) {}

ProcResolver::ProcResolver(std::string procfs_root, Options options)
    : root_(std::move(procfs_root)), options_(options) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  real_proc_ = root_ == "/proc";
}

std::string ProcResolver::UserName(const std::string& uid_text) {
  auto cached = user_names_.find(uid_text);
  if (cached != user_names_.end()) return cached->second;
  std::string name;
  uint32_t uid = 0;
  auto [ptr, ec] = std::from_chars(uid_text.data(), uid_text.data() + uid_text.size(), uid);
  if (ec == std::errc() && ptr == uid_text.data() + uid_text.size()) name = UserNameOf(uid);
  // Cached even when unknown: NSS lookups (LDAP, sssd) can be slow and must not repeat every new pid.
  user_names_.emplace(uid_text, name);
  return name;
}

bool ProcResolver::TakeJobIdentity(const std::optional<SlurmCgroup>& cgroup, const SlurmEnviron& env,
                                   ProcessInfo& info) {
  if (cgroup) {
    info.job_id = cgroup->job_id;
    info.step_id = cgroup->step_id;
    info.job.uid = cgroup->uid;
    if (!env.job_id.empty() && env.job_id != cgroup->job_id) {
      // The process claims another job than the one whose cgroup holds it: believe the cgroup, and
      // nothing of what environ says (rank, user, account would describe the other job).
      ++environ_mismatch_;
      return false;
    }
  } else if (options_.trust_environ_without_cgroup && !env.job_id.empty()) {
    info.job_id = env.job_id;
  }
  return true;
}

void ProcResolver::TakeEnvironDetails(const SlurmEnviron& env, ProcessInfo& info) {
  FillBlank(info.step_id, env.step_id);
  info.rank = env.proc_id;
  FillBlank(info.job.uid, env.uid);
  info.job.user = env.user;
  info.job.account = env.account;
  info.job.partition = env.partition;
  info.job.job_name = env.job_name;
  info.job.array_job_id = env.array_job_id;
  info.job.array_task_id = env.array_task_id;
}

std::optional<ProcResolver::ProcessInfo> ProcResolver::Load(uint32_t pid) {
  const std::string dir = root_ + "/" + std::to_string(pid) + "/";
  std::string content;
  int error = 0;
  auto fail = [&](ReadResult result, const char* file) -> std::optional<ProcessInfo> {
    if (result == ReadResult::kDenied) {
      ++lookups_[static_cast<int>(Lookup::kDenied)];
    } else {
      ++lookups_[static_cast<int>(Lookup::kGone)];
    }
    if (result == ReadResult::kError || result == ReadResult::kDenied) {
      Log(LogLevel::kDebug, "proc attribution: cannot read",
          {{"pid", std::to_string(pid)}, {"file", file}, {"errno", std::to_string(error)}});
    }
    return std::nullopt;
  };

  ReadResult r = ReadCapped(dir + "stat", kMaxSmallFileBytes, content, error);
  if (r != ReadResult::kOk) return fail(r, "stat");
  std::optional<uint64_t> start_time = ParseProcStatStartTime(content);
  if (!start_time) return fail(ReadResult::kError, "stat");

  ProcessInfo info;
  info.start_time = *start_time;

  r = ReadCapped(dir + "cgroup", kMaxSmallFileBytes, content, error);
  if (r != ReadResult::kOk) return fail(r, "cgroup");
  std::optional<SlurmCgroup> cgroup = ParseProcCgroup(content);
  if (std::optional<PodCgroup> pod = ParseProcCgroupPod(content)) info.pod_uid = std::move(pod->pod_uid);

  SlurmEnviron env;
  r = ReadCapped(dir + "environ", kMaxEnvironBytes + 1, content, error);
  if (r == ReadResult::kGone) return fail(r, "environ");
  if (r == ReadResult::kOk) {
    env = ParseSlurmEnviron(content);
    content.clear();
    content.shrink_to_fit();  // do not keep the process's secrets around
  } else {
    // Another user's process and we are not root (or the read failed otherwise): the cgroup alone.
    ++environ_denied_;
  }

  const bool environ_trusted = TakeJobIdentity(cgroup, env, info);
  if (r == ReadResult::kOk && environ_trusted) ++environ_ok_;

  if (info.job_id.empty()) {
    ++lookups_[static_cast<int>(Lookup::kNoJob)];
    return info;
  }

  info.job.job_id = info.job_id;
  if (environ_trusted) TakeEnvironDetails(env, info);
  if (info.job.uid.empty()) {
    r = ReadCapped(dir + "status", kMaxSmallFileBytes, content, error);
    if (r == ReadResult::kGone) return fail(r, "status");
    if (r == ReadResult::kOk) {
      if (std::optional<uint32_t> uid = ParseProcStatusUid(content)) info.job.uid = std::to_string(*uid);
    }
  }
  if (info.job.user.empty() && !info.job.uid.empty() && real_proc_) info.job.user = UserName(info.job.uid);

  // The pid may have been reused while we read: then the files above describe two processes.
  r = ReadCapped(dir + "stat", kMaxSmallFileBytes, content, error);
  if (r != ReadResult::kOk) return fail(r, "stat");
  if (ParseProcStatStartTime(content) != info.start_time) return fail(ReadResult::kGone, "stat");

  ++lookups_[static_cast<int>(Lookup::kJob)];
  return info;
}

AttributionUpdate ProcResolver::Resolve(const std::vector<GpuProcess>& processes) {
  ++cycle_;
  std::set<uint32_t> listed;
  for (const GpuProcess& process : processes) {
    if (!listed.insert(process.pid).second) continue;  // one pid on several GPUs: look it up once
    auto it = cache_.find(process.pid);
    if (it != cache_.end() && options_.revalidate_every_cycles > 0 &&
        cycle_ - it->second.verified_cycle >= options_.revalidate_every_cycles) {
      std::string content;
      int error = 0;
      ReadResult r =
          ReadCapped(root_ + "/" + std::to_string(process.pid) + "/stat", kMaxSmallFileBytes, content, error);
      if (r == ReadResult::kOk && ParseProcStatStartTime(content) == it->second.info.start_time) {
        it->second.verified_cycle = cycle_;
      } else {
        cache_.erase(it);  // gone or reused: look it up afresh below
        it = cache_.end();
      }
    }
    if (it == cache_.end()) {
      std::optional<ProcessInfo> info = Load(process.pid);
      if (!info) continue;
      cache_[process.pid] = CacheEntry{std::move(*info), cycle_};
    }
  }
  std::erase_if(cache_, [&](const auto& entry) { return !listed.contains(entry.first); });

  // One allocation per (gpu, job): the lowest-ranked process of the job on that GPU (then lowest pid).
  struct Best {
    const ProcessInfo* info;
    uint32_t pid;
  };
  std::map<std::pair<std::string, std::string>, Best> best;
  for (const GpuProcess& process : processes) {
    auto it = cache_.find(process.pid);
    if (it == cache_.end() || it->second.info.job_id.empty()) continue;
    const ProcessInfo& info = it->second.info;
    auto key = std::make_pair(process.gpu, info.job_id);
    auto [slot, inserted] = best.try_emplace(key, Best{&info, process.pid});
    if (!inserted && std::make_tuple(RankKey(info.rank), process.pid) <
                         std::make_tuple(RankKey(slot->second.info->rank), slot->second.pid)) {
      slot->second = Best{&info, process.pid};
    }
  }

  AttributionUpdate update;
  std::map<std::string, JobInfo> jobs;
  for (const auto& [key, chosen] : best) {
    update.allocations.push_back(Allocation{key.first, key.second, chosen.info->rank, chosen.info->step_id});
  }
  // Job details: field by field, the first process (in pid order) that knows it.
  for (const auto& [pid, entry] : cache_) {
    const ProcessInfo& info = entry.info;
    if (info.job_id.empty()) continue;
    auto [it, inserted] = jobs.try_emplace(info.job_id, info.job);
    if (inserted) continue;
    JobInfo& into = it->second;
    FillBlank(into.user, info.job.user);
    FillBlank(into.uid, info.job.uid);
    FillBlank(into.account, info.job.account);
    FillBlank(into.partition, info.job.partition);
    FillBlank(into.job_name, info.job.job_name);
    FillBlank(into.array_job_id, info.job.array_job_id);
    FillBlank(into.array_task_id, info.job.array_task_id);
  }
  for (auto& [id, job] : jobs) update.jobs.push_back(std::move(job));
  return update;
}

std::vector<MetricFamily> ProcResolver::SelfMetrics() const {
  std::vector<MetricFamily> out;
  MetricFamily lookups{"gpuscope_attribution_proc_lookups_total",
                       "GPU processes looked up in /proc (cache hits excluded), by outcome.",
                       MetricType::kCounter,
                       "",
                       {}};
  const char* names[] = {"job", "no_job", "gone", "denied"};
  for (int i = 0; i < 4; ++i) {
    lookups.samples.push_back(Sample{{{"result", names[i]}}, static_cast<double>(lookups_[i])});
  }
  out.push_back(std::move(lookups));

  MetricFamily environ{"gpuscope_attribution_proc_environ_total",
                       "Reads of /proc/<pid>/environ: ok, denied (not root and another user's process: "
                       "cgroup only), mismatch (environ names another job than the cgroup: ignored).",
                       MetricType::kCounter,
                       "",
                       {}};
  environ.samples.push_back(Sample{{{"result", "ok"}}, static_cast<double>(environ_ok_)});
  environ.samples.push_back(Sample{{{"result", "denied"}}, static_cast<double>(environ_denied_)});
  environ.samples.push_back(Sample{{{"result", "mismatch"}}, static_cast<double>(environ_mismatch_)});
  out.push_back(std::move(environ));

  out.push_back(MetricFamily{"gpuscope_attribution_proc_cache_entries",
                             "GPU processes whose /proc attribution is cached.",
                             MetricType::kGauge,
                             "",
                             {Sample{{}, static_cast<double>(cache_.size())}}});
  return out;
}

std::string ProcResolver::JobOf(uint32_t pid) const {
  auto it = cache_.find(pid);
  return it == cache_.end() ? std::string() : it->second.info.job_id;
}

std::string ProcResolver::PodUidOf(uint32_t pid) const {
  auto it = cache_.find(pid);
  return it == cache_.end() ? std::string() : it->second.info.pod_uid;
}

}  // namespace gpuscope
