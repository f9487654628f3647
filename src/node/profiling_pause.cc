#include "src/node/profiling_pause.h"

#include <chrono>
#include <utility>

#include "src/core/utf8.h"

namespace gpuscope {

ProfilingPause::ProfilingPause(Clock clock) : clock_(std::move(clock)) {}

void ProfilingPause::SetObserver(Observer observer) { observer_ = std::move(observer); }

double ProfilingPause::Now() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Status ProfilingPause::Pause(double seconds, const std::string& reason) {
  if (!(seconds > 0 && seconds <= kMaxSeconds)) {
    return Status::InvalidArgument("a pause lasts more than 0 and at most 86400 seconds (one day)");
  }
  if (reason.size() > kMaxReasonBytes) return Status::InvalidArgument("the reason is longer than 200 bytes");
  if (!IsValidUtf8(reason)) return Status::InvalidArgument("the reason is not valid UTF-8");
  for (const unsigned char c : reason) {
    if (c < 0x20 || c == 0x7f) return Status::InvalidArgument("the reason holds a control character");
  }
  ProfilingPauseChange change;
  {
    MutexLock lock(&mu_);
    until_unix_ = Now() + seconds;
    reason_ = reason;
    ++pauses_total_;
    ++generation_;
    change = {true, false, until_unix_, reason_};
  }
  Changed(change);
  return Status::Ok();
}

void ProfilingPause::Resume() {
  ProfilingPauseChange change;
  {
    MutexLock lock(&mu_);
    if (until_unix_ == 0) return;
    change = {false, false, until_unix_, reason_};
    until_unix_ = 0;
    reason_.clear();
    ++generation_;
  }
  Changed(change);
}

void ProfilingPause::Tick() {
  ProfilingPauseChange change;
  {
    MutexLock lock(&mu_);
    if (until_unix_ == 0 || Now() < until_unix_) return;
    change = {false, true, until_unix_, reason_};
    until_unix_ = 0;
    reason_.clear();
    ++generation_;
  }
  Changed(change);
}

void ProfilingPause::Changed(const ProfilingPauseChange& change) {
  std::function<void()> wake;
  {
    MutexLock lock(&mu_);
    wake = wake_dcgm_;
  }
  if (wake) wake();
  if (observer_) observer_(change);
}

bool ProfilingPause::Paused() const {
  MutexLock lock(&mu_);
  return until_unix_ != 0 && Now() < until_unix_;
}

ProfilingPauseState ProfilingPause::State() const {
  MutexLock lock(&mu_);
  ProfilingPauseState state;
  state.paused = until_unix_ != 0 && Now() < until_unix_;
  if (state.paused) {
    state.until_unix = until_unix_;
    state.reason = reason_;
  }
  state.pauses_total = pauses_total_;
  state.dcgm = dcgm_;
  state.generation = generation_;
  return state;
}

void ProfilingPause::AttachDcgm(std::function<void()> wake) {
  MutexLock lock(&mu_);
  wake_dcgm_ = std::move(wake);
}

void ProfilingPause::SetDcgmStatus(std::string status, uint64_t generation) {
  {
    MutexLock lock(&mu_);
    dcgm_ = std::move(status);
    if (generation > dcgm_generation_) dcgm_generation_ = generation;
  }
  dcgm_applied_.NotifyAll();
}

bool ProfilingPause::WaitForDcgm(uint64_t generation, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (wake_dcgm_ && dcgm_generation_ < generation) {
    if (!dcgm_applied_.WaitUntil(&mu_, deadline) && std::chrono::steady_clock::now() >= deadline) break;
  }
  return !wake_dcgm_ || dcgm_generation_ >= generation;
}

}  // namespace gpuscope
