// Pure parsers of the few Kubernetes API objects the pod metadata source reads (JSON, as the API server
// answers them): a core/v1 Pod, a PodList, the metadata of an apps/v1 ReplicaSet or batch/v1 Job (only
// their ownerReferences matter), and a metav1.Status error body. No I/O. Input is untrusted: anything
// that is not the expected shape (bad JSON, wrong types, nesting deeper than 64, a missing name) gives an
// error naming what is wrong, never a crash; fields the agent does not use are ignored.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

struct KubeOwnerReference {
  std::string kind;  // "ReplicaSet", "Job", "StatefulSet", "DaemonSet", "Deployment", "CronJob", ...
  std::string name;
  bool controller = false;
};

struct KubeObjectMeta {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
  std::vector<KubeOwnerReference> owners;                   // in the object's order

  // The owner reference marked controller: true, else the first one; nullptr when there is none.
  const KubeOwnerReference* Controller() const;
};

struct KubePod {
  KubeObjectMeta meta;
  std::string node_name;  // spec.nodeName; empty while unscheduled
};

// One Pod object. Errors: InvalidArgument (not JSON, not a Pod, metadata.name or .namespace missing).
Status ParseKubePod(std::string_view json, KubePod* pod);
// A PodList: its items, each as ParseKubePod reads it. An item without name or namespace is an error of
// the whole list (a server that answers that is not trusted for the rest either).
Status ParseKubePodList(std::string_view json, std::vector<KubePod>* pods);
// The metadata of an object of `kind` ("ReplicaSet", "Job"): the body's kind must match when present.
Status ParseKubeObjectMeta(std::string_view json, std::string_view kind, KubeObjectMeta* meta);

// What a metav1.Status body says (the API server's error answers); zero/empty where the body is not one.
struct KubeStatus {
  int code = 0;
  std::string reason;  // "NotFound", "Forbidden", "Unauthorized", "TooManyRequests", ...
  std::string message;
  int retry_after_seconds = 0;  // details.retryAfterSeconds
};
KubeStatus ParseKubeStatus(std::string_view json);

// The Prometheus label name kube-state-metrics gives a pod label: "label_" + the name with every
// character outside [a-zA-Z0-9_] turned into '_' ("app.kubernetes.io/name" -> "label_app_kubernetes_io_name";
// a multi-byte UTF-8 character into one '_', as kube-state-metrics' Go regexp does).
std::string PodLabelMetricName(std::string_view label);

}  // namespace gpuscope
