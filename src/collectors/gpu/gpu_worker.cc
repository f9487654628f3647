#include "src/collectors/gpu/gpu_worker.h"

#include <pthread.h>

#include <utility>

namespace gpuscope {

GpuWorker::GpuWorker(std::shared_ptr<GpuDevice> device) : device_(std::move(device)) {
  thread_ = std::thread(Run, device_, state_);
  std::string name = "gpuscope-gpu" + std::to_string(device_->identity().index);
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

GpuWorker::~GpuWorker() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
  bool exited = state_->cv.wait_for(lock, kJoinTimeout, [this] { return state_->exited; });
  lock.unlock();
  if (exited)
    thread_.join();
  else
    thread_.detach();
}

void GpuWorker::Run(std::shared_ptr<GpuDevice> device, std::shared_ptr<State> state) {
  GpuSampleBuffer buffer;
  std::unique_lock<std::mutex> lock(state->mu);
  while (true) {
    state->cv.wait(lock, [&] { return state->stop || (state->job && !state->done); });
    if (state->stop) break;
    buffer.swap(state->samples);  // reuse the buffer the collector handed back
    lock.unlock();
    buffer.clear();
    GpuDevice::ReadOutcome outcome = device->Read(&buffer);
    lock.lock();
    state->samples.swap(buffer);
    state->outcome = outcome;
    state->done = true;
    state->cv.notify_all();
  }
  state->exited = true;
  state->cv.notify_all();
}

bool GpuWorker::Post() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->job && !state_->done) return false;
  state_->job = true;
  state_->done = false;
  state_->started = std::chrono::steady_clock::now();
  state_->cv.notify_all();
  return true;
}

bool GpuWorker::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_until(lock, deadline, [this] { return state_->done; });
}

GpuDevice::ReadOutcome GpuWorker::Take(GpuSampleBuffer* samples) {
  std::lock_guard<std::mutex> lock(state_->mu);
  samples->swap(state_->samples);
  state_->samples.clear();
  state_->job = false;
  state_->done = false;
  return state_->outcome;
}

bool GpuWorker::Busy() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->job && !state_->done;
}

std::chrono::steady_clock::duration GpuWorker::BusyFor() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->job || state_->done) return {};
  return std::chrono::steady_clock::now() - state_->started;
}

}  // namespace gpuscope
