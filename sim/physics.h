// Workloads and physics of one simulated GPU. The state advances in fixed ticks of simulated time from
// t = 0, so the state at tick k depends only on (scenario, gpu, k): the simulator is deterministic
// however often, and from however many threads, it is queried.
//
// Each tick: the workload gives the activity (utilisation, memory traffic, link traffic, memory used);
// the temperature follows the previous tick's power with a first-order lag; the power demand follows the
// activity, is capped by the power limit (SwPowerCap, lower SM clock), reduced by thermal slowdown and
// the power brake; counters integrate.
//
// Thread-safety: GpuState is a plain value; Step is a pure function of its inputs.
#pragma once

#include <array>
#include <cstdint>

#include "sim/faults.h"
#include "sim/scenario.h"

namespace gpuscope::sim {

inline constexpr double kTickS = 0.1;

// What the workload does during one tick, before MIG scaling. Fractions are 0..1.
struct Activity {
  double util = 0;  // share of time a kernel ran (nvmlUtilization_t.gpu)
  double sm_active = 0;
  double occupancy = 0;
  double tensor = 0;
  double dram = 0;  // share of peak memory bandwidth (nvmlUtilization_t.memory)
  double fp64 = 0;
  double fp32 = 0;
  double fp16 = 0;
  double integer = 0;
  double mem_used_gib = 0;
  double pcie_tx_gbps = 0;  // GB/s
  double pcie_rx_gbps = 0;
  double nvlink = 0;   // share of each link's bandwidth
  double encoder = 0;  // percent
  double decoder = 0;
};

// Integrals of the activity (seconds of "fully active" for fractions, bytes for traffic), the basis of
// the GPM metrics: a metric over [t1, t2] is (I(t2) - I(t1)) / (t2 - t1).
struct ActivityIntegrals {
  double util = 0, sm_active = 0, occupancy = 0, tensor = 0, dram = 0, fp64 = 0, fp32 = 0, fp16 = 0,
         integer = 0;
  double pcie_tx_bytes = 0, pcie_rx_bytes = 0, nvlink_tx_bytes = 0, nvlink_rx_bytes = 0;
};

// Indexes of GpuState::violation_ns, the nvmlPerfPolicyType_t values.
inline constexpr unsigned kPolicyCount = 12;

struct GpuState {
  int64_t tick = -1;  // -1: not started
  double t = 0;
  // The instantaneous values of this tick.
  Activity raw;             // workload activity, unscaled (MIG instance i sees raw * load_i)
  double mig_share = 1;     // the parent's share of raw (1 without MIG)
  double mem_used_gib = 0;  // parent: all instances together
  double demand_w = 0;
  double power_w = 0;
  double temp_c = 0;
  unsigned sm_mhz = 0;
  uint64_t reasons = 0;  // nvmlClocksEventReason* bits
  unsigned pcie_gen = 0;
  unsigned pcie_width = 0;
  double pcie_tx_kibps = 0;
  double pcie_rx_kibps = 0;
  std::array<double, kMaxLinks> nvlink_kibps{};
  // Step rhythm of a training workload.
  double step_phase = 0;
  // Integrals since t = 0.
  double energy_mj = 0;
  std::array<double, kPolicyCount> violation_ns{};
  std::array<double, kMaxLinks> nvlink_tx_kib{};
  std::array<double, kMaxLinks> nvlink_rx_kib{};
  ActivityIntegrals integrals;  // of raw
};

// The initial state (tick -1, warm idle temperature).
GpuState InitialState(const Scenario& scenario, unsigned gpu);

// Advances the state by one tick.
void Step(const Scenario& scenario, unsigned gpu, GpuState& state);

// The parent GPU's share of the raw activity: 1 without MIG, sum(load * slices) / 7 with MIG.
double MigShare(const GpuConfig& gpu);

// Memory used by one MIG instance, GiB.
double MigInstanceMemoryGib(const GpuState& state, const MigInstance& instance);

// The share of a GPU's raw activity seen from the GPU itself (mig < 0: MigShare) or from its MIG instance
// `mig` (the instance's load). GPM samples and DCGM's profiling fields scale the integrals by it, so a
// fully busy instance reads 1 and the parent the slice-weighted sum of its instances.
double ActivityViewScale(const GpuConfig& gpu, int mig);

// Every integral times f.
ActivityIntegrals ScaledIntegrals(ActivityIntegrals a, double f);

// The average rates over an interval of `seconds` (> 0): (to - from) / seconds for every integral
// (fractions for activities, bytes per second for traffic).
ActivityIntegrals IntervalRates(const ActivityIntegrals& from, const ActivityIntegrals& to, double seconds);

}  // namespace gpuscope::sim
