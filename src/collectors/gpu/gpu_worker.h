// GpuWorker: a persistent thread that owns one GPU: its first job opens the device (GpuDevice::Open, the
// identity reads), later jobs run one collection (GpuDevice::Read), so that a slow or hung NVML call on one
// GPU, at start-up or later, delays only that GPU. The collector posts a job each cycle, waits until its
// deadline, and takes the result if the job finished; a worker still busy from an earlier cycle is
// skipped (Post returns false) until it returns. A job that fails to open the device leaves the worker
// unopened; the next posted job tries again.
//
// Thread-safety: Post/WaitUntil/Take/Busy/BusyFor are called from the collector's thread;
// device() from any thread. The worker thread touches the device and the result buffer only while a job
// runs.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "src/collectors/gpu/gpu_device.h"
#include "src/core/mutex.h"

namespace gpuscope {

class GpuWorker {
 public:
  // Starts the thread for GPU `index`; nothing is asked of NVML until the first job.
  GpuWorker(std::shared_ptr<const NvmlLibrary> nvml, unsigned int index,
            std::shared_ptr<const GpuNodeContext> node);
  // Asks the thread to stop and waits up to `kJoinTimeout` for a running job; a thread still hung in
  // NVML is detached (it owns the device, the node context and, through them, the library, so nothing
  // it uses is freed).
  ~GpuWorker();
  GpuWorker(const GpuWorker&) = delete;
  GpuWorker& operator=(const GpuWorker&) = delete;

  static constexpr std::chrono::milliseconds kJoinTimeout{200};

  // What a finished job reports.
  enum class Outcome {
    kOk,          // the device is open and was read
    kLost,        // the device is open; NVML reported GPU_IS_LOST during the read
    kOpenFailed,  // the device could not be opened (open_error() says why)
  };

  // Starts a job (open if needed, then read). Returns false (and does nothing) while an earlier job is
  // still running.
  bool Post();
  // Waits until the posted job finished or `deadline` passed; true when it finished.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline);
  // After WaitUntil returned true: swaps the job's samples into `*samples` (whose old content becomes the
  // next job's reused buffer) and returns the outcome; for kOpenFailed, `*open_error` (when not null)
  // receives the reason.
  Outcome Take(GpuSampleBuffer* samples, std::string* open_error = nullptr);
  // Whether a job is running (possibly hung in NVML).
  bool Busy() const;
  // How long the current job has been running; zero when idle.
  std::chrono::steady_clock::duration BusyFor() const;

  unsigned int index() const { return index_; }
  // The opened device; null until a job has opened it. Its identity and labels are immutable.
  std::shared_ptr<const GpuDevice> device() const;

 private:
  struct State {
    std::shared_ptr<const NvmlLibrary> nvml;
    std::shared_ptr<const GpuNodeContext> node;  // outlives `device`, which refers to it
    unsigned int index = 0;
    mutable Mutex mu;
    CondVar cv;
    std::shared_ptr<GpuDevice> device GUARDED_BY(mu);  // set once by the thread
    bool job GUARDED_BY(mu) = false;                   // a job is posted or running
    bool done GUARDED_BY(mu) = false;                  // the job finished and its result waits to be taken
    bool stop GUARDED_BY(mu) = false;
    bool exited GUARDED_BY(mu) = false;
    std::chrono::steady_clock::time_point started GUARDED_BY(mu){};
    GpuSampleBuffer samples GUARDED_BY(mu);
    Outcome outcome GUARDED_BY(mu) = Outcome::kOk;
    std::string open_error GUARDED_BY(mu);
  };
  static void Run(const std::shared_ptr<State>& state);  // the thread holds its own copy

  unsigned int index_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

}  // namespace gpuscope
