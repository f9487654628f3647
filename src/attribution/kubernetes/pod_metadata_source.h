// PodMetadataSource: what the kubelet cannot say about the pods holding this node's devices (their uid,
// their top controller, allow-listed pod labels), asked of the Kubernetes API server and published into
// the PodTable with UpdateMetadata(). Shaped like SlurmJobSource: off the scrape path, a background
// thread looks at the PodTable's view every `poll_interval` and
//   - when a pod holding a device has no metadata yet (or `refresh_interval` passed since the last list,
//     which also keeps gpuscope_k8s_api_up meaningful on an idle node), lists the node's pods with ONE
//     request, GET /api/v1/pods?fieldSelector=spec.nodeName=<node>, never two lists closer than
//     `min_list_interval`; when the list is forbidden (RBAC without list) it falls back to one
//     GET /api/v1/namespaces/{ns}/pods/{name} per pod it lacks, and tries the list again only after
//     `refresh_interval`;
//   - resolves each pod's top controller: a ReplicaSet to the Deployment in its own ownerReferences, a Job
//     to its CronJob likewise (GET .../replicasets/{name}, .../jobs/{name}, cached per owner for
//     `refresh_interval`); StatefulSet, DaemonSet, other kinds and bare pods as they are. An owner that
//     cannot be read (not found, forbidden) stays the pod's direct controller;
//   - keeps at most `max_requests_per_second` requests a second (a token bucket holding one second's
//     worth; what is left waits for the next cycle), and after a failure (unreachable, 401, 429, 5xx,
//     an answer that does not parse) makes no request until an exponential backoff has passed
//     (`backoff_initial` doubling up to `backoff_max`), at least the Retry-After of a 429.
// The bearer token is read from `token_file` before each cycle's requests when the file changed (projected
// service-account tokens rotate hourly) and after every 401. Hostile or malformed answers are counted
// (result "error") and logged; the cache keeps what it knew. A pod gone from the kubelet's view is dropped
// from the cache in the next cycle.
//
// MetricFamilies(): gpuscope_k8s_pod_info for every pod holding a device in the PodTable's current view
// (uid, owner and labels empty while unknown: the series exists even without an API server),
// gpuscope_k8s_api_up, gpuscope_k8s_api_requests_total{resource,result}, gpuscope_k8s_api_pods_cached.
//
// Thread-safety: Start/Stop from one owner thread; QueryOnce, MetricFamilies safe from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/attribution/kubernetes/kube_objects.h"
#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/status.h"
#include "src/node/pod_table.h"

namespace gpuscope {

class HttpClient;

struct PodMetadataSourceOptions {
  std::string api_server;  // "https://host:port" (or http://); empty: no lookups, pod_info without metadata
  std::string token_file;  // bearer token, re-read when it changes; empty or unreadable: no Authorization
  std::string ca_file;     // https: the CAs to trust; empty: the system trust store
  std::string node_name;   // this node, for the list's field selector
  std::vector<std::string> pod_labels;                 // allow-list of pod label names (as the pod has them)
  std::chrono::milliseconds poll_interval{1000};       // how often the thread looks at the PodTable
  std::chrono::milliseconds refresh_interval{300000};  // cached metadata and owners older: asked again
  std::chrono::milliseconds min_list_interval{5000};   // never two pod lists closer than this
  double max_requests_per_second = 5;                  // every request counts
  std::chrono::milliseconds backoff_initial{1000};     // first wait after a failure
  std::chrono::milliseconds backoff_max{300000};       // the wait doubles up to this
  std::chrono::milliseconds request_timeout{10000};    // one request, connect to last byte
  size_t max_response_bytes = 32 << 20;                // larger answers are an error
};

// The API server URL for the --kubernetes.api-server value `flag`: "off" -> "", a URL as given, empty ->
// in-cluster https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6 host in brackets) when
// both are set (read through `getenv`), else "".
std::string ResolveApiServerUrl(const std::string& flag,
                                const std::function<const char*(const char*)>& getenv);

class PodMetadataSource {
 public:
  // `table` must outlive this object.
  PodMetadataSource(PodMetadataSourceOptions options, PodTable* table);
  ~PodMetadataSource();  // Stop()
  PodMetadataSource(const PodMetadataSource&) = delete;
  PodMetadataSource& operator=(const PodMetadataSource&) = delete;

  // Starts the background thread (none without an API server). Calling it twice aborts.
  void Start();
  // Stops and joins the thread; a request in flight is interrupted. Idempotent.
  void Stop();

  // One cycle now, as the thread runs it: the requests the view calls for and the limits allow, then
  // UpdateMetadata(). Returns the first request error of the cycle (Ok when none failed or none was due).
  Status QueryOnce();

  std::vector<MetricFamily> MetricFamilies() const;
  // The families MetricFamilies() emits, with their label names (label_<name> per allow-listed label).
  static std::vector<MetricDescription> Describe(const std::vector<std::string>& pod_labels);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Resource { kPod, kReplicaSet, kJob };
  enum class Result { kOk, kNotFound, kForbidden, kUnauthorized, kThrottled, kUnreachable, kError };
  struct Answer {
    Result result = Result::kError;
    std::string body;
    std::string problem;                  // for the log when not kOk
    std::chrono::seconds retry_after{0};  // a 429's Retry-After
  };
  struct CachedPod {
    KubePod pod;
    Clock::time_point fetched;
  };
  struct CachedOwner {
    std::string kind;  // the top controller found ("Deployment"), or the owner itself when it has none
    std::string name;
    Clock::time_point fetched;
  };

  void Run();
  static std::string_view ResourceName(Resource resource);
  static std::string_view ResultName(Result result);
  // (allow-listed pod label, its metric label name), one per distinct metric label name.
  static std::vector<std::pair<std::string, std::string>> MetricLabelNames(
      const std::vector<std::string>& pod_labels);
  static void Malformed(Answer* answer, const Status& parsed);

  // Sends one GET (the caller took a token) and classifies the answer.
  Answer Request(Resource resource, const std::string& target) REQUIRES(cycle_mu_);
  // Counts the answer, moves the backoff and gpuscope_k8s_api_up, logs transitions.
  void Finish(Resource resource, const Answer& answer, Clock::time_point now) REQUIRES(cycle_mu_);
  bool TakeToken(Clock::time_point now) REQUIRES(cycle_mu_);
  bool Backoff(Clock::time_point now) const REQUIRES(cycle_mu_);
  void ReloadToken(bool force) REQUIRES(cycle_mu_);
  // The top controller of `pod`; false when an owner lookup is still due (no token left this cycle).
  bool ResolveOwner(const KubePod& pod, Clock::time_point now, std::string* kind, std::string* name)
      REQUIRES(cycle_mu_);
  // Resolves owners (lookups as the limits allow) and publishes the cached metadata of `holders`.
  void Publish(const std::set<PodRef>& holders, Clock::time_point now) REQUIRES(cycle_mu_);

  const PodMetadataSourceOptions options_;
  PodTable* const table_;

  Mutex cycle_mu_;  // one cycle at a time
  std::unique_ptr<HttpClient> client_ GUARDED_BY(cycle_mu_);
  std::string token_ GUARDED_BY(cycle_mu_);
  struct timespec token_mtime_ GUARDED_BY(cycle_mu_) {};
  ino_t token_inode_ GUARDED_BY(cycle_mu_) = 0;
  bool token_missing_ GUARDED_BY(cycle_mu_) = false;  // logged once until the file appears
  std::map<PodRef, CachedPod> pods_ GUARDED_BY(cycle_mu_);
  std::map<PodRef, Clock::time_point> not_found_ GUARDED_BY(cycle_mu_);  // listed nowhere: asked at refresh
  std::map<std::string, CachedOwner> owners_ GUARDED_BY(cycle_mu_);      // "Kind/ns/name" -> top
  bool token_stale_ GUARDED_BY(cycle_mu_) = false;                       // a 401: read the token file again
  bool listed_ GUARDED_BY(cycle_mu_) = false;
  Clock::time_point last_list_ GUARDED_BY(cycle_mu_){};
  bool list_forbidden_ GUARDED_BY(cycle_mu_) = false;
  Clock::time_point list_forbidden_at_ GUARDED_BY(cycle_mu_){};
  double tokens_ GUARDED_BY(cycle_mu_) = 0;
  Clock::time_point tokens_at_ GUARDED_BY(cycle_mu_){};
  int failures_ GUARDED_BY(cycle_mu_) = 0;
  Clock::time_point retry_at_ GUARDED_BY(cycle_mu_){};
  Status first_error_ GUARDED_BY(cycle_mu_) = Status::Ok();

  mutable Mutex metrics_mu_;
  bool up_ GUARDED_BY(metrics_mu_) = false;
  bool answered_ GUARDED_BY(metrics_mu_) = false;  // any request made yet
  std::map<std::pair<Resource, Result>, uint64_t> requests_ GUARDED_BY(metrics_mu_);
  size_t cached_ GUARDED_BY(metrics_mu_) = 0;

  Mutex wake_mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(wake_mu_) = false;
  HttpClient* in_flight_ GUARDED_BY(wake_mu_) = nullptr;  // for Stop()'s Interrupt()
  std::thread thread_;
};

}  // namespace gpuscope
