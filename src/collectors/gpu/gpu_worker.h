// GpuWorker: a persistent thread that runs one GPU's collection (GpuDevice::Read) when handed a job, so
// that a hung NVML call on one GPU delays only that GPU. The collector posts a job each cycle, waits
// until its deadline, and takes the result if the job finished; a worker still busy from an earlier
// cycle is skipped (Post returns false) until it returns.
//
// Thread-safety: Post/Wait/Take/Busy are called from the collector's thread; the worker thread only
// touches the device and the result buffer while a job runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "src/collectors/gpu/gpu_device.h"

namespace gpuscope {

class GpuWorker {
 public:
  explicit GpuWorker(std::shared_ptr<GpuDevice> device);
  // Asks the thread to stop and waits up to `join_timeout` for a running job; a thread still hung in
  // NVML is detached (it owns the device and, through it, the library, so nothing it uses is freed).
  ~GpuWorker();
  GpuWorker(const GpuWorker&) = delete;
  GpuWorker& operator=(const GpuWorker&) = delete;

  static constexpr std::chrono::milliseconds kJoinTimeout{200};

  // Starts a collection job. Returns false (and does nothing) while an earlier job is still running.
  bool Post();
  // Waits until the posted job finished or `deadline` passed; true when it finished.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline);
  // After WaitUntil returned true: swaps the job's samples into `*samples` (whose old content becomes the
  // next job's reused buffer) and returns the outcome.
  GpuDevice::ReadOutcome Take(GpuSampleBuffer* samples);
  // Whether a job is running (possibly hung in NVML).
  bool Busy() const;

  const GpuDevice& device() const { return *device_; }
  // How long the current job has been running; zero when idle.
  std::chrono::steady_clock::duration BusyFor() const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool job = false;   // a job is posted or running
    bool done = false;  // the job finished and its result waits to be taken
    bool stop = false;
    bool exited = false;
    std::chrono::steady_clock::time_point started{};
    GpuSampleBuffer samples;
    GpuDevice::ReadOutcome outcome = GpuDevice::ReadOutcome::kOk;
  };
  static void Run(std::shared_ptr<GpuDevice> device, std::shared_ptr<State> state);

  std::shared_ptr<GpuDevice> device_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

}  // namespace gpuscope
