#include "src/attribution/kubernetes/kubelet_pod_source.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "podresources/v1/api.grpc.pb.h"
#include "src/attribution/kubernetes/pod_devices.h"
#include "src/core/log.h"

namespace gpuscope {
namespace {

constexpr const char* kList = "List";
constexpr const char* kAllocatable = "GetAllocatableResources";
constexpr const char* kMethods[] = {kList, kAllocatable};
constexpr const char* kResults[] = {
    "ok", "socket_missing", "unavailable", "deadline_exceeded", "unimplemented", "error"};

const char* ResultOf(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return "ok";
    case grpc::StatusCode::UNAVAILABLE:  // refused on a stale socket, reset by a kubelet going down
      return "unavailable";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "deadline_exceeded";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "unimplemented";
    default:  // an answer that does not decode (INTERNAL), over the receive limit (RESOURCE_EXHAUSTED), ...
      return "error";
  }
}

// gRPC's target for a unix socket path: "unix:///abs/path" or "unix:relative/path".
std::string Target(const std::string& path) { return (path.starts_with('/') ? "unix://" : "unix:") + path; }

}  // namespace

struct KubeletPodSource::Client {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;

  explicit Client(const std::string& socket_path) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    channel = grpc::CreateCustomChannel(Target(socket_path), grpc::InsecureChannelCredentials(), args);
    stub = v1::PodResourcesLister::NewStub(channel);
  }
};

KubeletPodSource::KubeletPodSource(KubeletPodSourceOptions options, PodTable* table)
    : options_(std::move(options)), table_(table) {
  MutexLock lock(&cycle_mu_);
  allocatable_ = std::make_unique<v1::AllocatableResourcesResponse>();
}

KubeletPodSource::~KubeletPodSource() { Stop(); }

void KubeletPodSource::Start() {
  if (thread_.joinable()) std::abort();
  {
    MutexLock lock(&wake_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void KubeletPodSource::Stop() {
  {
    MutexLock lock(&wake_mu_);
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void KubeletPodSource::Run() {
  while (true) {
    {
      MutexLock lock(&wake_mu_);
      if (stopping_) return;
    }
    QueryOnce();
    MutexLock lock(&wake_mu_);
    const auto deadline = Clock::now() + options_.interval;
    while (!stopping_ && Clock::now() < deadline) wake_.WaitUntil(&wake_mu_, deadline);
  }
}

template <class Call>
auto KubeletPodSource::Invoke(Call call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.call_deadline);
  {
    MutexLock lock(&wake_mu_);
    if (stopping_) return grpc::Status(grpc::StatusCode::CANCELLED, "stopping");
    in_flight_ = &context;
  }
  grpc::Status status = call(&context);
  MutexLock lock(&wake_mu_);
  in_flight_ = nullptr;
  return status;
}

void KubeletPodSource::CountCall(const char* method, const char* result) {
  MutexLock lock(&metrics_mu_);
  ++calls_[{method, result}];
}

Status KubeletPodSource::QueryOnce() {
  MutexLock cycle(&cycle_mu_);
  const Clock::time_point now = Clock::now();
  struct stat st {};
  if (stat(options_.socket_path.c_str(), &st) != 0 && errno == ENOENT) {
    CountCall(kList, "socket_missing");
    return OnFailure(kList, "socket_missing", "no socket at the path", now);
  }
  if (!client_) client_ = std::make_unique<Client>(options_.socket_path);
  // Not connected now (first call, the kubelet went away since, idle): this List makes a new connection,
  // so the node's allocatable devices are asked again after it.
  if (client_->channel->GetState(false) != GRPC_CHANNEL_READY) allocatable_due_ = true;

  // The calls run in lambdas, which the thread-safety analysis cannot see are under cycle_mu_.
  v1::PodResourcesLister::Stub* stub = client_->stub.get();
  v1::ListPodResourcesResponse list;
  grpc::Status status = Invoke([&](grpc::ClientContext* context) {
    return stub->List(context, v1::ListPodResourcesRequest(), &list);
  });
  // Cancelled only by Stop(): not a failure of the kubelet's, neither counted nor logged.
  if (status.error_code() == grpc::StatusCode::CANCELLED) return Status::Unavailable("stopping");
  const char* result = ResultOf(status);
  CountCall(kList, result);
  if (!status.ok()) return OnFailure(kList, result, status.error_message(), now);

  if (allocatable_due_ || now - allocatable_at_ >= options_.allocatable_refresh) {
    v1::AllocatableResourcesResponse allocatable;
    status = Invoke([&](grpc::ClientContext* context) {
      return stub->GetAllocatableResources(context, v1::AllocatableResourcesRequest(), &allocatable);
    });
    if (status.error_code() == grpc::StatusCode::CANCELLED) return Status::Unavailable("stopping");
    result = ResultOf(status);
    CountCall(kAllocatable, result);
    if (status.ok()) {
      *allocatable_ = std::move(allocatable);
      allocatable_at_ = now;
      allocatable_due_ = false;
      allocatable_failing_ = false;
    } else {
      // The pods still come from List; the last allocatable devices stay, asked again next cycle, or after
      // allocatable_refresh from a kubelet without the method (before 1.23 unless its feature gate is on).
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        allocatable_at_ = now;
        allocatable_due_ = false;
      }
      Log(allocatable_failing_ ? LogLevel::kDebug : LogLevel::kWarn,
          "kubernetes: GetAllocatableResources failed; keeping the last answer",
          {{"result", result}, {"error", status.error_message()}});
      allocatable_failing_ = true;
    }
  }

  PodDevicesUpdate update = PodDevicesFromKubelet(list, *allocatable_);
  auto ignored = IgnoredDevices(update, options_.gpus);
  const size_t pods = update.pods.size();
  table_->UpdateDevices(std::move(update));
  have_view_ = true;
  last_ok_ = now;
  if (failing_) {
    Log(LogLevel::kInfo, "kubernetes: pod-resources API answering again",
        {{"socket", options_.socket_path},
         {"failed_cycles", std::to_string(streak_)},
         {"pods", std::to_string(pods)}});
  }
  failing_ = false;
  streak_ = 0;
  MutexLock lock(&metrics_mu_);
  up_ = true;
  ignored_ = std::move(ignored);
  return Status::Ok();
}

Status KubeletPodSource::OnFailure(const char* method, const char* result, const std::string& message,
                                   Clock::time_point now) {
  client_.reset();  // the next cycle connects afresh, without the channel's backoff state
  allocatable_due_ = true;
  ++streak_;
  // Logged at every failed cycle while down would flood: warn at the start of a streak, debug after.
  Log(failing_ ? LogLevel::kDebug : LogLevel::kWarn,
      "kubernetes: pod-resources API call failed; GPU series continue, pod labels kept for now",
      {{"method", method}, {"result", result}, {"socket", options_.socket_path}, {"error", message}});
  failing_ = true;
  if (have_view_ && now - last_ok_ >= options_.keep_view_for) {
    table_->UpdateDevices({});
    have_view_ = false;
    Log(LogLevel::kWarn, "kubernetes: no pod-resources answer for too long; pod labels cleared",
        {{"socket", options_.socket_path},
         {"since_last_answer_ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - last_ok_).count())}});
  }
  MutexLock lock(&metrics_mu_);
  up_ = false;
  if (!have_view_) ignored_.clear();
  return Status::Unavailable(std::string("pod-resources ") + method + ": " + result + ": " + message);
}

std::vector<MetricDescription> KubeletPodSource::Describe() {
  return {
      {"gpuscope_k8s_pod_resources_up",
       MetricType::kGauge,
       "1 when the last List call to the kubelet's pod-resources API succeeded, 0 when it failed (see "
       "gpuscope_k8s_pod_resources_calls_total and the log)",
       "",
       {},
       "kubelet pod-resources API v1"},
      {"gpuscope_k8s_pod_resources_calls_total",
       MetricType::kCounter,
       "Calls to the kubelet's pod-resources API by method (List, GetAllocatableResources) and result (ok, "
       "socket_missing, unavailable, deadline_exceeded, unimplemented, error)",
       "",
       {"method", "result"},
       "kubelet pod-resources API v1"},
      {"gpuscope_k8s_devices_ignored",
       MetricType::kGauge,
       "Device ids in the kubelet's last answers that are not joined to a GPU, by resource name and reason: "
       "other_resource (another device plugin's), index_id (deviceIDStrategy index), unknown_device (no GPU "
       "or MIG device of this node has that UUID, or an id of no known form under an NVIDIA resource)",
       "",
       {"resource", "reason"},
       "kubelet pod-resources API v1"},
  };
}

std::vector<MetricFamily> KubeletPodSource::MetricFamilies() const {
  const std::vector<MetricDescription> d = Describe();
  MutexLock lock(&metrics_mu_);
  std::vector<MetricFamily> families;
  families.push_back({d[0].name, d[0].help, d[0].type, d[0].unit, {{{}, up_ ? 1.0 : 0.0}}});
  MetricFamily calls{d[1].name, d[1].help, d[1].type, d[1].unit, {}};
  for (const char* method : kMethods) {
    for (const char* result : kResults) {
      auto it = calls_.find({method, result});
      calls.samples.push_back({{{"method", method}, {"result", result}},
                               it == calls_.end() ? 0.0 : static_cast<double>(it->second)});
    }
  }
  families.push_back(std::move(calls));
  MetricFamily ignored{d[2].name, d[2].help, d[2].type, d[2].unit, {}};
  for (const auto& [key, count] : ignored_) {
    ignored.samples.push_back(
        {{{"resource", key.first}, {"reason", key.second}}, static_cast<double>(count)});
  }
  families.push_back(std::move(ignored));
  return families;
}

}  // namespace gpuscope
