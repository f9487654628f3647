#include "src/node/job_table.h"

#include <algorithm>
#include <tuple>

namespace gpuscope {
namespace {

void FillBlank(std::string& into, const std::string& from) {
  if (into.empty()) into = from;
}

void MergeJob(JobInfo& into, const JobInfo& from) {
  FillBlank(into.user, from.user);
  FillBlank(into.uid, from.uid);
  FillBlank(into.account, from.account);
  FillBlank(into.partition, from.partition);
  FillBlank(into.job_name, from.job_name);
  FillBlank(into.array_job_id, from.array_job_id);
  FillBlank(into.array_task_id, from.array_task_id);
}

}  // namespace

std::string_view AttributionSourceName(AttributionSource source) {
  switch (source) {
    case AttributionSource::kMapping:
      return "mapping";
    case AttributionSource::kProc:
      return "proc";
    case AttributionSource::kSlurm:
      return "slurm";
  }
  return "unknown";
}

std::vector<const Allocation*> JobTable::View::JobsOn(std::string_view gpu) const {
  std::vector<const Allocation*> out;
  auto it = std::lower_bound(allocations.begin(), allocations.end(), gpu,
                             [](const Allocation& a, std::string_view key) { return a.gpu < key; });
  for (; it != allocations.end() && it->gpu == gpu; ++it) out.push_back(&*it);
  return out;
}

const JobInfo* JobTable::View::Job(std::string_view job_id) const {
  auto it = jobs.find(job_id);
  return it == jobs.end() ? nullptr : &it->second;
}

JobTable::JobTable() {
  MutexLock lock(&mu_);
  current_ = std::make_shared<const View>();
}

void JobTable::Update(AttributionSource source, AttributionUpdate update) {
  MutexLock lock(&mu_);
  by_source_[source] = std::move(update);
  Rebuild();
}

std::shared_ptr<const JobTable::View> JobTable::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

void JobTable::Rebuild() {
  auto view = std::make_shared<View>();
  view->version = next_version_++;
  std::map<std::pair<std::string, std::string>, Allocation> allocations;
  // by_source_ iterates in priority order (kMapping first), so earlier sources win each field.
  for (const auto& [source, update] : by_source_) {
    for (const Allocation& allocation : update.allocations) {
      if (allocation.job_id.empty() || allocation.gpu.empty()) continue;
      auto [it, inserted] = allocations.try_emplace({allocation.gpu, allocation.job_id}, allocation);
      if (!inserted) {
        FillBlank(it->second.rank, allocation.rank);
        FillBlank(it->second.step_id, allocation.step_id);
      }
    }
    for (const JobInfo& job : update.jobs) {
      if (job.job_id.empty()) continue;
      auto [it, inserted] = view->jobs.try_emplace(job.job_id, job);
      if (!inserted) MergeJob(it->second, job);
    }
  }
  for (auto& [key, allocation] : allocations) {
    if (!view->jobs.contains(allocation.job_id)) {
      JobInfo bare;
      bare.job_id = allocation.job_id;
      view->jobs.emplace(allocation.job_id, std::move(bare));
    }
    view->allocations.push_back(std::move(allocation));
  }
  current_ = std::move(view);
}

}  // namespace gpuscope
