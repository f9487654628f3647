// DcgmBackend: DCGM as an optional second source of the GPU collector, for what NVML cannot give: the
// profiling fields (DCGM_FI_PROF_*) on GPUs without GPM (Ampere and older), per GPU and per MIG GPU
// instance, and DCGM's health watches (PCIe, memory, InfoROM, thermal, power, NVLink). It also applies the
// node's profiling pause to DCGM (dcgmProfPause / dcgmProfResume).
//
// One thread of its own owns the DCGM connection: it loads libdcgm (DcgmLibrary), connects to the node's
// nv-hostengine (so gpuscope shares DCGM's profiling module with dcgm-exporter, DCGM diagnostics and other
// clients instead of fighting them for it) or starts an embedded host engine, watches the profiling fields
// at `interval`, reads them every `interval` and the health watches every `health_interval`, and keeps the
// latest values. A host engine that goes away (DCGM_ST_CONNECTION_NOT_VALID) drops every value at once;
// the thread reconnects every `retry_interval` and sets its groups, watches and the pause up again. The GPU
// workers only read the kept values (Profiling, Health): a slow or hung DCGM never delays a GPU's cycle.
//
// DCGM GPUs are matched to NVML's by UUID, MIG GPU instances by (GPU UUID, GPU instance id).
//
// Thread-safety: Start, Stop, Profiling, Health and status are safe from any thread; Stop (and the
// destructor) waits for a DCGM call in progress.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/collectors/gpu/gpm.h"
#include "src/core/mutex.h"
#include "src/platform/dcgm/dcgm_api.h"

namespace gpuscope {

class DcgmLibrary;
class ProfilingPause;

enum class DcgmMode {
  kAuto,        // the host engine at `address` when one answers at the first connection, else embedded
  kEmbedded,    // dcgmStartEmbedded: DCGM inside the agent
  kHostengine,  // dcgmConnect_v2 to nv-hostengine at `address` only
};

// The health watch systems gpuscope reports, in label order.
enum class DcgmHealthSystem : int { kPcie, kMemory, kInforom, kThermal, kPower, kNvlink, kCount };
constexpr size_t kDcgmHealthSystemCount = static_cast<size_t>(DcgmHealthSystem::kCount);
// "pcie", "memory", "inforom", "thermal", "power", "nvlink": the `system` label and --dcgm.health's words.
std::string_view DcgmHealthSystemName(DcgmHealthSystem system);
dcgmHealthSystems_t DcgmHealthSystemBit(DcgmHealthSystem system);
// The system a --dcgm.health word names; nullopt for any other word.
std::optional<DcgmHealthSystem> ParseDcgmHealthSystem(std::string_view word);

struct DcgmBackendOptions {
  std::vector<std::string> libraries;  // tried in order (DcgmLibrary::DefaultCandidates())
  DcgmMode mode = DcgmMode::kAuto;
  std::string address = "localhost:5555";  // host[:port], or a unix socket: "unix:/path" or "/path"
  std::chrono::milliseconds interval{
      1000};  // watch period of the profiling fields, and how often they are read
  std::chrono::milliseconds health_interval{10000};
  std::chrono::milliseconds retry_interval{5000};     // between connection attempts
  std::chrono::milliseconds connect_timeout{2000};    // of one dcgmConnect_v2
  std::array<bool, kDcgmHealthSystemCount> health{};  // systems watched; none: no health watches
  ProfilingPause* pause = nullptr;                    // applied to DCGM; may be null
};

// One health incident DCGM reported that the previous check did not.
struct DcgmIncident {
  std::string uuid;
  unsigned int gpu_id = 0;  // DCGM's
  DcgmHealthSystem system = DcgmHealthSystem::kPcie;
  bool failure = false;   // DCGM_HEALTH_RESULT_FAIL; else WARN
  unsigned int code = 0;  // dcgmError_t
  std::string message;
};

// One GPU's health: each system's latest result and how many new incidents each had.
struct DcgmGpuHealth {
  // -1: not watched; 0: pass; 1: warn; 2: fail.
  std::array<int8_t, kDcgmHealthSystemCount> result{};
  std::array<uint64_t, kDcgmHealthSystemCount> warnings_total{};
  std::array<uint64_t, kDcgmHealthSystemCount> failures_total{};
};

struct DcgmStatus {
  bool library_loaded = false;
  bool connected = false;
  std::string mode;  // "embedded" or "hostengine" once decided; "auto" before
  uint64_t connects_total = 0;
  std::string library;  // the file loaded
};

class DcgmBackend {
 public:
  using IncidentObserver = std::function<void(const DcgmIncident&)>;
  explicit DcgmBackend(DcgmBackendOptions options, IncidentObserver on_incident = nullptr);
  ~DcgmBackend();
  DcgmBackend(const DcgmBackend&) = delete;
  DcgmBackend& operator=(const DcgmBackend&) = delete;

  // Starts the thread (loading the library happens there). Once.
  void Start();
  // Stops the thread, detaches from the pause, disconnects and shuts DCGM down; afterwards Profiling and
  // Health answer false. Idempotent; the destructor calls it.
  void Stop();

  // The profiling fields of the GPU `uuid` (no instance) or of its MIG GPU instance over DCGM's last
  // interval: ratios 0..1 and bytes/s, as GpmValues. False when DCGM has none now (not installed, not
  // connected, paused, not supported, or older than three intervals).
  bool Profiling(std::string_view uuid, std::optional<unsigned int> gpu_instance_id, GpmValues* out) const;
  // The GPU's health as of the last check; false without one.
  bool Health(std::string_view uuid, DcgmGpuHealth* out) const;
  DcgmStatus status() const;

 private:
  struct Entity {
    dcgmGroupEntityPair_t pair{};
    std::string uuid;  // the GPU's (a GPU instance's parent's)
    std::optional<unsigned int> gpu_instance_id;
    GpmValues values;   // guarded by mu_
    int64_t ts_us = 0;  // newest value's time; guarded by mu_
  };
  struct GpuHealthSlot {
    unsigned int gpu_id = 0;
    std::string uuid;
    DcgmGpuHealth health;                            // guarded by mu_
    bool checked = false;                            // guarded by mu_
    std::vector<std::pair<int, unsigned int>> open;  // (system, code) reported by the last check
  };

  void Run();
  // One pass: loads, connects, applies the pause, reads values and, when due, health.
  void Cycle(std::chrono::steady_clock::time_point now);
  bool Connect();
  bool Setup();
  void Disconnect(const std::string& why);
  void ApplyPause();
  void ReadProfiling();
  void CheckHealth();
  // Disconnects on DCGM_ST_CONNECTION_NOT_VALID; true when `r` is OK.
  bool Ok(dcgmReturn_t r, std::string_view call);

  const DcgmBackendOptions options_;
  const IncidentObserver on_incident_;
  std::thread thread_;
  Mutex stop_mu_;
  CondVar stop_cv_;
  bool stopping_ GUARDED_BY(stop_mu_) = false;
  Mutex lifecycle_mu_;  // Start and Stop
  bool stopped_ GUARDED_BY(lifecycle_mu_) = false;

  // The thread's own.
  std::shared_ptr<DcgmLibrary> dcgm_;
  bool initialized_ = false;
  bool connected_ = false;
  bool embedded_ = false;
  dcgmHandle_t handle_ = 0;
  dcgmGpuGrp_t group_ = 0;
  dcgmGpuGrp_t health_group_ = 0;
  dcgmFieldGrp_t field_group_ = 0;
  bool profiling_watched_ = false;
  bool health_set_ = false;
  bool pause_applied_ = false;       // what DCGM holds now
  std::optional<DcgmMode> decided_;  // kAuto's choice once a connection succeeded
  std::chrono::steady_clock::time_point next_attempt_{};
  std::chrono::steady_clock::time_point next_health_{};
  std::vector<dcgmGroupEntityPair_t> pairs_;
  std::vector<dcgmFieldValue_v2> values_;  // pairs_ x profiling fields, reused
  std::vector<unsigned short> field_ids_;  // the profiling fields' ids, in values_' order (DCGM takes them
                                           // non-const)
  std::unique_ptr<dcgmHealthResponse_t> health_response_;
  bool logged_missing_ = false;
  bool logged_profiling_ = false;

  mutable Mutex mu_;
  std::vector<Entity> entities_ GUARDED_BY(mu_);
  std::vector<GpuHealthSlot> health_ GUARDED_BY(mu_);
  DcgmStatus status_ GUARDED_BY(mu_);
};

}  // namespace gpuscope
