// GpuCollector: the NVML collector, gpuscope's drop-in for dcgm-exporter. It loads NVML at run time
// (NvmlLibrary) and gives every GPU its own persistent worker thread, which opens the GPU (reads its
// identity once) and then collects it each cycle, so that one slow, hung or lost GPU is reported
// gpuscope_gpu_up 0 while the others keep reporting, at start-up as later. A GPU that cannot be opened is
// reported down with placeholder labels (gpu="<index>", empty identity) and its open is retried at most
// every init_retry_interval. XID errors come from NVML event threads (GPUs that open late are added);
// GPM metrics (Hopper+) are computed between cycles. Each cycle it publishes a typed GpuInventory (devices,
// MIG instances, processes, utilisation, new NVML XIDs) to the NodeState before it returns its families,
// and every sample carries its subject (GPU index, MIG instance, pid) for attribution. XID counts come
// from the node state's XidLedger, which merges NVML's XID events with the kernel log's "NVRM: Xid" lines.
// Logs go to the core logger (collector=gpu).
//
// Thread-safety: as Collector: Collect() from the scheduler thread only; Describe(), Name() and
// Healthy() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/collectors/gpu/compat.h"
#include "src/collectors/gpu/field_table.h"
#include "src/collectors/gpu/gpu_device.h"
#include "src/core/collector.h"
#include "src/core/label_cache.h"

namespace gpuscope {

class GpuWorker;
class NodeState;
class NvmlLibrary;
class XidEventMonitor;
class XidLedger;
struct GpuInventory;

struct GpuCollectorOptions {
  std::string nvml_library = "libnvidia-ml.so.1";  // --nvml.library
  // An NVML library opened by the caller (the fleet runner's per-node binding); null: nvml_library is
  // opened at init.
  std::shared_ptr<NvmlLibrary> nvml;
  // A GPU whose collection has not finished by then is reported gpuscope_gpu_up 0 for the cycle.
  std::chrono::milliseconds call_deadline{2000};
  std::string hostname;  // empty: gethostname()
  DcgmCompat dcgm_compat = DcgmCompat::kDcgm3;
  // Poll timeout of the XID event thread (also bounds how long shutdown waits for it).
  std::chrono::milliseconds event_wait{1000};
  // When NVML cannot be loaded or initialised, or a GPU cannot be opened, Collect() tries again at most
  // this often (per GPU for opens).
  std::chrono::milliseconds init_retry_interval{10000};
  // Where the inventory goes and the XID count shared with the event pipeline's kernel-log XIDs come
  // from; must outlive the collector. Null: the collector keeps a NodeState of its own.
  NodeState* node_state = nullptr;
  // DCGM (--dcgm): off, auto (used when libdcgm loads) or on (gpuscope_dcgm_up 0 when it does not).
  enum class Dcgm { kOff, kAuto, kOn };
  Dcgm dcgm = Dcgm::kOff;
  DcgmBackendOptions dcgm_options;     // its `pause` is set to the node state's
  bool prefer_dcgm_profiling = false;  // DCGM's profiling fields even where GPM has them (Hopper+)
  DcgmBackend::IncidentObserver on_dcgm_incident;  // each new health incident; may be null
};

class GpuCollector : public Collector {
 public:
  explicit GpuCollector(GpuCollectorOptions options);
  // Stops the worker and event threads without blocking on hung NVML calls; calls nvmlShutdown only
  // when no thread is stuck inside NVML.
  ~GpuCollector() override;

  std::string_view Name() const override { return "gpu"; }
  // Waits for every GPU's worker against one call_deadline. Ok when at least one GPU reported; NoData
  // without GPUs; Unavailable when NVML is not usable (init is retried every init_retry_interval) or no
  // GPU answered.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;
  // False while NVML is not loaded and initialised.
  bool Healthy() const override { return healthy_.load(); }

 private:
  // Per GPU (index = GPU index): its worker and what the collector remembers between cycles.
  struct Gpu {
    std::unique_ptr<GpuWorker> worker;
    GpuSampleBuffer buffer;  // reused every cycle
    Labels placeholder;      // labels while the GPU is not opened
    bool was_down = false;   // reported down last cycle (to log transitions once)
    bool open_posted = false;
    std::chrono::steady_clock::time_point last_open_post{};
    bool xid_watched = false;
  };

  // What one GPU's worker did this cycle.
  struct WorkerResult {
    bool up = false;           // answered before the deadline and read the device
    bool lost = false;         // answered: NVML reported the GPU lost during the read
    bool open_failed = false;  // answered: the device could not be opened (open_error says why)
    std::string open_error;
  };

  // nvmlInit, driver version, device count; starts one worker per GPU (no per-GPU NVML call).
  Status Init();
  // Init() unless done, retried at most every init_retry_interval; Ok once initialized.
  Status EnsureInitialized();
  // Posts every idle worker its job and waits for all against one call deadline.
  std::vector<WorkerResult> RunWorkers();  // index = GPU index
  // Logs why GPU `i` is down (once per transition, by the caller).
  void LogDown(size_t i, const GpuDevice* device, const WorkerResult& result) const;
  // The XID ledger's per-(GPU, XID) counts and last-seen times, by bus id (GPUs NVML lacks included).
  void AppendXidLedger(const XidLedger& ledger, const std::vector<std::shared_ptr<const GpuDevice>>& devices,
                       std::vector<MetricFamily>& families);
  // The node-wide families: the profiling pause and the DCGM connection.
  void AppendNodeFamilies(std::vector<MetricFamily>& families);
  // The inventory of this cycle from the workers' results (before their samples move into families).
  GpuInventory BuildInventory(const std::vector<std::shared_ptr<const GpuDevice>>& devices,
                              const std::vector<char>& up);
  void Shutdown();

  GpuCollectorOptions options_;
  const std::vector<GpuFamilySpec>& specs_;
  GpuNodeContext node_;
  std::atomic<bool> healthy_{false};
  bool initialized_ = false;
  Status init_status_;
  std::chrono::steady_clock::time_point last_init_attempt_{};
  bool attempted_init_ = false;

  std::shared_ptr<NvmlLibrary> nvml_;
  std::vector<Gpu> gpus_;
  std::unique_ptr<XidEventMonitor> xids_;
  std::shared_ptr<DcgmBackend> dcgm_;          // with options_.dcgm; started at the first Init()
  Labels node_labels_;                         // Hostname only
  std::unique_ptr<NodeState> own_node_state_;  // when options_.node_state is null
  NodeState* node_state_;
  std::map<std::pair<unsigned int, unsigned long long>, uint64_t> xids_fed_;  // NVML counts fed so far
  LabelSetCache label_cache_;  // GPU labels + info or XID labels, from cycle to cycle
  std::array<size_t, kGpuFamilyCount> family_sizes_{};  // samples per family last cycle (to reserve)
};

}  // namespace gpuscope
