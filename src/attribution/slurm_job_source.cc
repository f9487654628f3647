#include "src/attribution/slurm_job_source.h"

#include <cstdlib>
#include <set>
#include <utility>

#include "src/core/log.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

SlurmJobSource::SlurmJobSource(SlurmJobSourceOptions options, JobTable* table)
    : options_(std::move(options)), table_(table) {}

SlurmJobSource::~SlurmJobSource() { Stop(); }

void SlurmJobSource::Start() {
  if (thread_.joinable()) std::abort();
  {
    MutexLock lock(&wake_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void SlurmJobSource::Stop() {
  {
    MutexLock lock(&wake_mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void SlurmJobSource::Run() {
  while (true) {
    {
      MutexLock lock(&wake_mu_);
      if (stopping_) return;
    }
    QueryOnce(false);
    MutexLock lock(&wake_mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.min_query_interval;
    while (!stopping_ && std::chrono::steady_clock::now() < deadline) wake_.WaitUntil(&wake_mu_, deadline);
  }
}

Status SlurmJobSource::QueryOnce(bool force) {
  MutexLock cycle(&cycle_mu_);
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
    MutexLock lock(&metrics_mu_);
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
  MutexLock lock(&metrics_mu_);
  cached_ = cache_.size();
}

std::vector<MetricFamily> SlurmJobSource::MetricFamilies() const {
  MutexLock lock(&metrics_mu_);
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
