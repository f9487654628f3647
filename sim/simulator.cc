#include "sim/simulator.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/prng.h"

namespace gpuscope::sim {
namespace {

std::optional<double> EnvNumber(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

std::string Hex(uint64_t value, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%0*llx", digits, static_cast<unsigned long long>(value));
  return std::string(buf).substr(0, static_cast<size_t>(digits));
}

std::string FormatUuid(const char* prefix, uint64_t a, uint64_t b) {
  return std::string(prefix) + Hex(a >> 32, 8) + "-" + Hex((a >> 16) & 0xFFFF, 4) + "-" + Hex(a & 0xFFFF, 4) +
         "-" + Hex(b >> 48, 4) + "-" + Hex(b & 0xFFFFFFFFFFFFULL, 12);
}

}  // namespace

struct Simulator::EventSetState {
  std::map<unsigned, uint64_t> masks;  // gpu -> registered event types
  std::set<size_t> delivered;          // indexes into events_
};

std::variant<std::unique_ptr<Simulator>, std::string> Simulator::FromEnvironment() {
  const char* path = std::getenv("GPUSCOPE_SIM_SCENARIO");
  if (path == nullptr || *path == '\0') {
    return std::string("GPUSCOPE_SIM_SCENARIO is not set; point it at a scenario file (see sim/README.md)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("cannot read scenario file ") + path;
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseScenario(text.str());
  if (auto* error = std::get_if<ScenarioError>(&parsed)) return std::string(path) + ": " + error->message;
  Scenario scenario = std::move(std::get<Scenario>(parsed));
  TimeBase time{.speed = scenario.speed, .start_offset = scenario.start_offset, .frozen = std::nullopt};
  if (std::getenv("GPUSCOPE_SIM_SPEED") != nullptr) {
    const auto speed = EnvNumber("GPUSCOPE_SIM_SPEED");
    if (!speed || *speed <= 0) return std::string("GPUSCOPE_SIM_SPEED must be a positive number");
    time.speed = *speed;
  }
  // Several simulated nodes on one machine must not append to the same kernel log: the variable moves it
  // (set but empty: no kernel log at all).
  if (const char* kernel_log = std::getenv("GPUSCOPE_SIM_KERNEL_LOG"); kernel_log != nullptr) {
    scenario.kernel_log = kernel_log;
  }
  if (std::getenv("GPUSCOPE_SIM_TIME") != nullptr) {
    time.frozen = EnvNumber("GPUSCOPE_SIM_TIME");
    if (!time.frozen) return std::string("GPUSCOPE_SIM_TIME must be a non-negative number of seconds");
  }
  return std::make_unique<Simulator>(std::move(scenario), time);
}

Simulator::Simulator(Scenario scenario, TimeBase time)
    : scenario_(std::move(scenario)), time_(time), start_(std::chrono::steady_clock::now()) {
  if (time_.frozen) frozen_now_ = *time_.frozen;
  for (unsigned i = 0; i < gpu_count(); ++i) {
    slots_.push_back(std::make_unique<GpuSlot>());
    slots_.back()->state = InitialState(scenario_, i);
  }
  if (scenario_.proc_processes.enabled) {
    idle_scenario_ = scenario_;
    for (GpuConfig& g : idle_scenario_.gpus) {
      g.workload = Workload{};
      g.workload.power_intensity = 0;
    }
    for (unsigned i = 0; i < gpu_count(); ++i) {
      idle_slots_.push_back(std::make_unique<GpuSlot>());
      idle_slots_.back()->state = InitialState(idle_scenario_, i);
    }
    scanner_ = std::make_unique<ProcProcessScanner>(scenario_.proc_processes.proc_root,
                                                    scenario_.proc_processes.marker, gpu_count());
  }
  events_ = BuildEvents(scenario_);
  if (!scenario_.kernel_log.empty()) {
    for (const SimEvent& e : events_) {
      if (e.log) {
        next_log_time_ = e.time;
        break;
      }
    }
  }
}

Simulator::~Simulator() { Shutdown(); }

double Simulator::Now() const {
  if (time_.frozen) return frozen_now_.load();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
  return time_.start_offset + elapsed.count() * time_.speed;
}

GpuState Simulator::StateAt(unsigned gpu, double t) {
  const int64_t tick = static_cast<int64_t>(std::floor(std::max(0.0, t) / kTickS + 1e-9));
  const bool idle = scanner_ && scanner_->ProcessesByGpu()[gpu].empty();
  const Scenario& scenario = idle ? idle_scenario_ : scenario_;
  GpuSlot& slot = idle ? *idle_slots_[gpu] : *slots_[gpu];
  gpuscope::MutexLock lock(&slot.mu);
  if (slot.state.tick > tick) slot.state = InitialState(scenario, gpu);  // asked for the past: replay
  while (slot.state.tick < tick) Step(scenario, gpu, slot.state);
  return slot.state;
}

std::vector<std::vector<unsigned>> Simulator::ProcProcessesByGpu() {
  if (!scanner_) return std::vector<std::vector<unsigned>>(gpu_count());
  return scanner_->ProcessesByGpu();
}

unsigned Simulator::Minor(unsigned gpu) const {
  const int minor = scenario_.gpus[gpu].minor;
  return minor >= 0 ? static_cast<unsigned>(minor) : gpu;
}

std::string Simulator::Uuid(unsigned gpu) const {
  return FormatUuid("GPU-", Hash4(scenario_.seed, gpu, 1, 0), Hash4(scenario_.seed, gpu, 2, 0));
}

std::string Simulator::MigUuid(unsigned gpu, unsigned instance) const {
  return FormatUuid("MIG-", Hash4(scenario_.seed, gpu, 3, instance), Hash4(scenario_.seed, gpu, 4, instance));
}

std::string Simulator::Serial(unsigned gpu) const {
  return "1652" + std::to_string(100000000 + Hash4(scenario_.seed, gpu, 5, 0) % 900000000);
}

unsigned Simulator::PciBus(unsigned gpu) const {
  const std::vector<unsigned>& buses = scenario_.gpus[gpu].model->hgx_buses;
  // Beyond one HGX board: further boards continue on higher buses.
  return gpu < buses.size() ? buses[gpu] : (0x100 - 8 * (gpu / 8 + 1) + gpu % 8) & 0xFF;
}

unsigned Simulator::Pid(unsigned gpu, unsigned process) const {
  // torchrun-like: one launcher, ranks with consecutive pids.
  const unsigned base = 20000 + static_cast<unsigned>(Hash4(scenario_.seed, 9, 9, 9) % 30000);
  return base + gpu * 8 + process;
}

Simulator::EventSetState* Simulator::CreateEventSet() {
  auto set = std::make_unique<EventSetState>();
  EventSetState* raw = set.get();
  gpuscope::MutexLock lock(&events_mu_);
  sets_.emplace(raw, std::move(set));
  return raw;
}

bool Simulator::IsEventSet(EventSetState* set) {
  gpuscope::MutexLock lock(&events_mu_);
  return sets_.count(set) != 0;
}

void Simulator::FreeEventSet(EventSetState* set) {
  gpuscope::MutexLock lock(&events_mu_);
  sets_.erase(set);
  events_cv_.NotifyAll();
}

void Simulator::RegisterEvents(EventSetState* set, unsigned gpu, uint64_t mask) {
  gpuscope::MutexLock lock(&events_mu_);
  auto it = sets_.find(set);
  if (it != sets_.end()) it->second->masks[gpu] |= mask;
  events_cv_.NotifyAll();
}

Simulator::WaitResult Simulator::WaitEvent(EventSetState* set, unsigned timeout_ms, SimEvent* out) {
  // nvmlEventTypeXidCriticalError; the only event type the simulator produces.
  constexpr uint64_t kXidMask = 0x8;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  gpuscope::MutexLock lock(&events_mu_);
  while (true) {
    if (shut_down_) return WaitResult::kShutdown;
    auto it = sets_.find(set);
    if (it == sets_.end()) return WaitResult::kShutdown;
    EventSetState& state = *it->second;
    const double now = Now();
    std::optional<double> next_due;
    for (size_t i = 0; i < events_.size(); ++i) {
      const SimEvent& e = events_[i];
      auto reg = state.masks.find(e.gpu);
      if (reg == state.masks.end() || (reg->second & kXidMask) == 0 || state.delivered.count(i) != 0)
        continue;
      if (e.time <= now) {
        state.delivered.insert(i);
        *out = e;
        return WaitResult::kEvent;
      }
      if (!next_due || e.time < *next_due) next_due = e.time;
    }
    auto wake = deadline;
    if (next_due && !time_.frozen) {
      const auto real_wait = std::chrono::duration<double>((*next_due - now) / time_.speed);
      const auto due = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(real_wait) +
                       std::chrono::milliseconds(1);
      if (due < wake) wake = due;
    }
    if (std::chrono::steady_clock::now() >= deadline) return WaitResult::kTimeout;
    events_cv_.WaitUntil(&events_mu_, wake);
  }
}

void Simulator::PumpKernelLog(double now) {
  if (now < next_log_time_.load(std::memory_order_relaxed)) return;
  gpuscope::MutexLock lock(&log_mu_);
  std::ofstream log(scenario_.kernel_log, std::ios::app);
  while (log_cursor_ < events_.size() && events_[log_cursor_].time <= now) {
    const SimEvent& e = events_[log_cursor_++];
    if (e.log && log) log << KernelLogLine(e, PciBus(e.gpu)) << '\n';
  }
  double next = kForever;
  for (size_t i = log_cursor_; i < events_.size(); ++i) {
    if (events_[i].log) {
      next = events_[i].time;
      break;
    }
  }
  next_log_time_ = next;
}

void Simulator::Shutdown() {
  shut_down_ = true;
  gpuscope::MutexLock lock(&events_mu_);
  events_cv_.NotifyAll();
}

}  // namespace gpuscope::sim
