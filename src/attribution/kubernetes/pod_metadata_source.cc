#include "src/attribution/kubernetes/pod_metadata_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"
#include "src/platform/http_client.h"

namespace gpuscope {
namespace {

constexpr std::chrono::seconds kMaxRetryAfter{3600};  // a hostile Retry-After cannot park the source longer
constexpr size_t kMaxTokenBytes = 64 << 10;

// Percent-encodes everything outside RFC 3986's unreserved characters.
std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string OwnerKey(std::string_view kind, std::string_view namespace_name, std::string_view name) {
  std::string key(kind);
  key += '/';
  key += namespace_name;
  key += '/';
  key += name;
  return key;
}

}  // namespace

std::string ResolveApiServerUrl(const std::string& flag,
                                const std::function<const char*(const char*)>& getenv) {
  if (flag == "off") return "";
  if (!flag.empty()) return flag;
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') return "";
  const std::string h(host);
  return "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
}

PodMetadataSource::PodMetadataSource(PodMetadataSourceOptions options, PodTable* table)
    : options_(std::move(options)), table_(table) {
  MutexLock cycle(&cycle_mu_);
  tokens_ = std::max(1.0, options_.max_requests_per_second);
  tokens_at_ = Clock::now();
}

PodMetadataSource::~PodMetadataSource() { Stop(); }

void PodMetadataSource::Start() {
  if (thread_.joinable()) std::abort();
  if (options_.api_server.empty()) return;
  {
    MutexLock cycle(&cycle_mu_);
    client_.reset();  // a client interrupted by an earlier Stop() stays interrupted
  }
  {
    MutexLock lock(&wake_mu_);
    stopping_ = false;
    in_flight_ = nullptr;
  }
  thread_ = std::thread([this] { Run(); });
}

void PodMetadataSource::Stop() {
  {
    MutexLock lock(&wake_mu_);
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->Interrupt();
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void PodMetadataSource::Run() {
  while (true) {
    {
      MutexLock lock(&wake_mu_);
      if (stopping_) return;
    }
    QueryOnce();
    MutexLock lock(&wake_mu_);
    const auto deadline = Clock::now() + options_.poll_interval;
    while (!stopping_ && Clock::now() < deadline) wake_.WaitUntil(&wake_mu_, deadline);
  }
}

bool PodMetadataSource::TakeToken(Clock::time_point now) {
  const double capacity = std::max(1.0, options_.max_requests_per_second);
  tokens_ = std::min(capacity, tokens_ + std::chrono::duration<double>(now - tokens_at_).count() *
                                             options_.max_requests_per_second);
  tokens_at_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool PodMetadataSource::Backoff(Clock::time_point now) const { return failures_ > 0 && now < retry_at_; }

void PodMetadataSource::ReloadToken(bool force) {
  if (options_.token_file.empty()) return;
  struct stat st {};
  if (stat(options_.token_file.c_str(), &st) != 0) {
    if (force || !token_missing_) {  // once, and again after each 401
      Log(LogLevel::kWarn, "kubernetes: cannot read the API server token; sending requests without it",
          {{"file", options_.token_file}});
    }
    token_missing_ = true;
    token_.clear();
    token_inode_ = 0;
    return;
  }
  token_missing_ = false;
  if (!force && st.st_ino == token_inode_ && st.st_mtim.tv_sec == token_mtime_.tv_sec &&
      st.st_mtim.tv_nsec == token_mtime_.tv_nsec) {
    return;
  }
  std::optional<std::string> text = ReadWholeFile(options_.token_file, kMaxTokenBytes);
  token_inode_ = st.st_ino;
  token_mtime_ = st.st_mtim;
  token_ = text ? std::string(text::Trim(*text)) : std::string();
  if (!text)
    Log(LogLevel::kWarn, "kubernetes: cannot read the API server token", {{"file", options_.token_file}});
}

PodMetadataSource::Answer PodMetadataSource::Request(Resource resource, const std::string& target) {
  Answer answer;
  Log(LogLevel::kDebug, "kubernetes: API server request",
      {{"resource", ResourceName(resource)}, {"target", target}});
  if (!client_) {
    HttpClientOptions http;
    http.timeout = options_.request_timeout;
    if (options_.api_server.rfind("https:", 0) == 0) http.ca_file = options_.ca_file;
    http.max_response_body_bytes = options_.max_response_bytes;
    Status created = HttpClient::Create(options_.api_server, http, &client_);
    if (!created.ok()) {
      answer.problem = created.ToString();
      return answer;  // kError: a configuration problem (URL, CA file), retried after the backoff
    }
    MutexLock lock(&wake_mu_);
    in_flight_ = client_.get();
    if (stopping_) client_->Interrupt();
  }
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"}};
  if (!token_.empty()) headers.emplace_back("Authorization", "Bearer " + token_);
  HttpClientResponse response;
  Status sent = client_->Get(target, headers, &response);
  if (!sent.ok()) {
    answer.result = Result::kUnreachable;
    answer.problem = sent.ToString();
    return answer;
  }
  if (response.body_truncated) {
    answer.problem = "answer over " + std::to_string(options_.max_response_bytes) + " bytes";
    return answer;
  }
  answer.body = std::move(response.body);
  const KubeStatus status = response.status == 200 ? KubeStatus() : ParseKubeStatus(answer.body);
  answer.problem =
      "HTTP " + std::to_string(response.status) + (status.message.empty() ? "" : ": " + status.message);
  switch (response.status) {
    case 200:
      answer.result = Result::kOk;
      answer.problem.clear();
      break;
    case 401:
      answer.result = Result::kUnauthorized;
      break;
    case 403:
      answer.result = Result::kForbidden;
      break;
    case 404:
      answer.result = Result::kNotFound;
      break;
    case 429: {
      answer.result = Result::kThrottled;
      int seconds = status.retry_after_seconds;
      // Retry-After in seconds (the API server's form); an HTTP date is left to details.retryAfterSeconds.
      if (auto header = text::ParseWhole<uint32_t>(text::Trim(response.Header("Retry-After")))) {
        seconds = static_cast<int>(std::min<uint32_t>(*header, 86400));
      }
      answer.retry_after = std::min<std::chrono::seconds>(std::chrono::seconds(seconds), kMaxRetryAfter);
      break;
    }
    default:
      answer.result = Result::kError;
  }
  return answer;
}

void PodMetadataSource::Finish(Resource resource, const Answer& answer, Clock::time_point now) {
  const bool failed = answer.result == Result::kUnauthorized || answer.result == Result::kThrottled ||
                      answer.result == Result::kUnreachable || answer.result == Result::kError;
  if (failed) {
    ++failures_;
    auto delay = options_.backoff_initial;
    for (int i = 1; i < failures_ && delay < options_.backoff_max; ++i) delay *= 2;
    delay = std::min(delay, options_.backoff_max);
    delay = std::max<std::chrono::milliseconds>(delay, answer.retry_after);
    retry_at_ = now + delay;
    if (first_error_.ok()) first_error_ = Status::Unavailable(answer.problem);
    if (answer.result == Result::kUnauthorized) token_stale_ = true;
  } else {
    failures_ = 0;
  }
  if (answer.result == Result::kForbidden) {
    Log(LogLevel::kWarn, "kubernetes: the API server forbids a request (RBAC)",
        {{"resource", ResourceName(resource)}, {"reason", answer.problem}});
  }
  bool was_up;
  bool first;
  {
    MutexLock lock(&metrics_mu_);
    was_up = up_;
    first = !answered_;
    answered_ = true;
    up_ = !failed;
    ++requests_[{resource, answer.result}];
  }
  if (failed) {
    // Logged at every failure while down would flood: warn on the transition, debug afterwards.
    Log(was_up || first ? LogLevel::kWarn : LogLevel::kDebug,
        "kubernetes: API server request failed; keeping cached pod metadata",
        {{"resource", ResourceName(resource)},
         {"result", ResultName(answer.result)},
         {"reason", answer.problem},
         {"retry_in_ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now).count())}});
  } else if (!was_up) {
    Log(LogLevel::kInfo, "kubernetes: API server answering", {{"url", options_.api_server}});
  }
}

std::string_view PodMetadataSource::ResourceName(Resource resource) {
  switch (resource) {
    case Resource::kPod:
      return "pod";
    case Resource::kReplicaSet:
      return "replicaset";
    case Resource::kJob:
      return "job";
  }
  return "";
}

std::string_view PodMetadataSource::ResultName(Result result) {
  switch (result) {
    case Result::kOk:
      return "ok";
    case Result::kNotFound:
      return "not_found";
    case Result::kForbidden:
      return "forbidden";
    case Result::kUnauthorized:
      return "unauthorized";
    case Result::kThrottled:
      return "throttled";
    case Result::kUnreachable:
      return "unreachable";
    case Result::kError:
      return "error";
  }
  return "";
}

// A body that does not parse turns an answered request into an error (counted as such, logged).
void PodMetadataSource::Malformed(Answer* answer, const Status& parsed) {
  answer->result = Result::kError;
  answer->problem = "malformed answer: " + parsed.message();
}

bool PodMetadataSource::ResolveOwner(const KubePod& pod, Clock::time_point now, std::string* kind,
                                     std::string* name) {
  const KubeOwnerReference* controller = pod.meta.Controller();
  kind->clear();
  name->clear();
  if (controller == nullptr) return true;  // a bare pod
  *kind = controller->kind;
  *name = controller->name;
  const bool replica_set = controller->kind == "ReplicaSet";
  if (!replica_set && controller->kind != "Job") return true;  // StatefulSet, DaemonSet, ...: the top already
  const std::string key = OwnerKey(controller->kind, pod.meta.namespace_name, controller->name);
  auto cached = owners_.find(key);
  const bool fresh = cached != owners_.end() && now - cached->second.fetched < options_.refresh_interval;
  if (!fresh && !Backoff(now) && TakeToken(now)) {
    const Resource resource = replica_set ? Resource::kReplicaSet : Resource::kJob;
    const std::string target = (replica_set ? "/apis/apps/v1/namespaces/" : "/apis/batch/v1/namespaces/") +
                               QueryEscape(pod.meta.namespace_name) +
                               (replica_set ? "/replicasets/" : "/jobs/") + QueryEscape(controller->name);
    Answer answer = Request(resource, target);
    CachedOwner owner{controller->kind, controller->name, now};
    if (answer.result == Result::kOk) {
      KubeObjectMeta meta;
      Status parsed = ParseKubeObjectMeta(answer.body, controller->kind, &meta);
      if (!parsed.ok()) {
        Malformed(&answer, parsed);
      } else if (const KubeOwnerReference* top = meta.Controller(); top != nullptr) {
        owner.kind = top->kind;  // Deployment for a ReplicaSet, CronJob for a Job (or another controller)
        owner.name = top->name;
      }
    }
    Finish(resource, answer, now);
    // Not found or forbidden: the pod's own controller is the best answer until the next refresh.
    if (answer.result == Result::kOk || answer.result == Result::kNotFound ||
        answer.result == Result::kForbidden) {
      cached = owners_.insert_or_assign(key, owner).first;
    }
  }
  if (cached == owners_.end()) return false;  // still to be asked
  *kind = cached->second.kind;
  *name = cached->second.name;
  return true;
}

Status PodMetadataSource::QueryOnce() {
  MutexLock cycle(&cycle_mu_);
  first_error_ = Status::Ok();
  std::shared_ptr<const PodTable::View> view = table_->Current();
  const Clock::time_point now = Clock::now();

  // Pods the kubelet no longer lists are forgotten; only pods holding a device are asked about.
  const std::set<PodRef> listed(view->pods.begin(), view->pods.end());
  std::erase_if(pods_, [&](const auto& entry) { return !listed.count(entry.first); });
  std::erase_if(not_found_, [&](const auto& entry) { return !listed.count(entry.first); });
  std::erase_if(
      owners_, [&](const auto& entry) { return now - entry.second.fetched > 2 * options_.refresh_interval; });
  std::set<PodRef> holders;
  for (const PodDeviceAllocation& a : view->allocations) holders.insert({a.namespace_name, a.pod});

  if (!options_.api_server.empty()) {
    std::vector<PodRef> missing;  // holders without metadata, oldest need first
    for (const PodRef& ref : holders) {
      auto nf = not_found_.find(ref);
      const bool asked_recently = nf != not_found_.end() && now - nf->second < options_.refresh_interval;
      if (!pods_.count(ref) && !asked_recently) missing.push_back(ref);
    }
    bool stale = false;
    for (const auto& [ref, cached] : pods_)
      stale = stale || now - cached.fetched >= options_.refresh_interval;
    const bool list_due =
        !missing.empty() || stale || !listed_ || now - last_list_ >= options_.refresh_interval;
    if (list_forbidden_ && now - list_forbidden_at_ >= options_.refresh_interval) list_forbidden_ = false;

    if (!Backoff(now)) {
      ReloadToken(token_stale_);
      token_stale_ = false;
    }
    if (list_due && !list_forbidden_ && !Backoff(now) &&
        (!listed_ || now - last_list_ >= options_.min_list_interval) && TakeToken(now)) {
      last_list_ = now;
      listed_ = true;
      Answer answer = Request(
          Resource::kPod, "/api/v1/pods?fieldSelector=" + QueryEscape("spec.nodeName=" + options_.node_name));
      if (answer.result == Result::kOk) {
        std::vector<KubePod> items;
        Status parsed = ParseKubePodList(answer.body, &items);
        if (!parsed.ok()) {
          Malformed(&answer, parsed);
        } else {
          for (auto& [ref, cached] : pods_) cached.fetched = now;  // the list is the truth as of now
          for (KubePod& pod : items) {
            PodRef ref{pod.meta.namespace_name, pod.meta.name};
            if (!listed.count(ref)) continue;  // pods the kubelet does not report (yet) are asked for later
            not_found_.erase(ref);
            pods_.insert_or_assign(std::move(ref), CachedPod{std::move(pod), now});
          }
          for (const PodRef& ref : missing) {
            if (!pods_.count(ref)) not_found_[ref] = now;
          }
          missing.clear();
        }
      } else if (answer.result == Result::kForbidden) {
        list_forbidden_ = true;
        list_forbidden_at_ = now;
      } else if (answer.result == Result::kNotFound) {
        // Every API server serves the pod list: a 404 is a URL that names something else.
        answer.result = Result::kError;
        answer.problem += " (the pod list is not served there: is --kubernetes.api-server an API server?)";
      }
      Finish(Resource::kPod, answer, now);
    }
    // Without the list (forbidden), one GET per pod still lacking metadata, as the limits allow.
    if (list_forbidden_) {
      for (const PodRef& ref : missing) {
        if (Backoff(now) || !TakeToken(now)) break;
        Answer answer = Request(Resource::kPod, "/api/v1/namespaces/" + QueryEscape(ref.namespace_name) +
                                                    "/pods/" + QueryEscape(ref.pod));
        if (answer.result == Result::kOk) {
          KubePod pod;
          Status parsed = ParseKubePod(answer.body, &pod);
          if (!parsed.ok()) {
            Malformed(&answer, parsed);
          } else if (pod.meta.namespace_name != ref.namespace_name || pod.meta.name != ref.pod) {
            Malformed(&answer, Status::InvalidArgument("the answer is another pod"));
          } else {
            pods_.insert_or_assign(ref, CachedPod{std::move(pod), now});
          }
        } else if (answer.result == Result::kNotFound || answer.result == Result::kForbidden) {
          not_found_[ref] = now;
        }
        Finish(Resource::kPod, answer, now);
        if (answer.result == Result::kForbidden) break;  // the next GET would be refused alike
      }
    }
  }
  Publish(holders, now);
  return first_error_;
}

void PodMetadataSource::Publish(const std::set<PodRef>& holders, Clock::time_point now) {
  std::vector<PodMetadata> metadata;
  for (const auto& [ref, cached] : pods_) {
    PodMetadata m;
    // Owner lookups only for pods holding a device (the others show in no series).
    if (!holders.count(ref) || !ResolveOwner(cached.pod, now, &m.owner_kind, &m.owner_name)) continue;
    m.ref = ref;
    m.uid = cached.pod.meta.uid;
    for (const auto& [name, value] : cached.pod.meta.labels) {
      if (std::find(options_.pod_labels.begin(), options_.pod_labels.end(), name) !=
          options_.pod_labels.end()) {
        m.labels.emplace_back(name, value);
      }
    }
    metadata.push_back(std::move(m));
  }
  table_->UpdateMetadata(std::move(metadata));
  MutexLock lock(&metrics_mu_);
  cached_ = pods_.size();
}

std::vector<MetricDescription> PodMetadataSource::Describe(const std::vector<std::string>& pod_labels) {
  std::vector<std::string> info_labels = {"namespace", "pod", "uid", "owner_kind", "owner_name"};
  for (const auto& [label, metric_name] : MetricLabelNames(pod_labels)) info_labels.push_back(metric_name);
  return {
      {"gpuscope_k8s_pod_info", MetricType::kInfo,
       "A pod holding a device of this node, with its uid, its top controller (a ReplicaSet resolved to its "
       "Deployment, a Job to its CronJob) and its allow-listed labels (--kubernetes.pod-labels, named as "
       "kube-state-metrics names them); empty while the API server has not answered for it. Always 1.",
       "", info_labels, "kubelet pod-resources, API server"},
      {"gpuscope_k8s_api_up",
       MetricType::kGauge,
       "1 when the last request to the Kubernetes API server was answered (ok, not found or forbidden), 0 "
       "when it failed (see gpuscope_k8s_api_requests_total and the log); absent without an API server",
       "",
       {},
       "API server"},
      {"gpuscope_k8s_api_requests_total",
       MetricType::kCounter,
       "Requests to the Kubernetes API server by resource (pod, replicaset, job) and result (ok, not_found, "
       "forbidden, unauthorized, throttled, unreachable, error)",
       "",
       {"resource", "result"},
       "API server"},
      {"gpuscope_k8s_api_pods_cached",
       MetricType::kGauge,
       "Pods whose API server metadata is cached",
       "",
       {},
       "API server"},
  };
}

std::vector<std::pair<std::string, std::string>> PodMetadataSource::MetricLabelNames(
    const std::vector<std::string>& pod_labels) {
  // One metric label per sanitised name: a second pod label sanitised to the same name is left out, as
  // two values under one label name cannot be.
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const std::string& label : pod_labels) {
    if (label.empty()) continue;
    std::string metric_name = PodLabelMetricName(label);
    if (seen.insert(metric_name).second) out.emplace_back(label, std::move(metric_name));
  }
  return out;
}

std::vector<MetricFamily> PodMetadataSource::MetricFamilies() const {
  std::vector<MetricFamily> families;
  std::shared_ptr<const PodTable::View> view = table_->Current();
  const auto label_names = MetricLabelNames(options_.pod_labels);
  const std::vector<MetricDescription> described = Describe(options_.pod_labels);
  MetricFamily info{described[0].name, described[0].help, MetricType::kInfo, "", {}};
  std::set<PodRef> holders;
  for (const PodDeviceAllocation& a : view->allocations) holders.insert({a.namespace_name, a.pod});
  for (const PodRef& ref : holders) {
    const PodMetadata* m = view->Metadata(ref);
    std::vector<Labels::Pair> labels = {{"namespace", ref.namespace_name},
                                        {"pod", ref.pod},
                                        {"uid", m ? m->uid : ""},
                                        {"owner_kind", m ? m->owner_kind : ""},
                                        {"owner_name", m ? m->owner_name : ""}};
    for (const auto& [label, metric_name] : label_names) {
      std::string value;
      if (m != nullptr) {
        for (const auto& [name, v] : m->labels) {
          if (name == label) value = v;
        }
      }
      labels.emplace_back(metric_name, std::move(value));
    }
    info.samples.push_back({Labels(std::move(labels)), 1.0});
  }
  families.push_back(std::move(info));

  MutexLock lock(&metrics_mu_);
  if (!options_.api_server.empty()) {
    families.push_back(
        {described[1].name, described[1].help, MetricType::kGauge, "", {{{}, up_ ? 1.0 : 0.0}}});
  }
  MetricFamily requests{described[2].name, described[2].help, MetricType::kCounter, "", {}};
  for (Resource resource : {Resource::kPod, Resource::kReplicaSet, Resource::kJob}) {
    for (Result result : {Result::kOk, Result::kNotFound, Result::kForbidden, Result::kUnauthorized,
                          Result::kThrottled, Result::kUnreachable, Result::kError}) {
      auto it = requests_.find({resource, result});
      requests.samples.push_back(
          {{{"resource", std::string(ResourceName(resource))}, {"result", std::string(ResultName(result))}},
           it == requests_.end() ? 0.0 : static_cast<double>(it->second)});
    }
  }
  families.push_back(std::move(requests));
  families.push_back(
      {described[3].name, described[3].help, MetricType::kGauge, "", {{{}, static_cast<double>(cached_)}}});
  return families;
}

}  // namespace gpuscope
