// The scenario model of the NVML simulator and its parser: a pure function from YAML text to a validated
// Scenario or an error message (no I/O), so it can be fuzzed and unit-tested. sim/README.md documents
// every key.
//
// Thread-safety: ParseScenario is reentrant; a Scenario is an immutable value once parsed.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/gpu_models.h"

namespace gpuscope::sim {

// The most GPUs one simulated node may have: an NVL72-style node (72 GPUs) and room beyond it.
inline constexpr unsigned kMaxGpus = 128;

inline constexpr double kForever = std::numeric_limits<double>::infinity();

enum class WorkloadKind { kIdle, kTraining, kInference };

struct Workload {
  WorkloadKind kind = WorkloadKind::kIdle;
  double memory_gib = 0;   // held by the process(es)
  unsigned processes = 0;  // compute processes on the GPU
  // How the memory is split between the processes (weights, one per process, in pid order); empty: evenly.
  std::vector<double> process_memory_shares;
  std::string process_name = "python3";
  double power_intensity = 0.95;  // power demand at 100% activity, as a fraction of TDP above idle
  double nvlink_fraction = 0;     // NVLink use while communicating, fraction of link bandwidth
  double encoder_util = 0;        // percent at full load
  double decoder_util = 0;
  // training
  double step_s = 1.0;
  double compute_fraction = 0.85;  // of a step; the rest is the allreduce
  double allreduce_util = 0.45;    // GPU utilisation during the allreduce
  double checkpoint_every_s = 1800;
  double checkpoint_s = 45;
  double memory_saw_gib = 4;  // growth between checkpoints, released at each
  // inference
  double peak_hour = 14;
  double min_util = 0.1;
  double max_util = 0.85;
  double noise = 0.05;
};

struct MigInstance {
  const MigProfile* profile = nullptr;
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  double load = 1.0;  // share of the GPU's workload activity this instance sees
};

struct GpuConfig {
  const GpuModel* model = nullptr;
  Workload workload;
  double power_limit_w = 0;  // 0 until parsed: defaults to the model's TDP
  double ambient_c = 30;
  std::vector<MigInstance> mig;  // empty: MIG disabled
  int minor = -1;                // /dev/nvidiaN minor number; -1: the NVML index
};

// Real processes as GPU processes (`proc_processes`): the simulator scans /proc for processes whose
// environment has `marker`=1 and reports each on the GPUs of its GPUSCOPE_SIM_GPUS, else its
// CUDA_VISIBLE_DEVICES (NVML indices), with `memory_gib` each. A GPU without such a process is idle.
struct ProcProcesses {
  bool enabled = false;
  std::string marker = "GPUSCOPE_SIM_GPU_PROCESS";
  double memory_gib = 2;
  std::string proc_root = "/proc";
};

enum class FaultKind {
  kXid,
  kSbeBurst,
  kDbe,
  kNvlinkCrc,
  kFallOffBus,
  kSlowCalls,
  kHang,
  kRowRemapFailure,
  kPcieDegraded,
  kPowerBrake,
  kInforomCorrupt,  // the GPU's InfoROM fails its checksum (DCGM health: INFOROM warning)
  kHostEngineDown,  // node-wide (no gpu): nv-hostengine stopped; a short window is a restart
};

struct Fault {
  FaultKind kind = FaultKind::kXid;
  unsigned gpu = 0;              // 0 for the node-wide hostengine_down
  double from = 0;               // `at` or `from`, simulated seconds
  double to = kForever;          // `to`, or from + `duration`
  unsigned xid = 0;              // xid
  unsigned pid = 0;              // xid
  std::string process;           // xid
  bool log = true;               // write the kernel-log line (when the scenario has kernel_log)
  unsigned count = 0;            // sbe_burst
  unsigned link = 0;             // nvlink_crc
  double rate = 0;               // nvlink_crc: CRC flit errors per second; pcie_degraded: replays per second
  double step_slowdown = 1;      // nvlink_crc: job-wide step time factor while active
  double throughput_factor = 1;  // nvlink_crc: that link's throughput factor while active
  double delay_ms = 0;           // slow_calls
  unsigned pcie_gen = 0;         // pcie_degraded
  unsigned pcie_width = 0;
  double pending_s = 60;  // dbe: remap pending for this long
};

// Where a DCGM host engine listens, as dcgmConnect_v2 names it: a TCP "host[:port]" (port 5555 when left
// out; localhost, 127.0.0.1 and ::1 are one host) or a unix socket path.
struct DcgmEndpoint {
  bool unix_socket = false;
  std::string host;  // TCP: lower case, "localhost" for the loopback spellings
  unsigned port = 5555;
  std::string path;  // unix socket
  bool operator==(const DcgmEndpoint&) const = default;
};

// Parses a host engine address: with `unix_socket` (dcgmConnect_v2's addressIsUnixSocket) a socket path,
// an optional "unix:" prefix removed; otherwise "host", "host:port" or "[ipv6]:port". nullopt when it is
// malformed (empty, an empty path, a port that is not 1..65535).
std::optional<DcgmEndpoint> ParseDcgmAddress(std::string_view text, bool unix_socket);

// The optional `dcgm:` section: whether an nv-hostengine runs on the node (the stand-in libdcgm.so.4's
// dcgmConnect_v2 reaches it) and where it listens.
struct DcgmConfig {
  bool hostengine = false;
  std::string address = "localhost:5555";  // a path starting with "/" or "unix:" is a unix socket
  // The address, parsed.
  DcgmEndpoint endpoint{.unix_socket = false, .host = "localhost", .port = 5555, .path = ""};
};

struct Scenario {
  uint64_t seed = 1;
  std::string driver_version = "550.90.07";
  std::string nvml_version = "12.550.90.07";
  double speed = 1;
  double start_offset = 0;
  std::string kernel_log;  // file the XID lines are appended to; empty: none
  ProcProcesses proc_processes;
  DcgmConfig dcgm;
  std::vector<GpuConfig> gpus;
  std::vector<Fault> faults;
};

struct ScenarioError {
  std::string message;
};

// Parses and validates a scenario. Success: the Scenario with every default filled in. Failure: a
// message naming the offending key (unknown keys, wrong types, out-of-range values and malformed YAML
// are all errors). Never throws.
std::variant<Scenario, ScenarioError> ParseScenario(std::string_view yaml);

}  // namespace gpuscope::sim
