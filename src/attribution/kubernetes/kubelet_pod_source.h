// KubeletPodSource: which pod and container holds which device of this node, from the kubelet's
// pod-resources API v1 (gRPC on its unix socket), published to the PodTable with UpdateDevices(). Off the
// scrape path and off the GPU collector's cycle: its own thread asks `List` every `interval` (the agent's
// collection interval), and `GetAllocatableResources` once per connection (the first answer, after any
// failure, whenever the channel had to connect again) and every `allocatable_refresh` (a device plugin
// restarted for a MIG reconfiguration changes it without a kubelet restart). `Get` is not used: one
// `List` answers for every pod, where `Get` would cost a call per pod.
//
// The channel: "unix://<socket>", reconnect backoff 100 ms to 2 s (the kubelet restarts in seconds;
// gRPC's default grows to two minutes), a receive limit of 16 MiB and `call_deadline` (10 s) on every
// call, as the kubelet's own client package sets them.
//
// Failures (each counted in gpuscope_k8s_pod_resources_calls_total{method,result}; a warning on the first
// of a streak and an info line on recovery, debug lines between): the socket missing (socket_missing:
// not a Kubernetes node yet, or the kubelet down), the connection refused on a stale socket or reset
// (unavailable: the kubelet restarting), a call past its deadline (deadline_exceeded), an answer that does
// not decode or exceeds the limit (error). After a failed call the channel is dropped and the next cycle
// connects afresh. The PodTable keeps the last good view for `keep_view_for` after the last good answer
// (a kubelet restart takes seconds; the pods keep running meanwhile); past that the view is replaced by
// an empty one, so that a pod that ended while the kubelet was down does not stay attributed for ever.
// The GPU series never depend on this source.
//
// Thread-safety: Start/Stop from one owner thread; QueryOnce, MetricFamilies safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/node/pod_table.h"

namespace grpc {
class ClientContext;
}  // namespace grpc
namespace v1 {
class AllocatableResourcesResponse;
}  // namespace v1

namespace gpuscope {

class GpuDirectory;

struct KubeletPodSourceOptions {
  std::string socket_path = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::chrono::milliseconds interval{1000};        // one List per interval
  std::chrono::milliseconds call_deadline{10000};  // every call
  // The last good view stays published this long after the last good answer while calls fail.
  std::chrono::milliseconds keep_view_for{30000};
  std::chrono::milliseconds allocatable_refresh{60000};
  // The GPUs of this node, to count GPU and MIG UUIDs it does not show as unknown_device; may be null.
  const GpuDirectory* gpus = nullptr;
};

class KubeletPodSource {
 public:
  // `table` (and options.gpus) must outlive this object.
  KubeletPodSource(KubeletPodSourceOptions options, PodTable* table);
  ~KubeletPodSource();  // Stop()
  KubeletPodSource(const KubeletPodSource&) = delete;
  KubeletPodSource& operator=(const KubeletPodSource&) = delete;

  // Starts the background thread. Calling it twice is an error of the caller (aborts).
  void Start();
  // Stops and joins the thread; a call in flight is cancelled. Idempotent.
  void Stop();

  // One cycle now, as the thread does it: List (and GetAllocatableResources when due), then publishes.
  // Returns the first failed call's status, Ok when the view was published.
  Status QueryOnce();

  // gpuscope_k8s_pod_resources_up, gpuscope_k8s_pod_resources_calls_total{method,result},
  // gpuscope_k8s_devices_ignored{resource,reason}.
  std::vector<MetricFamily> MetricFamilies() const;
  // What MetricFamilies() exports, labels included (its families may have no sample yet).
  static std::vector<MetricDescription> Describe();

 private:
  struct Client;  // the gRPC channel and stub (kept out of this header)
  using Clock = std::chrono::steady_clock;

  void Run();
  // Runs `call` with the deadline, cancellable by Stop().
  template <class Call>
  auto Invoke(Call call);
  void CountCall(const char* method, const char* result);
  // A failed cycle: counted, logged at the start of a streak, the channel dropped, the view cleared once
  // keep_view_for has passed since the last good answer.
  Status OnFailure(const char* method, const char* result, const std::string& message, Clock::time_point now)
      REQUIRES(cycle_mu_);

  const KubeletPodSourceOptions options_;
  PodTable* const table_;

  Mutex cycle_mu_;  // one cycle at a time
  std::unique_ptr<Client> client_ GUARDED_BY(cycle_mu_);
  // The last GetAllocatableResources answer (empty before the first), when it came, whether it is due.
  std::unique_ptr<v1::AllocatableResourcesResponse> allocatable_ GUARDED_BY(cycle_mu_);
  Clock::time_point allocatable_at_ GUARDED_BY(cycle_mu_){};
  bool allocatable_due_ GUARDED_BY(cycle_mu_) = true;
  bool allocatable_failing_ GUARDED_BY(cycle_mu_) = false;  // its last call failed (logged once)
  bool have_view_ GUARDED_BY(cycle_mu_) = false;            // a view of ours is published (not cleared)
  Clock::time_point last_ok_ GUARDED_BY(cycle_mu_){};
  bool failing_ GUARDED_BY(cycle_mu_) = false;  // in a streak of failed cycles
  uint64_t streak_ GUARDED_BY(cycle_mu_) = 0;

  mutable Mutex metrics_mu_;
  bool up_ GUARDED_BY(metrics_mu_) = false;
  std::map<std::pair<std::string, std::string>, uint64_t> calls_ GUARDED_BY(metrics_mu_);  // (method, result)
  std::map<std::pair<std::string, std::string>, size_t> ignored_ GUARDED_BY(metrics_mu_);

  Mutex wake_mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(wake_mu_) = false;
  grpc::ClientContext* in_flight_ GUARDED_BY(wake_mu_) = nullptr;  // the call in flight, to cancel
  std::thread thread_;
};

}  // namespace gpuscope
