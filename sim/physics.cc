#include "sim/physics.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "sim/prng.h"
#include "src/platform/nvml/nvml_api.h"

namespace gpuscope::sim {
namespace {

// Noise channels, so that every random draw of a tick is independent.
enum Channel : uint64_t { kUtilNoise = 1, kPowerNoise, kLoadNoise };

double Clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// Per-lane GB/s of PCIe generations 1..6 (after encoding).
double PcieLaneGbps(unsigned gen) {
  static constexpr double kLane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  return kLane[std::min(gen, 6u)];
}

Activity Training(const Scenario& s, unsigned gpu, const Workload& w, int64_t tick, double t, double phase,
                  double slowdown) {
  Activity a;
  const double since_checkpoint = std::fmod(t, w.checkpoint_every_s);
  // Memory saws: the caching allocator grows between checkpoints and is emptied at the end of each.
  a.mem_used_gib = w.memory_gib + w.memory_saw_gib * (since_checkpoint / w.checkpoint_every_s);
  const double jitter = 0.02 * Signed(s.seed, gpu, static_cast<uint64_t>(tick), kUtilNoise);
  if (since_checkpoint >= w.checkpoint_every_s - w.checkpoint_s) {
    // Checkpoint: the model state is copied to host memory and written out; the GPU mostly waits.
    a.util = 0.05;
    a.sm_active = 0.03;
    a.occupancy = 0.02;
    a.dram = 0.08;
    a.fp32 = 0.01;
    a.pcie_tx_gbps = 12;
    a.pcie_rx_gbps = 0.2;
    return a;
  }
  // The compute part of a step keeps its length; a slow rank stretches the allreduce (everyone waits).
  const double compute = w.compute_fraction / slowdown;
  if (phase < compute) {
    a.util = Clamp01(0.97 + jitter);
    a.sm_active = Clamp01(0.82 + jitter);
    a.occupancy = 0.42;
    a.tensor = Clamp01(0.55 + jitter);
    a.dram = Clamp01(0.50 + jitter);
    a.fp16 = 0.45;
    a.fp32 = 0.12;
    a.integer = 0.08;
    a.nvlink = 0.05 * w.nvlink_fraction;
    a.pcie_rx_gbps = 1.5;
    a.pcie_tx_gbps = 0.1;
  } else {
    a.util = Clamp01(w.allreduce_util + jitter);
    a.sm_active = 0.5 * a.util;
    a.occupancy = 0.15 * a.util;
    a.tensor = 0.02;
    a.dram = 0.35 * a.util;
    a.fp32 = 0.05;
    a.integer = 0.05;
    // The same bytes per step spread over a longer allreduce: a lower rate on every link.
    const double normal = 1 - w.compute_fraction;
    const double stretched = 1 - compute;
    a.nvlink = w.nvlink_fraction * (normal > 0 && stretched > 0 ? normal / stretched : 1);
    a.pcie_rx_gbps = 0.3;
    a.pcie_tx_gbps = 0.1;
  }
  return a;
}

Activity Inference(const Scenario& s, unsigned gpu, const Workload& w, int64_t tick, double t) {
  Activity a;
  // Simulated t = 0 is midnight; the load follows a daily cosine peaking at peak_hour.
  const double hour = std::fmod(t / 3600.0, 24.0);
  const double daily = 0.5 + 0.5 * std::cos(2 * std::numbers::pi * (hour - w.peak_hour) / 24.0);
  const double load = Clamp01(w.min_util + (w.max_util - w.min_util) * daily +
                              w.noise * Signed(s.seed, gpu, tick, kLoadNoise));
  a.util = load;
  a.sm_active = 0.7 * load;
  a.occupancy = 0.3 * load;
  a.tensor = 0.35 * load;
  a.dram = 0.6 * load;  // decoding is memory-bound
  a.fp16 = 0.3 * load;
  a.fp32 = 0.1 * load;
  a.integer = 0.05 * load;
  a.mem_used_gib = w.memory_gib * (0.85 + 0.15 * load);  // the KV cache grows with the load
  a.pcie_rx_gbps = 0.2 + 1.0 * load;
  a.pcie_tx_gbps = 0.3 * load;
  a.nvlink = w.nvlink_fraction * load;
  a.encoder = w.encoder_util * load;
  a.decoder = w.decoder_util * load;
  return a;
}

Activity Evaluate(const Scenario& s, unsigned gpu, int64_t tick, double t, double phase, double slowdown) {
  const Workload& w = s.gpus[gpu].workload;
  switch (w.kind) {
    case WorkloadKind::kTraining:
      return Training(s, gpu, w, tick, t, phase, slowdown);
    case WorkloadKind::kInference:
      return Inference(s, gpu, w, tick, t);
    case WorkloadKind::kIdle:
      break;
  }
  Activity a;
  a.mem_used_gib = w.memory_gib;  // allocated but idle: memory held, nothing runs
  return a;
}

double TargetTemp(const GpuConfig& g, double power_w) {
  return g.ambient_c + g.model->thermal_rise_at_tdp_c * power_w / g.model->tdp_w;
}

}  // namespace

double MigShare(const GpuConfig& gpu) {
  if (gpu.mig.empty()) return 1;
  double share = 0;
  for (const MigInstance& inst : gpu.mig) share += inst.load * inst.profile->slices / 7.0;
  return share;
}

double MigInstanceMemoryGib(const GpuState& state, const MigInstance& instance) {
  if (instance.load <= 0) return 0;
  return std::min(state.raw.mem_used_gib, 0.95 * static_cast<double>(instance.profile->memory_mib) / 1024.0);
}

double ActivityViewScale(const GpuConfig& gpu, int mig) {
  if (mig < 0) return MigShare(gpu);
  return gpu.mig[static_cast<size_t>(mig)].load;
}

namespace {

// Every member of ActivityIntegrals, for the element-wise helpers below.
constexpr double ActivityIntegrals::*kIntegralFields[] = {
    &ActivityIntegrals::util,           &ActivityIntegrals::sm_active,
    &ActivityIntegrals::occupancy,      &ActivityIntegrals::tensor,
    &ActivityIntegrals::dram,           &ActivityIntegrals::fp64,
    &ActivityIntegrals::fp32,           &ActivityIntegrals::fp16,
    &ActivityIntegrals::integer,        &ActivityIntegrals::pcie_tx_bytes,
    &ActivityIntegrals::pcie_rx_bytes,  &ActivityIntegrals::nvlink_tx_bytes,
    &ActivityIntegrals::nvlink_rx_bytes};
static_assert(sizeof(kIntegralFields) / sizeof(kIntegralFields[0]) * sizeof(double) ==
                  sizeof(ActivityIntegrals),
              "kIntegralFields must list every member of ActivityIntegrals");

}  // namespace

ActivityIntegrals ScaledIntegrals(ActivityIntegrals a, double f) {
  for (double ActivityIntegrals::*field : kIntegralFields) a.*field *= f;
  return a;
}

ActivityIntegrals IntervalRates(const ActivityIntegrals& from, const ActivityIntegrals& to, double seconds) {
  ActivityIntegrals rates;
  for (double ActivityIntegrals::*field : kIntegralFields) rates.*field = (to.*field - from.*field) / seconds;
  return rates;
}

GpuState InitialState(const Scenario& s, unsigned gpu) {
  const GpuConfig& g = s.gpus[gpu];
  GpuState st;
  st.mig_share = MigShare(g);
  st.temp_c = TargetTemp(g, g.model->idle_power_w);
  st.power_w = g.model->idle_power_w;
  st.sm_mhz = g.model->sm_idle_mhz;
  st.pcie_gen = g.model->pcie_gen;
  st.pcie_width = g.model->pcie_width;
  return st;
}

namespace {

// Evaluates the workload for this tick into st.raw, advances a training step's phase (it pauses during
// checkpoints and stretches with the fault's slowdown) and sets the memory in use (the instances' sum on
// MIG).
void AdvanceWorkload(const Scenario& s, unsigned gpu, const FaultEffects& fx, GpuState& st) {
  const GpuConfig& g = s.gpus[gpu];
  const Workload& w = g.workload;
  const bool training = w.kind == WorkloadKind::kTraining;
  const double slowdown = training ? fx.job_step_slowdown : 1;
  st.raw = Evaluate(s, gpu, st.tick, st.t, st.step_phase, slowdown);
  const bool checkpoint =
      training && std::fmod(st.t, w.checkpoint_every_s) >= w.checkpoint_every_s - w.checkpoint_s;
  if (training && !checkpoint) st.step_phase = std::fmod(st.step_phase + kTickS / (w.step_s * slowdown), 1.0);
  if (g.mig.empty()) {
    st.mem_used_gib = st.raw.mem_used_gib;
  } else {
    st.mem_used_gib = 0;
    for (const MigInstance& inst : g.mig) st.mem_used_gib += MigInstanceMemoryGib(st, inst);
  }
}

// Power demand follows the load (util, dram: the parent GPU's share); the power limit caps it, thermal
// slowdown and the power brake cut it, and the SM clock drops to match. Sets st.demand_w, st.power_w,
// st.sm_mhz and st.reasons (the clock-event reason bits, GPU idle included).
void SetPowerAndClocks(const Scenario& s, unsigned gpu, const FaultEffects& fx, double util, double dram,
                       GpuState& st) {
  const GpuConfig& g = s.gpus[gpu];
  const GpuModel& m = *g.model;
  const Workload& w = g.workload;
  const double reported_temp = std::round(st.temp_c);
  const double busy = std::min(1.0, 0.7 * util + 0.6 * dram);
  const double held = w.processes > 0 ? 0.03 : 0;
  const double noise = 0.01 * Signed(s.seed, gpu, static_cast<uint64_t>(st.tick), kPowerNoise);
  st.demand_w =
      m.idle_power_w + (m.tdp_w - m.idle_power_w) * std::max(0.0, busy * w.power_intensity + held + noise);
  uint64_t reasons = 0;
  double clock = 1;
  double power = st.demand_w;
  if (st.demand_w > g.power_limit_w) {
    reasons |= nvmlClocksEventReasonSwPowerCap;
    clock = std::clamp((g.power_limit_w - m.idle_power_w) / (st.demand_w - m.idle_power_w), 0.5, 1.0);
    power = g.power_limit_w;
  }
  if (reported_temp >= m.slowdown_temp_c) {
    reasons |= nvmlClocksEventReasonSwThermalSlowdown;
    clock *= 0.85;
    power = m.idle_power_w + (power - m.idle_power_w) * 0.85;
  }
  if (reported_temp >= m.hw_slowdown_temp_c) {
    reasons |= nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksThrottleReasonHwSlowdown;
    clock *= 0.7;
    power = m.idle_power_w + (power - m.idle_power_w) * 0.7;
  }
  if (fx.power_brake) {
    reasons |= nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown;
    clock *= 0.5;
    power = m.idle_power_w + (power - m.idle_power_w) * 0.5;
  }
  const bool idle = util < 0.01;
  if (idle) reasons |= nvmlClocksEventReasonGpuIdle;
  st.reasons = reasons;
  st.power_w = power;
  st.sm_mhz = idle ? m.sm_idle_mhz
                   : std::max(m.sm_idle_mhz, static_cast<unsigned>(std::lround(m.sm_max_mhz * clock)));
}

// PCIe traffic this tick in GB/s, already capped by the link.
struct PcieTraffic {
  double tx_gbps;
  double rx_gbps;
};

// Sets the PCIe link (a fault may degrade it) and the throughput, which cannot exceed the link.
PcieTraffic SetPcieLink(const GpuModel& m, const FaultEffects& fx, double share, GpuState& st) {
  st.pcie_gen = fx.pcie_gen != 0 ? fx.pcie_gen : m.pcie_gen;
  st.pcie_width = fx.pcie_width != 0 ? fx.pcie_width : m.pcie_width;
  const double pcie_cap = PcieLaneGbps(st.pcie_gen) * st.pcie_width;
  const double tx_gbps = std::min(st.raw.pcie_tx_gbps * share, pcie_cap);
  const double rx_gbps = std::min(st.raw.pcie_rx_gbps * share, pcie_cap);
  st.pcie_tx_kibps = tx_gbps * 1e9 / 1024;
  st.pcie_rx_kibps = rx_gbps * 1e9 / 1024;
  return {tx_gbps, rx_gbps};
}

// Adds this tick to the violation time of each performance policy whose reason bits are set.
void AddViolationTime(const GpuModel& m, GpuState& st) {
  const uint64_t reasons = st.reasons;
  const bool idle = (reasons & nvmlClocksEventReasonGpuIdle) != 0;
  const double tick_ns = kTickS * 1e9;
  auto violate = [&](unsigned policy, bool on) {
    if (on) st.violation_ns[policy] += tick_ns;
  };
  violate(NVML_PERF_POLICY_POWER,
          reasons & (nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwPowerBrakeSlowdown));
  violate(NVML_PERF_POLICY_THERMAL,
          reasons & (nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown));
  violate(NVML_PERF_POLICY_BOARD_LIMIT, reasons & nvmlClocksThrottleReasonHwSlowdown);
  violate(NVML_PERF_POLICY_LOW_UTILIZATION, idle);
  violate(NVML_PERF_POLICY_TOTAL_APP_CLOCKS, reasons & ~nvmlClocksEventReasonGpuIdle);
  violate(NVML_PERF_POLICY_TOTAL_BASE_CLOCKS, !idle && st.sm_mhz < m.sm_base_mhz);
}

// Sets each NVLink's rate (a fault may slow one link) and adds its bytes. Returns the bytes transmitted
// over all links this tick.
double AddNvlinkTraffic(const GpuModel& m, const FaultEffects& fx, double share, GpuState& st) {
  double nvlink_tx_bytes = 0;
  for (unsigned l = 0; l < m.nvlinks; ++l) {
    const double gbps = m.nvlink_link_gbps * st.raw.nvlink * share * fx.link_throughput[l];
    st.nvlink_kibps[l] = gbps * 1e9 / 1024;
    st.nvlink_tx_kib[l] += st.nvlink_kibps[l] * kTickS;
    st.nvlink_rx_kib[l] += st.nvlink_kibps[l] * 0.98 * kTickS;
    nvlink_tx_bytes += gbps * 1e9 * kTickS;
  }
  return nvlink_tx_bytes;
}

// Adds this tick's raw activity and traffic to the integrals, which are kept unscaled by the MIG share.
void AddActivityIntegrals(double share, const PcieTraffic& pcie, double nvlink_tx_bytes, GpuState& st) {
  const double share_inv = share > 0 ? 1 / share : 0;
  ActivityIntegrals& in = st.integrals;
  in.util += st.raw.util * kTickS;
  in.sm_active += st.raw.sm_active * kTickS;
  in.occupancy += st.raw.occupancy * kTickS;
  in.tensor += st.raw.tensor * kTickS;
  in.dram += st.raw.dram * kTickS;
  in.fp64 += st.raw.fp64 * kTickS;
  in.fp32 += st.raw.fp32 * kTickS;
  in.fp16 += st.raw.fp16 * kTickS;
  in.integer += st.raw.integer * kTickS;
  in.pcie_tx_bytes += pcie.tx_gbps * share_inv * 1e9 * kTickS;
  in.pcie_rx_bytes += pcie.rx_gbps * share_inv * 1e9 * kTickS;
  in.nvlink_tx_bytes += nvlink_tx_bytes * share_inv;
  in.nvlink_rx_bytes += nvlink_tx_bytes * share_inv * 0.98;
}

}  // namespace

void Step(const Scenario& s, unsigned gpu, GpuState& st) {
  const GpuConfig& g = s.gpus[gpu];
  const GpuModel& m = *g.model;
  st.tick += 1;
  st.t = static_cast<double>(st.tick) * kTickS;
  const FaultEffects fx = EffectsAt(s, gpu, st.t);

  AdvanceWorkload(s, gpu, fx, st);
  const double share = st.mig_share;
  const double util = st.raw.util * share;
  const double dram = st.raw.dram * share;

  // Temperature lags the previous tick's power (first-order, time constant tau).
  const double alpha = 1 - std::exp(-kTickS / m.thermal_time_constant_s);
  st.temp_c += (TargetTemp(g, st.power_w) - st.temp_c) * alpha;

  SetPowerAndClocks(s, gpu, fx, util, dram, st);
  const PcieTraffic pcie = SetPcieLink(m, fx, share, st);
  st.energy_mj += st.power_w * kTickS * 1000;
  AddViolationTime(m, st);
  const double nvlink_tx_bytes = AddNvlinkTraffic(m, fx, share, st);
  AddActivityIntegrals(share, pcie, nvlink_tx_bytes, st);
}

}  // namespace gpuscope::sim
