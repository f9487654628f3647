// One loaded scenario: simulated time, the per-GPU state stepping, device identities, the XID event
// queue with its event sets, and the kernel-log writer. The C API surface (nvml_entry.cc) holds one
// Simulator between nvmlInit_v2 and the last nvmlShutdown.
//
// Thread-safety: every method may be called from any thread. Each GPU's state has its own mutex, so
// calls on different GPUs do not wait for each other; event sets share one mutex and condition variable.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sim/faults.h"
#include "sim/physics.h"
#include "sim/proc_processes.h"
#include "sim/scenario.h"
#include "src/core/mutex.h"

namespace gpuscope::sim {

// How simulated time relates to real time.
struct TimeBase {
  double speed = 1;
  double start_offset = 0;
  std::optional<double> frozen;  // GPUSCOPE_SIM_TIME: t is fixed (tests move it with gpuscopeSimSetTime)
};

class Simulator {
 public:
  // Reads GPUSCOPE_SIM_SCENARIO, GPUSCOPE_SIM_TIME, GPUSCOPE_SIM_SPEED and GPUSCOPE_SIM_KERNEL_LOG and loads
  // the scenario.
  // Success: the simulator, its clock started. Failure: a message for stderr.
  static std::variant<std::unique_ptr<Simulator>, std::string> FromEnvironment();

  Simulator(Scenario scenario, TimeBase time);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Scenario& scenario() const { return scenario_; }
  unsigned gpu_count() const { return static_cast<unsigned>(scenario_.gpus.size()); }

  // Simulated seconds now.
  double Now() const;

  // The state of a GPU at simulated time t (the last tick at or before t). Deterministic in t. With
  // proc_processes, a GPU without a marked process reports its idle twin instead: the same GPU with an
  // idle workload, stepped alongside (deterministic in t too).
  GpuState StateAt(unsigned gpu, double t);

  // proc_processes only: the real pids on each GPU (index -> sorted pids); empty lists otherwise.
  std::vector<std::vector<unsigned>> ProcProcessesByGpu();
  // The /dev/nvidiaN minor number of a GPU (the scenario's `minor`, default the index).
  unsigned Minor(unsigned gpu) const;

  // Identities, deterministic from seed and index.
  std::string Uuid(unsigned gpu) const;
  std::string MigUuid(unsigned gpu, unsigned instance) const;
  std::string Serial(unsigned gpu) const;
  unsigned PciBus(unsigned gpu) const;
  unsigned Pid(unsigned gpu, unsigned process) const;

  // Event sets. Create returns an opaque id; Register adds a GPU with an event mask; Wait delivers the
  // earliest due and not yet delivered event of the registered GPUs (each event once per set), sleeping
  // up to timeout_ms of real time and waking early when an event falls due.
  struct EventSetState;
  EventSetState* CreateEventSet();
  bool IsEventSet(EventSetState* set);
  void FreeEventSet(EventSetState* set);
  void RegisterEvents(EventSetState* set, unsigned gpu, uint64_t mask);
  enum class WaitResult { kEvent, kTimeout, kShutdown };
  WaitResult WaitEvent(EventSetState* set, unsigned timeout_ms, SimEvent* out);

  // Appends the kernel-log lines of every event due by now (when the scenario has kernel_log).
  void PumpKernelLog(double now);

  // Moves frozen time (GPUSCOPE_SIM_TIME) to `t`; ignored when time runs.
  void SetFrozenTime(double t) { frozen_now_.store(t); }

  // Wakes waiters and ends hangs; calls in flight return soon after.
  void Shutdown();
  bool shut_down() const { return shut_down_.load(); }

 private:
  struct GpuSlot {
    gpuscope::Mutex mu;
    GpuState state GUARDED_BY(mu);
  };

  Scenario scenario_;
  TimeBase time_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<GpuSlot>> slots_;
  Scenario idle_scenario_;                            // proc_processes: every workload idle
  std::vector<std::unique_ptr<GpuSlot>> idle_slots_;  // proc_processes: the idle twins
  std::unique_ptr<ProcProcessScanner> scanner_;
  std::vector<SimEvent> events_;
  std::atomic<bool> shut_down_{false};
  std::atomic<double> frozen_now_{0};  // simulated now while time_.frozen

  gpuscope::Mutex events_mu_;
  gpuscope::CondVar events_cv_;
  std::map<EventSetState*, std::unique_ptr<EventSetState>> sets_ GUARDED_BY(events_mu_);

  gpuscope::Mutex log_mu_;
  size_t log_cursor_ GUARDED_BY(log_mu_) = 0;
  std::atomic<double> next_log_time_{kForever};
};

}  // namespace gpuscope::sim
