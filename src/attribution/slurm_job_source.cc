#include "src/attribution/slurm_job_source.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "src/core/log.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBytes = 4096;

std::string FirstLine(std::string_view text) {
  size_t nl = text.find('\n');
  return std::string(text.substr(0, nl == std::string_view::npos ? text.size() : nl));
}

}  // namespace

CommandResult RunCommandWithTimeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                    size_t max_output_bytes) {
  CommandResult result;
  if (argv.empty()) {
    result.status = Status::InvalidArgument("empty command");
    return result;
  }
  // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.status = Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.status = Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const Clock::time_point deadline = Clock::now() + timeout;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout also kills what it started
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (devnull >= 0) close(devnull);
  if (pid < 0) {
    result.status = Status::Unavailable(std::string("fork: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below

  bool timed_out = false;
  bool too_large = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int ready = poll(fds, 2, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0) {
        result.output.append(buffer, static_cast<size_t>(n));
        if (result.output.size() > max_output_bytes) too_large = true;
      } else if (result.error.size() < kMaxErrorBytes) {
        result.error.append(buffer, std::min(static_cast<size_t>(n), kMaxErrorBytes - result.error.size()));
      }
    }
    if (too_large) break;
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int wstatus = 0;
  if (timed_out || too_large) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  } else {
    // Both pipes are closed: the child has exited or is about to. A child that closed its outputs and
    // kept running is killed at the deadline.
    while (true) {
      pid_t done = waitpid(pid, &wstatus, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      if (Clock::now() >= deadline) {
        timed_out = true;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      usleep(1000);
    }
  }
  std::string command = argv[0];
  if (timed_out) {
    result.status =
        Status::DeadlineExceeded(command + " killed after " + std::to_string(timeout.count()) + " ms");
  } else if (too_large) {
    result.status =
        Status::Unavailable(command + " printed more than " + std::to_string(max_output_bytes) + " bytes");
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    result.status = Status::Ok();
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    result.status = Status::Unavailable(command + " could not be run (not found?)");
  } else {
    std::string how = WIFEXITED(wstatus) ? "exited " + std::to_string(WEXITSTATUS(wstatus))
                                         : "killed by signal " + std::to_string(WTERMSIG(wstatus));
    std::string why = FirstLine(result.error);
    result.status = Status::Unavailable(command + " " + how + (why.empty() ? "" : ": " + why));
  }
  return result;
}

SlurmJobSource::SlurmJobSource(SlurmJobSourceOptions options, JobTable* table)
    : options_(std::move(options)), table_(table) {}

SlurmJobSource::~SlurmJobSource() { Stop(); }

void SlurmJobSource::Start() {
  if (thread_.joinable()) std::abort();
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void SlurmJobSource::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SlurmJobSource::Run() {
  std::unique_lock<std::mutex> lock(wake_mu_);
  while (!stopping_) {
    lock.unlock();
    QueryOnce(false);
    lock.lock();
    wake_.wait_for(lock, options_.min_query_interval, [this] { return stopping_; });
  }
}

Status SlurmJobSource::QueryOnce(bool force) {
  std::lock_guard<std::mutex> cycle(cycle_mu_);
  std::shared_ptr<const JobTable::View> view = table_->Current();
  const Clock::time_point now = Clock::now();

  // Jobs the table allocates; which of them another source left incomplete and the cache lacks.
  std::set<std::string, std::less<>> allocated;
  bool missing = false;
  for (const Allocation& allocation : view->allocations) allocated.insert(allocation.job_id);
  for (const std::string& job_id : allocated) {
    const JobInfo* info = view->Job(job_id);
    bool blank = info == nullptr || info->user.empty() || info->account.empty() || info->partition.empty();
    // A job Slurm did not know at the last query is asked about again only at the next refresh.
    if (blank && cache_.find(job_id) == cache_.end() && !unknown_.count(job_id)) missing = true;
  }
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (allocated.count(it->first)) {
      it->second.last_allocated = now;
      ++it;
    } else if (now - it->second.last_allocated > options_.forget_after) {
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }

  const bool rate_ok = !queried_ || now - last_query_ >= options_.min_query_interval;
  const bool refresh_due = !allocated.empty() && (!queried_ || now - last_query_ >= options_.interval);
  Status status = Status::Ok();
  if (force || (rate_ok && (missing || refresh_due))) status = Query(allocated);
  Publish(*view);
  return status;
}

Status SlurmJobSource::Query(const std::set<std::string, std::less<>>& allocated) {
  const Clock::time_point began = Clock::now();
  last_query_ = began;
  queried_ = true;
  CommandResult run = RunCommandWithTimeout({options_.scontrol_path, "show", "job", "-o"}, options_.timeout,
                                            options_.max_output_bytes);
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  std::string result_label = "ok";
  Status status = run.status;
  if (run.status.ok()) {
    ScontrolJobs parsed = ParseScontrolShowJob(run.output);
    for (const std::string& reason : parsed.rejected) {
      Log(LogLevel::kWarn, "slurm: ignored a scontrol record", {{"reason", reason}});
    }
    for (ScontrolJob& job : parsed.jobs) {
      if (!allocated.count(job.job_id)) continue;  // only what this node runs is kept
      auto it = cache_.find(job.job_id);
      if (it == cache_.end()) {
        std::string id = job.job_id;
        cache_.emplace(std::move(id), Cached{std::move(job), began});
      } else {
        it->second.job = std::move(job);
      }
    }
    unknown_.clear();
    for (const std::string& job_id : allocated) {
      if (!cache_.count(job_id)) unknown_.insert(job_id);
    }
  } else {
    result_label = run.status.code() == Status::Code::kDeadlineExceeded ? "timeout" : "error";
  }
  bool was_up;
  bool first_query;
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    was_up = up_;
    first_query = queries_.empty();
    up_ = run.status.ok();
    ++queries_[result_label];
    last_duration_s_ = seconds;
    cached_ = cache_.size();
  }
  if (!run.status.ok()) {
    // Logged at every failure while down would flood: warn on the transition, debug afterwards.
    Log(was_up || first_query ? LogLevel::kWarn : LogLevel::kDebug,
        "slurm: scontrol query failed; keeping cached job details", {{"reason", run.status.message()}});
  } else if (!was_up) {
    Log(LogLevel::kInfo, "slurm: scontrol query succeeded", {{"jobs_cached", std::to_string(cache_.size())}});
  }
  return status;
}

void SlurmJobSource::Publish(const JobTable::View& view) {
  AttributionUpdate update;
  std::set<std::string_view> allocated;
  for (const Allocation& allocation : view.allocations) allocated.insert(allocation.job_id);
  for (const auto& [job_id, cached] : cache_) {
    if (!allocated.count(job_id)) continue;
    const ScontrolJob& job = cached.job;
    JobInfo info;
    info.job_id = job.job_id;
    info.user = job.user;
    info.uid = job.uid;
    info.account = job.account;
    info.partition = job.partition;
    info.job_name = job.job_name;
    info.array_job_id = job.array_job_id;
    info.array_task_id = job.array_task_id;
    update.jobs.push_back(std::move(info));
  }
  table_->Update(AttributionSource::kSlurm, std::move(update));
  std::lock_guard<std::mutex> lock(metrics_mu_);
  cached_ = cache_.size();
}

std::vector<MetricFamily> SlurmJobSource::MetricFamilies() const {
  std::lock_guard<std::mutex> lock(metrics_mu_);
  std::vector<MetricFamily> families;
  families.push_back({"gpuscope_attribution_slurm_up",
                      "1 when the last scontrol query succeeded, 0 when it failed or timed out (see the log)",
                      MetricType::kGauge,
                      "",
                      {{{}, up_ ? 1.0 : 0.0}}});
  MetricFamily queries{"gpuscope_attribution_slurm_queries_total",
                       "scontrol queries by result (ok, error, timeout)",
                       MetricType::kCounter,
                       "",
                       {}};
  for (const char* result : {"ok", "error", "timeout"}) {
    auto it = queries_.find(result);
    queries.samples.push_back(
        {{{"result", result}}, it == queries_.end() ? 0.0 : static_cast<double>(it->second)});
  }
  families.push_back(std::move(queries));
  families.push_back({"gpuscope_attribution_slurm_query_duration_seconds",
                      "Duration of the last scontrol query",
                      MetricType::kGauge,
                      "seconds",
                      {{{}, last_duration_s_}}});
  families.push_back({"gpuscope_attribution_slurm_jobs_cached",
                      "Jobs whose Slurm details are cached",
                      MetricType::kGauge,
                      "",
                      {{{}, static_cast<double>(cached_)}}});
  return families;
}

}  // namespace gpuscope
