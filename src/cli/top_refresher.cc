#include "src/cli/top_refresher.h"

#include <chrono>
#include <utility>

#include "src/core/mutex.h"

namespace gpuscope {

struct TopRefresher::Shared {
  TimedQueryFunction query;
  std::function<double()> now;
  Mutex mu;
  CondVar wake_cv;
  TopMetric metric GUARDED_BY(mu) = TopMetric::kUtilization;
  double interval_seconds GUARDED_BY(mu) = 5;
  bool wake GUARDED_BY(mu) = false;
  bool stop GUARDED_BY(mu) = false;
  bool busy GUARDED_BY(mu) = false;  // a refresh's queries are in flight
  TopRefresh latest GUARDED_BY(mu);
};

TopRefresher::TopRefresher(TimedQueryFunction query, std::function<double()> now, TopMetric metric,
                           double interval_seconds)
    : shared_(std::make_shared<Shared>()) {
  shared_->query = std::move(query);
  shared_->now = std::move(now);
  {
    MutexLock lock(&shared_->mu);
    shared_->metric = metric;
    shared_->interval_seconds = interval_seconds;
  }
  thread_ = std::thread(Loop, shared_);
}

TopRefresher::~TopRefresher() { Stop(); }

void TopRefresher::Loop(const std::shared_ptr<Shared>& shared) {
  for (;;) {
    TopMetric metric;
    {
      MutexLock lock(&shared->mu);
      if (shared->stop) return;
      metric = shared->metric;
      shared->busy = true;
      shared->wake = false;
    }
    const double time = shared->now();
    FleetSnapshot snapshot;
    Status status =
        FetchFleetSnapshot([&](const std::string& expr,
                               std::vector<PromSeries>* series) { return shared->query(expr, time, series); },
                           metric, &snapshot);
    snapshot.time = time;
    MutexLock lock(&shared->mu);
    shared->busy = false;
    ++shared->latest.generation;
    if (status.ok()) {
      shared->latest.snapshot = std::move(snapshot);
      shared->latest.updated = time;
      shared->latest.error.clear();
    } else {
      shared->latest.error = status.message();
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(shared->interval_seconds * 1000));
    while (!shared->stop && !shared->wake && std::chrono::steady_clock::now() < deadline) {
      shared->wake_cv.WaitUntil(&shared->mu, deadline);
    }
  }
}

void TopRefresher::SetMetric(TopMetric metric) {
  MutexLock lock(&shared_->mu);
  shared_->metric = metric;
  shared_->wake = true;
  shared_->wake_cv.NotifyAll();
}

void TopRefresher::SetInterval(double seconds) {
  MutexLock lock(&shared_->mu);
  shared_->interval_seconds = seconds;
  shared_->wake = true;
  shared_->wake_cv.NotifyAll();
}

bool TopRefresher::Latest(TopRefresh* out) const {
  MutexLock lock(&shared_->mu);
  if (shared_->latest.generation <= out->generation) return false;
  *out = shared_->latest;
  return true;
}

bool TopRefresher::Stop() {
  if (!thread_.joinable()) return true;
  bool busy;
  {
    MutexLock lock(&shared_->mu);
    shared_->stop = true;
    busy = shared_->busy;
    shared_->wake_cv.NotifyAll();
  }
  if (busy) {
    thread_.detach();
    return false;
  }
  thread_.join();
  return true;
}

}  // namespace gpuscope
