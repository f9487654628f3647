#include "src/core/scheduler.h"

#include <algorithm>
#include <chrono>

#include "src/core/log.h"

namespace gpuscope {
namespace {

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

enum SelfMetric { kDuration, kSuccess, kLastSuccess, kRuns, kFailures };

}  // namespace

Scheduler::Scheduler(SnapshotStore* store, std::chrono::milliseconds stall_floor)
    : store_(store), stall_floor_(stall_floor) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::SetAfterCycle(std::function<void()> hook) { after_cycle_ = std::move(hook); }

void Scheduler::Add(std::unique_ptr<Collector> collector, std::chrono::milliseconds interval) {
  auto slot = std::make_unique<Slot>();
  slot->collector = std::move(collector);
  slot->interval = std::max(interval, std::chrono::milliseconds(1));
  slots_.push_back(std::move(slot));
  MutexLock lock(&mu_);
  stats_.emplace_back();
}

void Scheduler::Start() {
  started_at_ = std::chrono::steady_clock::now();
  for (size_t i = 0; i < slots_.size(); ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

void Scheduler::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void Scheduler::RunOnce() {
  if (started_at_ == std::chrono::steady_clock::time_point{}) started_at_ = std::chrono::steady_clock::now();
  for (size_t i = 0; i < slots_.size(); ++i) RunCycle(i);
}

void Scheduler::Loop(size_t index) {
  const Slot* slot = slots_[index].get();
  auto next = std::chrono::steady_clock::now();
  while (true) {
    RunCycle(index);
    // Fixed rate: the next cycle starts one interval after the previous start; missed slots are skipped
    // rather than run back to back.
    next += slot->interval;
    auto now = std::chrono::steady_clock::now();
    if (next < now) {
      auto behind = (now - next) / slot->interval + 1;
      next += slot->interval * behind;
    }
    MutexLock lock(&mu_);
    while (!stopping_ && std::chrono::steady_clock::now() < next) cv_.WaitUntil(&mu_, next);
    if (stopping_) return;
  }
}

void Scheduler::RunCycle(size_t index) {
  Slot* slot = slots_[index].get();
  std::vector<MetricFamily> families;
  auto start = std::chrono::steady_clock::now();
  Status status = slot->collector->Collect(families);
  auto end = std::chrono::steady_clock::now();
  double duration = std::chrono::duration<double>(end - start).count();

  std::string name(slot->collector->Name());
  if (status.code() == Status::Code::kNoData) {
    Log(LogLevel::kDebug, "collector has no data", {{"collector", name}, {"reason", status.message()}});
  } else if (!status.ok()) {
    Log(LogLevel::kWarn, "collector failed", {{"collector", name}, {"error", status.ToString()}});
  }
  // Partial results beat none: whatever the collector appended is published even on error.
  store_->Update(name, std::move(families));
  {
    MutexLock lock(&mu_);
    SlotStats& stats = stats_[index];
    stats.ran = true;
    stats.runs++;
    stats.last_duration_seconds = duration;
    stats.last_success = status.succeeded();
    stats.last_completed = end;
    if (status.succeeded()) {
      stats.last_success_unix_seconds = UnixSeconds();
      stats.last_error.clear();
    } else {
      stats.failures++;
      stats.last_error = status.ToString();
    }
  }
  PublishSelfMetrics();
  if (after_cycle_) after_cycle_();
  cv_.NotifyAll();
}

std::vector<MetricDescription> Scheduler::SelfMetricDescriptions() {
  return {
      {"gpuscope_collector_duration_seconds",
       MetricType::kGauge,
       "Duration of the collector's last cycle.",
       "seconds",
       {"collector"},
       "scheduler"},
      {"gpuscope_collector_success",
       MetricType::kGauge,
       "Whether the collector's last cycle succeeded (1) or failed (0).",
       "",
       {"collector"},
       "scheduler"},
      {"gpuscope_collector_last_success_timestamp_seconds",
       MetricType::kGauge,
       "Unix time of the collector's last successful cycle (0 before the first).",
       "seconds",
       {"collector"},
       "scheduler"},
      {"gpuscope_collector_runs_total",
       MetricType::kCounter,
       "Cycles the collector has completed.",
       "",
       {"collector"},
       "scheduler"},
      {"gpuscope_collector_failures_total",
       MetricType::kCounter,
       "Cycles of the collector that failed.",
       "",
       {"collector"},
       "scheduler"},
  };
}

void Scheduler::PublishSelfMetrics() {
  static const std::vector<MetricDescription> kSelf = SelfMetricDescriptions();
  MetricFamily duration = FamilyOf(kSelf[kDuration]);
  MetricFamily success = FamilyOf(kSelf[kSuccess]);
  MetricFamily last_success = FamilyOf(kSelf[kLastSuccess]);
  MetricFamily runs = FamilyOf(kSelf[kRuns]);
  MetricFamily failures = FamilyOf(kSelf[kFailures]);
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < slots_.size(); ++i) {
      const SlotStats& stats = stats_[i];
      if (!stats.ran) continue;
      Labels labels{{"collector", std::string(slots_[i]->collector->Name())}};
      duration.samples.push_back({labels, stats.last_duration_seconds});
      success.samples.push_back({labels, stats.last_success ? 1.0 : 0.0});
      last_success.samples.push_back({labels, stats.last_success_unix_seconds});
      runs.samples.push_back({labels, static_cast<double>(stats.runs)});
      failures.samples.push_back({std::move(labels), static_cast<double>(stats.failures)});
    }
  }
  std::vector<MetricFamily> families;
  families.push_back(std::move(duration));
  families.push_back(std::move(success));
  families.push_back(std::move(last_success));
  families.push_back(std::move(runs));
  families.push_back(std::move(failures));
  store_->Update("scheduler", std::move(families));
}

HealthReport Scheduler::Health() const {
  HealthReport report;
  report.ready = true;
  auto now = std::chrono::steady_clock::now();
  MutexLock lock(&mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = *slots_[i];
    const SlotStats& stats = stats_[i];
    std::string name(slot.collector->Name());
    if (!stats.ran) report.ready = false;
    if (!slot.collector->Healthy()) {
      report.healthy = false;
      report.detail += name + ": source unavailable";
      if (!stats.last_error.empty()) report.detail += " (" + stats.last_error + ")";
      report.detail += "\n";
    }
    auto stall_after = std::max<std::chrono::steady_clock::duration>(3 * slot.interval, stall_floor_);
    auto since = stats.ran ? stats.last_completed : started_at_;
    if (since != std::chrono::steady_clock::time_point{} && now - since > stall_after) {
      report.healthy = false;
      report.detail += name + ": no completed cycle for " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - since).count()) +
                       "s\n";
    }
  }
  return report;
}

bool Scheduler::WaitUntilReady(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (true) {
    if (std::all_of(stats_.begin(), stats_.end(), [](const SlotStats& s) { return s.ran; })) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    cv_.WaitUntil(&mu_, deadline);
  }
}

std::vector<const Collector*> Scheduler::collectors() const {
  std::vector<const Collector*> out;
  for (const auto& slot : slots_) out.push_back(slot->collector.get());
  return out;
}

}  // namespace gpuscope
