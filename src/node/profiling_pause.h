// ProfilingPause: the node-wide pause of the agent's use of the GPUs' performance counters, so that a user
// can run Nsight Compute or Nsight Systems (which need those counters to themselves) without stopping
// monitoring. While paused, the GPU collector takes no GPM samples and the DCGM backend holds DCGM's
// profiling module paused (dcgmProfPause); every other metric goes on. A pause always has an end: it lifts
// by itself when its duration is up, so a forgotten pause cannot leave a node unprofiled for good.
//
// The HTTP endpoint (POST /api/v1/profiling/pause and /resume) sets it; the GPU collector and the DCGM
// backend read it every cycle; Tick() notices the expiry. Each change is reported once to the observer
// (the agent turns it into a profiling_paused or profiling_resumed event).
//
// Thread-safety: every member is safe from any thread. The observer is called without the lock held.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "src/core/mutex.h"
#include "src/core/status.h"

namespace gpuscope {

struct ProfilingPauseState {
  bool paused = false;
  double until_unix = 0;  // when the pause lifts by itself; 0 when not paused
  std::string reason;     // as given to Pause(); empty when not paused
  uint64_t pauses_total = 0;
  std::string dcgm = "not in use";  // what DCGM did about it: "paused", "resumed", "not in use" or an error
  uint64_t generation = 0;          // counts changes (pauses, resumes, expiries)
};

// One change: paused (with until and reason), or resumed (`expired` when the pause ran out).
struct ProfilingPauseChange {
  bool paused = false;
  bool expired = false;
  double until_unix = 0;
  std::string reason;
};

class ProfilingPause {
 public:
  static constexpr double kMaxSeconds = 86400;  // one day
  static constexpr size_t kMaxReasonBytes = 200;
  using Clock = std::function<double()>;  // Unix seconds
  using Observer = std::function<void(const ProfilingPauseChange&)>;

  // `clock` null: the system clock.
  explicit ProfilingPause(Clock clock = nullptr);

  // Set before use; null: nobody is told.
  void SetObserver(Observer observer);

  // Pauses for `seconds` from now (replacing a running pause's end). InvalidArgument unless
  // 0 < seconds <= kMaxSeconds and the reason is at most kMaxReasonBytes of valid UTF-8 without control
  // characters.
  Status Pause(double seconds, const std::string& reason);
  // Lifts the pause now; nothing when not paused.
  void Resume();
  // Lifts an expired pause (telling the observer); call it every cycle.
  void Tick();

  bool Paused() const;
  ProfilingPauseState State() const;
  // The DCGM backend, when there is one: `wake` is called after every change (so that it applies the change
  // at once rather than at its next cycle), and it reports what DCGM did with SetDcgmStatus.
  void AttachDcgm(std::function<void()> wake);
  // What DCGM did about the state of `generation` (State().generation when the backend read it).
  void SetDcgmStatus(std::string status, uint64_t generation);
  // Waits until DCGM has applied `generation` or `timeout` passed; true at once without a DCGM backend.
  bool WaitForDcgm(uint64_t generation, std::chrono::milliseconds timeout) const;

 private:
  double Now() const;
  // Tells the observer and wakes the DCGM backend.
  void Changed(const ProfilingPauseChange& change);

  Clock clock_;
  Observer observer_;
  mutable Mutex mu_;
  double until_unix_ GUARDED_BY(mu_) = 0;  // 0: not paused
  std::string reason_ GUARDED_BY(mu_);
  uint64_t pauses_total_ GUARDED_BY(mu_) = 0;
  std::string dcgm_ GUARDED_BY(mu_) = "not in use";
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  uint64_t dcgm_generation_ GUARDED_BY(mu_) = 0;  // the last generation DCGM applied
  std::function<void()> wake_dcgm_ GUARDED_BY(mu_);
  mutable CondVar dcgm_applied_;
};

}  // namespace gpuscope
