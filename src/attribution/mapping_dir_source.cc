#include "src/attribution/mapping_dir_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <tuple>

#include "src/core/log.h"
#include "src/parsers/mapping_files.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE |
                                IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// Every reason the counter can carry, pre-declared so the family has a stable set of series.
constexpr std::string_view kIgnoreReasons[] = {
    "invalid_name",  "symlink",        "not_regular", "unreadable",  "too_large", "binary",
    "line_too_long", "invalid_job_id", "invalid_uid", "invalid_gpu", "malformed",
};
constexpr std::string_view kFormats[] = {"dcgm", "jobstats", "amd", "gpuscope"};

bool SameAllocation(const Allocation& a, const Allocation& b) {
  return std::tie(a.gpu, a.job_id, a.rank, a.step_id) == std::tie(b.gpu, b.job_id, b.rank, b.step_id);
}
bool SameJob(const JobInfo& a, const JobInfo& b) {
  return std::tie(a.job_id, a.user, a.uid, a.account, a.partition, a.job_name, a.array_job_id,
                  a.array_task_id) == std::tie(b.job_id, b.user, b.uid, b.account, b.partition, b.job_name,
                                               b.array_job_id, b.array_task_id);
}
bool SameUpdate(const AttributionUpdate& a, const AttributionUpdate& b) {
  return std::equal(a.allocations.begin(), a.allocations.end(), b.allocations.begin(), b.allocations.end(),
                    SameAllocation) &&
         std::equal(a.jobs.begin(), a.jobs.end(), b.jobs.begin(), b.jobs.end(), SameJob);
}

JobInfo ToJobInfo(const MappingJob& job) {
  JobInfo info;
  info.job_id = job.job_id;
  info.user = job.user;
  info.uid = job.uid;
  info.account = job.account;
  info.partition = job.partition;
  info.job_name = job.job_name;
  info.array_job_id = job.array_job_id;
  info.array_task_id = job.array_task_id;
  return info;
}

void FillBlanks(JobInfo* into, const JobInfo& from) {
  auto fill = [](std::string* a, const std::string& b) {
    if (a->empty()) *a = b;
  };
  fill(&into->user, from.user);
  fill(&into->uid, from.uid);
  fill(&into->account, from.account);
  fill(&into->partition, from.partition);
  fill(&into->job_name, from.job_name);
  fill(&into->array_job_id, from.array_job_id);
  fill(&into->array_task_id, from.array_task_id);
}

// Reads at most kMaxMappingFileBytes + 1 bytes; returns nullopt on a read error.
std::optional<std::string> ReadCapped(int fd) {
  std::string content;
  if (ReadDescriptorInto(fd, &content, kMaxMappingFileBytes + 1) != 0) return std::nullopt;
  return content;
}

// A file changed within `settle` of now (either direction) has not settled.
bool Settled(const struct stat& st, std::chrono::milliseconds settle) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  auto to_ms = [](const timespec& t) { return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000; };
  int64_t age = to_ms(now) - to_ms(st.st_mtim);
  return age >= settle.count() || age <= -settle.count();
}

// One directory entry opened and read without following links: its content, or why it is skipped.
struct EntryContent {
  std::optional<std::string> content;
  std::string_view reason;  // without content: the ignore reason; empty when the entry vanished meanwhile
  std::string detail;
  struct stat st {};
};

EntryContent ReadEntry(int dir_fd, const std::string& name) {
  EntryContent entry;
  if (fstatat(dir_fd, name.c_str(), &entry.st, AT_SYMLINK_NOFOLLOW) != 0) return entry;  // deleted meanwhile
  if (S_ISLNK(entry.st.st_mode)) {
    entry.reason = "symlink";
    entry.detail = "symlinks are never followed";
    return entry;
  }
  if (!S_ISREG(entry.st.st_mode)) {
    entry.reason = "not_regular";
    entry.detail = "only regular files are read";
    return entry;
  }
  // O_NOFOLLOW and O_NONBLOCK again: the entry may have been swapped since fstatat.
  int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return entry;
    entry.reason = errno == ELOOP ? "symlink" : "unreadable";
    entry.detail = errno == ELOOP ? "symlinks are never followed" : std::strerror(errno);
    return entry;
  }
  if (fstat(fd, &entry.st) != 0 || !S_ISREG(entry.st.st_mode)) {
    close(fd);
    entry.reason = "not_regular";
    entry.detail = "only regular files are read";
    return entry;
  }
  entry.content = ReadCapped(fd);
  int read_errno = errno;
  close(fd);
  if (!entry.content) {
    entry.reason = "unreadable";
    entry.detail = std::strerror(read_errno);
  }
  return entry;
}

// What one mapping file says, in the format it was read as.
struct ParsedMappingFile {
  AttributionUpdate update;
  MappingError error = MappingError::kNone;
  bool terminated = true;
  MappingFormat format = MappingFormat::kDcgm;
};

// A gpuscope-job.<id> record.
ParsedMappingFile ParseRecordFile(const std::string& content, std::string_view record_job) {
  ParsedMappingFile file;
  file.format = MappingFormat::kGpuscope;
  GpuscopeRecord record = ParseGpuscopeRecord(content, record_job);
  file.error = record.error;
  file.terminated = record.terminated;
  for (const std::string& gpu : record.job.gpus)
    file.update.allocations.push_back({gpu, record.job.job_id, "", record.job.step_id});
  if (file.error == MappingError::kNone) file.update.jobs.push_back(ToJobInfo(record.job));
  return file;
}

// A file named by a GPU key or UUID, in the configured format (or the detected one).
ParsedMappingFile ParseGpuKeyFile(const std::string& name, const std::string& content,
                                  MappingDirOptions::Format option) {
  ParsedMappingFile file;
  switch (option) {
    case MappingDirOptions::Format::kAuto:
      file.format = DetectGpuKeyFileFormat(content);
      break;
    case MappingDirOptions::Format::kDcgm:
      file.format = MappingFormat::kDcgm;
      break;
    case MappingDirOptions::Format::kJobstats:
      file.format = MappingFormat::kJobstats;
      break;
    case MappingDirOptions::Format::kAmd:
      file.format = MappingFormat::kAmd;
      break;
  }
  if (file.format == MappingFormat::kDcgm) {
    DcgmMappingFile dcgm = ParseDcgmMapping(content);
    file.error = dcgm.error;
    file.terminated = dcgm.terminated;
    for (const std::string& job : dcgm.job_ids) file.update.allocations.push_back({name, job, "", ""});
  } else if (file.format == MappingFormat::kJobstats) {
    JobstatsMappingFile jobstats = ParseJobstatsMapping(content);
    file.error = jobstats.error;
    file.terminated = jobstats.terminated;
    if (file.error == MappingError::kNone) {
      file.update.allocations.push_back({name, jobstats.job_id, "", ""});
      JobInfo info;
      info.job_id = jobstats.job_id;
      info.uid = jobstats.uid;
      file.update.jobs.push_back(info);
    }
  } else {
    AmdMappingFile amd = ParseAmdMapping(content);
    file.error = amd.error;
    if (file.error == MappingError::kNone) {
      file.update.allocations.push_back({name, amd.job.job_id, "", ""});
      file.update.jobs.push_back(ToJobInfo(amd.job));
    }
  }
  return file;
}

// What the inotify events waiting on `inotify_fd` say about the watch `wd`.
struct WatchEvents {
  bool want_scan = false;  // a file changed, or events were lost (queue overflow)
  bool dir_gone = false;   // the directory was removed, moved or unmounted: the watch is dead
};

// Reads every inotify event waiting on the (non-blocking) `inotify_fd`.
WatchEvents ReadWatchEvents(int inotify_fd, int wd) {
  alignas(inotify_event) char buffer[16 * 1024];
  WatchEvents events;
  while (true) {
    ssize_t n = read(inotify_fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    for (char* p = buffer; p < buffer + n;) {
      auto* event = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      if (event->mask & IN_Q_OVERFLOW) {
        events.want_scan = true;
        continue;
      }
      if (event->wd != wd) continue;  // a stale watch's trailing events
      if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
        events.dir_gone = true;
      } else {
        events.want_scan = true;
      }
    }
  }
  return events;
}

}  // namespace

bool ParseMappingFormatOption(std::string_view name, MappingDirOptions::Format* format) {
  if (name == "auto")
    *format = MappingDirOptions::Format::kAuto;
  else if (name == "dcgm")
    *format = MappingDirOptions::Format::kDcgm;
  else if (name == "jobstats")
    *format = MappingDirOptions::Format::kJobstats;
  else if (name == "amd")
    *format = MappingDirOptions::Format::kAmd;
  else
    return false;
  return true;
}

MappingDirSource::MappingDirSource(std::string dir, JobTable* table, MappingDirOptions options)
    : dir_(std::move(dir)), table_(table), options_(options) {
  for (std::string_view reason : kIgnoreReasons) ignored_total_[std::string(reason)] = 0;
  for (std::string_view format : kFormats) files_by_format_[std::string(format)] = 0;
}

MappingDirSource::~MappingDirSource() { Stop(); }

Status MappingDirSource::Start() {
  if (thread_.joinable()) return Status::Ok();
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return Status::Internal(std::string("inotify_init1: ") + std::strerror(errno));
  if (pipe2(wake_pipe_, O_NONBLOCK | O_CLOEXEC) != 0) {
    close(inotify_fd_);
    inotify_fd_ = -1;
    return Status::Internal(std::string("pipe2: ") + std::strerror(errno));
  }
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void MappingDirSource::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  char byte = 1;
  [[maybe_unused]] ssize_t n = write(wake_pipe_[1], &byte, 1);
  thread_.join();
  close(inotify_fd_);
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
  inotify_fd_ = wake_pipe_[0] = wake_pipe_[1] = -1;
}

void MappingDirSource::Ignore(const std::string& name, std::string_view reason, std::string_view detail,
                              std::map<std::string, FileState>* next) {
  (*next)[name].reason = std::string(reason);
  auto previous = files_.find(name);
  if (previous != files_.end() && previous->second.reason == reason) return;  // already logged and counted
  Log(LogLevel::kWarn, "mapping file ignored",
      {{"dir", dir_}, {"file", name}, {"reason", reason}, {"detail", detail}});
  MutexLock lock(&metrics_mu_);
  ++ignored_total_[std::string(reason)];
}

void MappingDirSource::PublishEmptyIfPresent() {
  {
    MutexLock lock(&metrics_mu_);
    dir_present_ = false;
    unresolved_ = 0;
    for (auto& [format, count] : files_by_format_) count = 0;
  }
  files_.clear();
  uuid_files_ = 0;
  AttributionUpdate empty;
  if (published_once_ && SameUpdate(empty, last_published_)) return;
  table_->Update(AttributionSource::kMapping, empty);
  last_published_ = {};
  published_once_ = true;
}

int MappingDirSource::ScanNow() {
  int dir_fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    PublishEmptyIfPresent();
    return 0;
  }
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    close(dir_fd);
    PublishEmptyIfPresent();
    return 0;
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) names.emplace_back(entry->d_name);
  std::sort(names.begin(), names.end());

  int unsettled = 0;
  std::map<std::string, FileState> next;
  for (const std::string& name : names) {
    // Dot files: ".", "..", the prolog's temporary files and its lock file. Not mapping files, not errors.
    if (name.empty() || name.front() == '.') continue;
    if (!ScanEntry(dir_fd, name, &next)) ++unsettled;
  }
  closedir(dir);

  uint64_t gpus_version = options_.gpus != nullptr ? options_.gpus->Version() : 0;  // before resolving
  MergedFiles merged = Merge(next);
  files_ = std::move(next);
  uuid_files_ = merged.uuid_files;
  gpus_version_seen_ = gpus_version;
  {
    MutexLock lock(&metrics_mu_);
    dir_present_ = true;
    files_by_format_ = std::move(merged.counts);
    unresolved_ = merged.unresolved;
    ++scans_total_;
  }
  if (!published_once_ || !SameUpdate(merged.update, last_published_)) {
    last_published_ = merged.update;
    published_once_ = true;
    table_->Update(AttributionSource::kMapping, std::move(merged.update));
  }
  return unsettled;
}

bool MappingDirSource::ScanEntry(int dir_fd, const std::string& name,
                                 std::map<std::string, FileState>* next) {
  std::string_view record_job = GpuscopeRecordJobId(name);
  bool by_uuid = ParseGpuUuidName(name).kind != GpuUuidName::Kind::kNone;
  bool gpu_file = IsValidGpuKey(name) || by_uuid;
  if (record_job.empty() && !gpu_file) {
    Ignore(name, "invalid_name", "neither a GPU key, a GPU or MIG UUID nor gpuscope-job.<jobid>", next);
    return true;
  }
  EntryContent entry = ReadEntry(dir_fd, name);
  if (!entry.content) {
    if (!entry.reason.empty()) Ignore(name, entry.reason, entry.detail, next);
    return true;
  }
  ParsedMappingFile file = record_job.empty() ? ParseGpuKeyFile(name, *entry.content, options_.format)
                                              : ParseRecordFile(*entry.content, record_job);
  if (file.error == MappingError::kNone && !file.terminated && !Settled(entry.st, options_.settle)) {
    // Probably caught mid-write by a non-atomic writer: keep what we knew, look again once settled.
    auto previous = files_.find(name);
    if (previous != files_.end()) (*next)[name] = previous->second;
    return false;
  }
  if (file.error != MappingError::kNone) {
    Ignore(name, MappingErrorReason(file.error), MappingFormatName(file.format), next);
    return true;
  }
  FileState& state = (*next)[name];
  state.last = std::move(file.update);
  state.format = std::string(MappingFormatName(file.format));
  if (by_uuid) state.uuid = name;
  return true;
}

MappingDirSource::MergedFiles MappingDirSource::Merge(const std::map<std::string, FileState>& files) const {
  // Union of every accepted file: records first, so their job details win; GPU files fill blanks.
  MergedFiles merged;
  for (std::string_view format : kFormats) merged.counts[std::string(format)] = 0;
  std::vector<const FileState*> ordered;
  for (const auto& [name, state] : files)
    if (state.reason.empty() && state.format == "gpuscope") ordered.push_back(&state);
  for (const auto& [name, state] : files)
    if (state.reason.empty() && state.format != "gpuscope" && !state.format.empty())
      ordered.push_back(&state);
  std::map<std::string, JobInfo> jobs;
  for (const FileState* state : ordered) {
    ++merged.counts[state->format];
    std::optional<std::string> uuid_key;  // the JobTable key of a file named by a UUID
    if (!state->uuid.empty()) {
      ++merged.uuid_files;
      if (options_.gpus != nullptr) uuid_key = options_.gpus->GpuKeyOfUuid(state->uuid);
      if (!uuid_key) {
        ++merged.unresolved;  // kept in files_; applied once the GPU shows in the directory
        continue;
      }
    }
    for (Allocation allocation : state->last.allocations) {
      if (uuid_key) allocation.gpu = *uuid_key;
      auto same_key = [&](const Allocation& a) {
        return a.gpu == allocation.gpu && a.job_id == allocation.job_id;
      };
      auto existing =
          std::find_if(merged.update.allocations.begin(), merged.update.allocations.end(), same_key);
      if (existing == merged.update.allocations.end())
        merged.update.allocations.push_back(allocation);
      else if (existing->step_id.empty())
        existing->step_id = allocation.step_id;
    }
    for (const JobInfo& job : state->last.jobs) {
      auto [it, inserted] = jobs.emplace(job.job_id, job);
      if (!inserted) FillBlanks(&it->second, job);
    }
  }
  std::sort(merged.update.allocations.begin(), merged.update.allocations.end(),
            [](const Allocation& a, const Allocation& b) {
              return std::tie(a.gpu, a.job_id) < std::tie(b.gpu, b.job_id);
            });
  for (auto& [id, job] : jobs) merged.update.jobs.push_back(std::move(job));
  return merged;
}

void MappingDirSource::Run() {
  int wd = -1;
  bool logged_missing = false;
  // When a scan is wanted (Clock::time_point::max(): none). Not std::optional: GCC 12 warns wrongly.
  constexpr Clock::time_point kNever = Clock::time_point::max();
  Clock::time_point scan_due = kNever;
  Clock::time_point next_arm = Clock::now();

  while (!stopping_) {
    Clock::time_point now = Clock::now();
    if (wd < 0 && now >= next_arm) {
      wd = inotify_add_watch(inotify_fd_, dir_.c_str(), kWatchMask);
      if (wd >= 0) {
        if (logged_missing) Log(LogLevel::kInfo, "mapping directory is back", {{"dir", dir_}});
        logged_missing = false;
        scan_due = now;  // read what is there at once
      } else {
        if (!logged_missing) {
          Log(LogLevel::kWarn, "mapping directory missing; polling for it",
              {{"dir", dir_}, {"error", std::strerror(errno)}});
          logged_missing = true;
        }
        PublishEmptyIfPresent();
        next_arm = now + options_.dir_poll;
      }
    }
    // Files named by a UUID are resolved through the GPU directory: re-scan when it changed.
    bool watch_gpus = wd >= 0 && uuid_files_ > 0 && options_.gpus != nullptr;
    if (watch_gpus && scan_due == kNever && options_.gpus->Version() != gpus_version_seen_) scan_due = now;
    if (scan_due != kNever && now >= scan_due) {
      scan_due = kNever;
      if (ScanNow() > 0) scan_due = Clock::now() + options_.settle;
      continue;
    }

    Clock::time_point wake = Clock::now() + std::chrono::hours(1);
    if (scan_due != kNever) wake = std::min(wake, scan_due);
    if (wd < 0) wake = std::min(wake, next_arm);
    if (watch_gpus) wake = std::min(wake, Clock::now() + options_.dir_poll);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
    pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 3600 * 1000)));
    if (ready < 0 && errno != EINTR) {
      Log(LogLevel::kError, "mapping directory watch: poll failed", {{"error", std::strerror(errno)}});
      break;
    }
    if (stopping_ || (ready > 0 && (fds[0].revents & POLLIN))) break;
    if (ready <= 0 || !(fds[1].revents & POLLIN)) continue;

    const WatchEvents events = ReadWatchEvents(inotify_fd_, wd);
    if (events.dir_gone && wd >= 0) {
      inotify_rm_watch(inotify_fd_, wd);  // fails harmlessly when the kernel already dropped it
      wd = -1;
      next_arm = Clock::now();  // look for a replacement at once; then every dir_poll
      scan_due = kNever;
      continue;
    }
    if (events.want_scan && scan_due == kNever) scan_due = Clock::now() + options_.debounce;
  }
}

std::vector<MetricFamily> MappingDirSource::SelfMetrics() const {
  MutexLock lock(&metrics_mu_);
  std::vector<MetricFamily> families;

  MetricFamily files;
  files.name = "gpuscope_attribution_mapping_files";
  files.help = "Mapping files accepted in the last scan of the job mapping directory, by format.";
  files.type = MetricType::kGauge;
  for (const auto& [format, count] : files_by_format_)
    files.samples.push_back({{{"format", format}}, static_cast<double>(count)});
  families.push_back(std::move(files));

  MetricFamily ignored;
  ignored.name = "gpuscope_attribution_mapping_files_ignored_total";
  ignored.help =
      "Mapping files ignored, by reason; counted once each time a file starts being ignored for a reason.";
  ignored.type = MetricType::kCounter;
  for (const auto& [reason, count] : ignored_total_)
    ignored.samples.push_back({{{"reason", reason}}, static_cast<double>(count)});
  families.push_back(std::move(ignored));

  MetricFamily unresolved;
  unresolved.name = "gpuscope_attribution_mapping_files_unresolved";
  unresolved.help =
      "Mapping files named by a GPU or MIG UUID that no GPU of this node shows (yet); kept and applied "
      "once the GPU appears.";
  unresolved.type = MetricType::kGauge;
  unresolved.samples.push_back({{}, static_cast<double>(unresolved_)});
  families.push_back(std::move(unresolved));

  MetricFamily present;
  present.name = "gpuscope_attribution_mapping_dir_present";
  present.help = "1 when the job mapping directory exists and is watched, 0 while it is missing.";
  present.type = MetricType::kGauge;
  present.samples.push_back({{}, dir_present_ ? 1.0 : 0.0});
  families.push_back(std::move(present));

  MetricFamily scans;
  scans.name = "gpuscope_attribution_mapping_scans_total";
  scans.help = "Scans of the job mapping directory (each follows a debounced burst of inotify events).";
  scans.type = MetricType::kCounter;
  scans.samples.push_back({{}, static_cast<double>(scans_total_)});
  families.push_back(std::move(scans));
  return families;
}

}  // namespace gpuscope
