// GpuCollector: the NVML collector, gpuscope's drop-in for dcgm-exporter. It loads NVML at run time
// (NvmlLibrary), reads each GPU's identity once, and collects every GPU on its own persistent worker
// thread so that one hung or lost GPU is reported gpuscope_gpu_up 0 while the others keep reporting.
// XID errors come from an NVML event thread; GPM metrics (Hopper+) are computed between cycles.
//
// Thread-safety: as Collector: Collect() from the scheduler thread only; Describe(), Name() and
// Healthy() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "src/collectors/gpu/compat.h"
#include "src/collectors/gpu/field_table.h"
#include "src/collectors/gpu/gpu_device.h"
#include "src/core/collector.h"

namespace gpuscope {

class GpuWorker;
class NvmlLibrary;
class XidEventMonitor;

struct GpuCollectorOptions {
  std::string nvml_library = "libnvidia-ml.so.1";  // --nvml.library
  // A GPU whose collection has not finished by then is reported gpuscope_gpu_up 0 for the cycle.
  std::chrono::milliseconds call_deadline{2000};
  std::string hostname;  // empty: gethostname()
  DcgmCompat dcgm_compat = DcgmCompat::kDcgm3;
  // Poll timeout of the XID event thread (also bounds how long shutdown waits for it).
  std::chrono::milliseconds event_wait{1000};
  // When NVML cannot be loaded or initialised, Collect() tries again at most this often.
  std::chrono::milliseconds init_retry_interval{10000};
  // Where the collector's log lines go (one line each, no newline); default: stderr.
  GpuLogFunction log;
};

class GpuCollector : public Collector {
 public:
  explicit GpuCollector(GpuCollectorOptions options);
  // Stops the worker and event threads without blocking on hung NVML calls; calls nvmlShutdown only
  // when no thread is stuck inside NVML.
  ~GpuCollector() override;

  std::string_view Name() const override { return "gpu"; }
  // Ok when at least one GPU reported; NoData without GPUs; Unavailable when NVML is not usable (init
  // is retried every init_retry_interval) or no GPU answered.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;
  // False while NVML is not loaded and initialised.
  bool Healthy() const override { return healthy_.load(); }

 private:
  Status Init();
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
  std::vector<std::unique_ptr<GpuWorker>> workers_;
  std::unique_ptr<XidEventMonitor> xids_;
  std::vector<GpuSampleBuffer> buffers_;  // one per GPU, reused every cycle
  std::vector<char> was_down_;            // per GPU: reported down last cycle (to log transitions once)
};

}  // namespace gpuscope
