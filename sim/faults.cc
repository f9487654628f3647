#include "sim/faults.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/prng.h"

namespace gpuscope::sim {
namespace {

bool Active(const Fault& f, double t) { return t >= f.from && t < f.to; }

// Seconds of [from, to) elapsed by t.
double Elapsed(const Fault& f, double t) { return std::max(0.0, std::min(t, f.to) - f.from); }

uint64_t Floor(double v) { return static_cast<uint64_t>(std::floor(v)); }

}  // namespace

FaultEffects EffectsAt(const Scenario& s, unsigned gpu, double t) {
  FaultEffects e;
  e.link_throughput.fill(1.0);
  for (const Fault& f : s.faults) {
    if (f.kind == FaultKind::kHostEngineDown) continue;  // node-wide, no GPU's
    // A slow rank stretches every rank's step: the job-wide effect applies whichever GPU has the fault.
    if (f.kind == FaultKind::kNvlinkCrc && Active(f, t))
      e.job_step_slowdown = std::max(e.job_step_slowdown, f.step_slowdown);
    if (f.gpu != gpu) continue;
    switch (f.kind) {
      case FaultKind::kFallOffBus:
        e.lost = e.lost || t >= f.from;
        break;
      case FaultKind::kHang:
        e.hang = e.hang || Active(f, t);
        break;
      case FaultKind::kSlowCalls:
        if (Active(f, t)) e.slow_ms = std::max(e.slow_ms, f.delay_ms);
        break;
      case FaultKind::kPowerBrake:
        e.power_brake = e.power_brake || Active(f, t);
        break;
      case FaultKind::kPcieDegraded:
        if (Active(f, t)) {
          e.pcie_gen = f.pcie_gen;
          e.pcie_width = f.pcie_width;
        }
        break;
      case FaultKind::kNvlinkCrc:
        if (Active(f, t))
          e.link_throughput[f.link] = std::min(e.link_throughput[f.link], f.throughput_factor);
        break;
      case FaultKind::kInforomCorrupt:
        e.inforom_corrupt = e.inforom_corrupt || Active(f, t);
        break;
      default:
        break;
    }
  }
  return e;
}

bool HostEngineDownAt(const Scenario& s, double t) {
  for (const Fault& f : s.faults) {
    if (f.kind == FaultKind::kHostEngineDown && Active(f, t)) return true;
  }
  return false;
}

unsigned HostEngineStopsBy(const Scenario& s, double t) {
  unsigned stops = 0;
  for (const Fault& f : s.faults) {
    if (f.kind == FaultKind::kHostEngineDown && t >= f.from) ++stops;
  }
  return stops;
}

ErrorCounters CountersAt(const Scenario& s, unsigned gpu, double t) {
  ErrorCounters c;
  double pcie = 0;
  std::array<double, kMaxLinks> crc{};
  for (const Fault& f : s.faults) {
    if (f.gpu != gpu || t < f.from || f.kind == FaultKind::kHostEngineDown) continue;
    switch (f.kind) {
      case FaultKind::kSbeBurst: {
        const double span = f.to - f.from;
        const double share = span <= 0 ? 1.0 : std::min(1.0, Elapsed(f, t) / span);
        c.sbe_volatile += Floor(f.count * share);
        break;
      }
      case FaultKind::kDbe: {
        c.dbe_volatile += 1;
        c.retired_dbe_pages.push_back(
            0x1000ULL * (Hash4(s.seed, gpu, static_cast<uint64_t>(f.from * 1000), 7) % 0x4FFFFF));
        c.remapped_uncorrectable += 1;
        const bool pending = t < f.from + f.pending_s;
        c.retirement_pending = c.retirement_pending || pending;
        c.remap_pending = c.remap_pending || pending;
        break;
      }
      case FaultKind::kRowRemapFailure:
        c.remap_failure = true;
        break;
      case FaultKind::kPcieDegraded:
        pcie += f.rate * Elapsed(f, t);
        break;
      case FaultKind::kNvlinkCrc:
        crc[f.link] += f.rate * Elapsed(f, t);
        break;
      default:
        break;
    }
  }
  c.pcie_replays = Floor(pcie);
  for (unsigned l = 0; l < kMaxLinks; ++l) {
    // Every CRC-failed flit is replayed; a few in a hundred carry data; a burst now and then forces a
    // link recovery.
    c.crc_flit[l] = Floor(crc[l]);
    c.crc_data[l] = Floor(crc[l] * 0.04);
    c.replay[l] = Floor(crc[l]);
    c.recovery[l] = Floor(crc[l] / 500.0);
  }
  // The aggregate counters also hold what happened before this driver load: a small per-GPU history.
  c.sbe_aggregate = c.sbe_volatile + Hash4(s.seed, gpu, 11, 0) % 4;
  c.dbe_aggregate = c.dbe_volatile;
  return c;
}

std::vector<SimEvent> BuildEvents(const Scenario& s) {
  std::vector<SimEvent> events;
  for (const Fault& f : s.faults) {
    SimEvent e{.time = f.from, .gpu = f.gpu, .xid = 0, .pid = f.pid, .process = f.process, .log = f.log};
    switch (f.kind) {
      case FaultKind::kXid:
        e.xid = f.xid;
        break;
      case FaultKind::kDbe:
        e.xid = 48;
        break;
      case FaultKind::kRowRemapFailure:
        e.xid = 64;
        break;
      case FaultKind::kFallOffBus:
        e.xid = 79;
        break;
      default:
        continue;
    }
    events.push_back(e);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const SimEvent& a, const SimEvent& b) { return a.time < b.time; });
  return events;
}

std::string XidDescription(unsigned xid) {
  switch (xid) {
    case 13:
      return "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address";
    case 31:
      return "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2a_4c000000. Fault is of type "
             "FAULT_PDE ACCESS_TYPE_VIRT_READ";
    case 43:
      return "Ch 00000010, engmask 00000101, intr 00000000";
    case 45:
      return "Ch 00000010, Preemptive Channel Removal";
    case 48:
      return "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
             "partition 2, "
             "subpartition 0.";
    case 63:
      return "Row remapping event: the row was successfully remapped.";
    case 64:
      return "Row remapping failure: the remapping of a row failed.";
    case 74:
      return "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)";
    case 79:
      return "GPU has fallen off the bus.";
    case 92:
      return "High single-bit ECC error rate";
    case 94:
      return "Contained: SM (0x1). RST: No, D-RST: No";
    case 95:
      return "Uncontained: FBHUB. RST: Yes, D-RST: No";
    case 119:
      return "Timeout after 6s of waiting for RPC response from GPU0 GSP!";
    default:
      return "Unspecified error";
  }
}

std::string KernelLogLine(const SimEvent& e, unsigned pci_bus) {
  char head[96];
  std::snprintf(head, sizeof(head), "[%12.6f] NVRM: Xid (PCI:0000:%02x:00): %u, ", e.time, pci_bus, e.xid);
  std::string line = head;
  line += e.pid != 0 ? "pid=" + std::to_string(e.pid) : std::string("pid='<unknown>'");
  if (!e.process.empty()) line += ", name=" + e.process;
  line += ", " + XidDescription(e.xid);
  return line;
}

}  // namespace gpuscope::sim
