// Fault injection: what the scenario's faults mean for one GPU at simulated time t. Everything here is a
// pure function of (scenario, gpu, t), so error counters are exact integrals of the fault rates and are
// monotonic in t by construction.
//
// Thread-safety: pure functions over an immutable Scenario.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace gpuscope::sim {

inline constexpr unsigned kMaxLinks = 36;

// Effects that change behaviour rather than counters.
struct FaultEffects {
  bool lost = false;             // fall_off_bus: every call returns GPU_IS_LOST
  bool hang = false;             // calls block
  double slow_ms = 0;            // calls sleep this long first
  bool power_brake = false;      // HW power brake asserted
  unsigned pcie_gen = 0;         // non-zero: degraded current link generation
  unsigned pcie_width = 0;       // non-zero: degraded current link width
  double job_step_slowdown = 1;  // job-wide training step time factor (from any GPU's nvlink_crc)
  bool inforom_corrupt = false;  // inforom_corrupt
  std::array<double, kMaxLinks> link_throughput{};  // per-link NVLink throughput factor (1 = healthy)
};

FaultEffects EffectsAt(const Scenario& scenario, unsigned gpu, double t);

// The node's nv-hostengine (hostengine_down faults, node-wide): whether a window covers t, and how many
// windows have begun by t. Each window stops the host engine; the one that comes back knows nothing of
// the connections, groups and watches made before, so a connection is good only while this count stays
// what it was when it connected.
bool HostEngineDownAt(const Scenario& scenario, double t);
unsigned HostEngineStopsBy(const Scenario& scenario, double t);

// Error counters as integrals of the faults up to t.
struct ErrorCounters {
  uint64_t sbe_volatile = 0;
  uint64_t dbe_volatile = 0;
  uint64_t sbe_aggregate = 0;
  uint64_t dbe_aggregate = 0;
  uint64_t pcie_replays = 0;
  std::array<uint64_t, kMaxLinks> crc_flit{};
  std::array<uint64_t, kMaxLinks> crc_data{};
  std::array<uint64_t, kMaxLinks> replay{};
  std::array<uint64_t, kMaxLinks> recovery{};
  std::vector<uint64_t> retired_dbe_pages;  // addresses
  bool retirement_pending = false;
  unsigned remapped_uncorrectable = 0;
  bool remap_pending = false;
  bool remap_failure = false;
};

ErrorCounters CountersAt(const Scenario& scenario, unsigned gpu, double t);

// One XID event: delivered once per event set, and written to the kernel log when configured.
struct SimEvent {
  double time = 0;
  unsigned gpu = 0;
  unsigned xid = 0;
  unsigned pid = 0;  // 0: unknown
  std::string process;
  bool log = true;
};

// Every XID event the faults produce (xid faults, dbe -> 48, row_remap_failure -> 64, fall_off_bus -> 79),
// sorted by time.
std::vector<SimEvent> BuildEvents(const Scenario& scenario);

// The driver's text for an XID ("GPU has fallen off the bus."); a generic text for unknown codes.
std::string XidDescription(unsigned xid);

// A dmesg-style kernel log line: "[  120.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=..., <text>".
std::string KernelLogLine(const SimEvent& event, unsigned pci_bus);

}  // namespace gpuscope::sim
