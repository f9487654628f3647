#include "src/collectors/gpu/gpu_worker.h"

#include <pthread.h>

#include <utility>

namespace gpuscope {

GpuWorker::GpuWorker(std::shared_ptr<const NvmlLibrary> nvml, unsigned int index,
                     std::shared_ptr<const GpuNodeContext> node)
    : index_(index) {
  state_->nvml = std::move(nvml);
  state_->node = std::move(node);
  state_->index = index;
  thread_ = std::thread(Run, state_);
  std::string name = "gpuscope-gpu" + std::to_string(index);
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

GpuWorker::~GpuWorker() {
  bool exited = false;
  {
    State& state = *state_;
    const auto deadline = std::chrono::steady_clock::now() + kJoinTimeout;
    MutexLock lock(&state.mu);
    state.stop = true;
    state.cv.NotifyAll();
    while (!state.exited && std::chrono::steady_clock::now() < deadline)
      state.cv.WaitUntil(&state.mu, deadline);
    exited = state.exited;
  }
  if (exited)
    thread_.join();
  else
    thread_.detach();
}

void GpuWorker::Run(const std::shared_ptr<State>& state) {
  GpuSampleBuffer buffer;
  std::shared_ptr<GpuDevice> device;  // this thread's reference, set once the open succeeds
  state->mu.Lock();
  while (true) {
    while (!state->stop && !(state->job && !state->done)) state->cv.Wait(&state->mu);
    if (state->stop) break;
    buffer.swap(state->samples);  // reuse the buffer the collector handed back
    state->mu.Unlock();
    buffer.clear();
    std::string open_error;
    if (device == nullptr) {
      Status status;
      device = GpuDevice::Open(state->nvml, state->index, *state->node, &status);
      if (device == nullptr) open_error = status.message();
    }
    Outcome outcome = Outcome::kOpenFailed;
    if (device != nullptr) {
      outcome = device->Read(&buffer) == GpuDevice::ReadOutcome::kOk ? Outcome::kOk : Outcome::kLost;
    }
    state->mu.Lock();
    if (state->device == nullptr) state->device = device;
    state->samples.swap(buffer);
    state->outcome = outcome;
    state->open_error = std::move(open_error);
    state->done = true;
    state->cv.NotifyAll();
  }
  state->exited = true;
  state->cv.NotifyAll();
  state->mu.Unlock();
}

bool GpuWorker::Post() {
  MutexLock lock(&state_->mu);
  if (state_->job && !state_->done) return false;
  state_->job = true;
  state_->done = false;
  state_->started = std::chrono::steady_clock::now();
  state_->cv.NotifyAll();
  return true;
}

bool GpuWorker::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  State& state = *state_;
  MutexLock lock(&state.mu);
  while (!state.done && std::chrono::steady_clock::now() < deadline) state.cv.WaitUntil(&state.mu, deadline);
  return state.done;
}

GpuWorker::Outcome GpuWorker::Take(GpuSampleBuffer* samples, std::string* open_error) {
  MutexLock lock(&state_->mu);
  samples->swap(state_->samples);
  state_->samples.clear();
  state_->job = false;
  state_->done = false;
  if (open_error != nullptr) *open_error = state_->open_error;
  return state_->outcome;
}

bool GpuWorker::Busy() const {
  MutexLock lock(&state_->mu);
  return state_->job && !state_->done;
}

std::chrono::steady_clock::duration GpuWorker::BusyFor() const {
  MutexLock lock(&state_->mu);
  if (!state_->job || state_->done) return {};
  return std::chrono::steady_clock::now() - state_->started;
}

std::shared_ptr<const GpuDevice> GpuWorker::device() const {
  MutexLock lock(&state_->mu);
  return state_->device;
}

}  // namespace gpuscope
