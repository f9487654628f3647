// The parsers of the API server's answers (src/attribution/kubernetes/kube_objects.h) on bodies shaped as
// the API server renders them (the fields and nesting of `kubectl get -o json`, trimmed to what matters
// plus some of what a real object carries around it), on hostile input, and the label names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "src/attribution/kubernetes/kube_objects.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kDeploymentPod[] = R"({
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {
    "name": "llm-7d9c5b6f4-x2x7q", "generateName": "llm-7d9c5b6f4-", "namespace": "inference",
    "uid": "0d1e2f3a-4b5c-4d6e-8f70-812233445566", "resourceVersion": "48213",
    "creationTimestamp": "2026-11-30T10:00:00Z",
    "labels": {"app.kubernetes.io/name": "llm", "pod-template-hash": "7d9c5b6f4", "team": "search"},
    "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T09:59:00Z"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-7d9c5b6f4",
      "uid": "aa", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:metadata": {}}}]
  },
  "spec": {"nodeName": "gpu-node-3", "containers": [{"name": "server", "image": "llm:1",
    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
  "status": {"phase": "Running", "podIP": "10.0.0.7"}
})";

TEST(KubePodParser, ReadsNameUidLabelsNodeAndTheControllingOwner) {
  KubePod pod;
  ASSERT_TRUE(ParseKubePod(kDeploymentPod, &pod).ok());
  EXPECT_EQ(pod.meta.namespace_name, "inference");
  EXPECT_EQ(pod.meta.name, "llm-7d9c5b6f4-x2x7q");
  EXPECT_EQ(pod.meta.uid, "0d1e2f3a-4b5c-4d6e-8f70-812233445566");
  EXPECT_EQ(pod.node_name, "gpu-node-3");
  EXPECT_THAT(pod.meta.labels, ElementsAre(Pair("app.kubernetes.io/name", "llm"),
                                           Pair("pod-template-hash", "7d9c5b6f4"), Pair("team", "search")));
  ASSERT_NE(pod.meta.Controller(), nullptr);
  EXPECT_EQ(pod.meta.Controller()->kind, "ReplicaSet");
  EXPECT_EQ(pod.meta.Controller()->name, "llm-7d9c5b6f4");
}

TEST(KubePodParser, BarePodHasNoController) {
  KubePod pod;
  ASSERT_TRUE(
      ParseKubePod(R"({"kind":"Pod","metadata":{"name":"debug","namespace":"default","uid":"u"}})", &pod)
          .ok());
  EXPECT_EQ(pod.meta.Controller(), nullptr);
  EXPECT_TRUE(pod.meta.labels.empty());
  EXPECT_EQ(pod.node_name, "");
}

TEST(KubePodParser, ControllerIsTheReferenceMarkedControllerNotTheFirst) {
  KubePod pod;
  ASSERT_TRUE(ParseKubePod(R"({"metadata":{"name":"p","namespace":"n","ownerReferences":[
      {"kind":"ConfigMap","name":"cm"},{"kind":"StatefulSet","name":"db","controller":true}]}})",
                           &pod)
                  .ok());
  ASSERT_NE(pod.meta.Controller(), nullptr);
  EXPECT_EQ(pod.meta.Controller()->kind, "StatefulSet");
  // Without any marked controller, the first reference stands for it.
  ASSERT_TRUE(
      ParseKubePod(
          R"({"metadata":{"name":"p","namespace":"n","ownerReferences":[{"kind":"DaemonSet","name":"ds"}]}})",
          &pod)
          .ok());
  EXPECT_EQ(pod.meta.Controller()->kind, "DaemonSet");
}

TEST(KubeOwnerParser, ReplicaSetLeadsToItsDeploymentAndJobToItsCronJob) {
  KubeObjectMeta meta;
  ASSERT_TRUE(
      ParseKubeObjectMeta(R"({"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"name":"llm-7d9c5b6f4",
      "namespace":"inference","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"llm",
      "controller":true}]},"spec":{"replicas":2},"status":{"replicas":2}})",
                          "ReplicaSet", &meta)
          .ok());
  ASSERT_NE(meta.Controller(), nullptr);
  EXPECT_EQ(meta.Controller()->kind, "Deployment");
  EXPECT_EQ(meta.Controller()->name, "llm");

  ASSERT_TRUE(
      ParseKubeObjectMeta(R"({"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"nightly-29412000",
      "namespace":"ml","ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})",
                          "Job", &meta)
          .ok());
  EXPECT_EQ(meta.Controller()->kind, "CronJob");
  EXPECT_EQ(meta.Controller()->name, "nightly");

  // A Job created by hand has no owner: the pod's owner stays the Job.
  ASSERT_TRUE(
      ParseKubeObjectMeta(R"({"kind":"Job","metadata":{"name":"once","namespace":"ml"}})", "Job", &meta)
          .ok());
  EXPECT_EQ(meta.Controller(), nullptr);
}

TEST(KubeOwnerParser, RefusesAnObjectOfAnotherKind) {
  KubeObjectMeta meta;
  Status status =
      ParseKubeObjectMeta(R"({"kind":"Pod","metadata":{"name":"a","namespace":"b"}})", "ReplicaSet", &meta);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("kind Pod, expected ReplicaSet"));
}

TEST(KubePodListParser, ReadsEveryItemAndAnEmptyList) {
  std::vector<KubePod> pods;
  const std::string list =
      std::string(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[)") +
      kDeploymentPod +
      R"(,{"metadata":{"name":"b","namespace":"ml","uid":"u2"},"spec":{"nodeName":"gpu-node-3"}}]})";
  ASSERT_TRUE(ParseKubePodList(list, &pods).ok());
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].meta.name, "llm-7d9c5b6f4-x2x7q");
  EXPECT_EQ(pods[1].meta.uid, "u2");
  ASSERT_TRUE(
      ParseKubePodList(R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})", &pods).ok());
  EXPECT_TRUE(pods.empty());
}

TEST(KubePodListParser, AnItemWithoutNameFailsTheWholeListAndLeavesTheOutputEmpty) {
  std::vector<KubePod> pods = {KubePod{}};
  Status status = ParseKubePodList(
      R"({"kind":"PodList","items":[{"metadata":{"name":"a","namespace":"n"}},{"metadata":{"namespace":"n"}}]})",
      &pods);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("items[1]"));
  EXPECT_TRUE(pods.empty());
}

TEST(KubeParsers, HostileOrMalformedInputGivesAClearErrorNeverACrash) {
  KubePod pod;
  std::vector<KubePod> pods;
  const std::pair<const char*, const char*> cases[] = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {"null", "not a JSON object"},
      {R"({"kind":"Pod"})", "no metadata"},
      {R"({"metadata":[]})", "no metadata"},
      {R"({"metadata":{"name":7,"namespace":"n"}})", "not a string"},
      {R"({"metadata":{"name":"a"}})", "missing"},
      {R"({"metadata":{"name":"a","namespace":"n","labels":["x"]}})", "labels is not an object"},
      {R"({"metadata":{"name":"a","namespace":"n","labels":{"team":1}}})", "label team is not a string"},
      {R"({"metadata":{"name":"a","namespace":"n","ownerReferences":{}}})", "not an array"},
      {R"({"metadata":{"name":"a","namespace":"n","ownerReferences":[{"kind":"ReplicaSet"}]}})",
       "without kind or name"},
      {R"({"metadata":{"name":"a","namespace":"n"},"spec":{"nodeName":["x"]}})", "spec.nodeName"},
      {R"({"kind":"Pod","metadata":{"name":"a","namespace":"n"}} trailing)", "not JSON"},
      {"{\"metadata\":{\"name\":\"\xff\xfe\",\"namespace\":\"n\"}}", "not JSON"},  // not UTF-8
  };
  for (const auto& [body, expected] : cases) {
    Status status = ParseKubePod(body, &pod);
    EXPECT_FALSE(status.ok()) << body;
    EXPECT_THAT(status.message(), HasSubstr(expected)) << body;
  }
  // Nesting a real object never has: refused before parsing (no deep recursion anywhere).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Status status = ParseKubePodList(deep, &pods);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than 64"));
  // Brackets inside strings do not count as nesting.
  ASSERT_TRUE(ParseKubePod(R"({"metadata":{"name":"a","namespace":"n","labels":{"x":")" +
                               std::string(1000, '[') + R"("}}})",
                           &pod)
                  .ok());
  EXPECT_EQ(pod.meta.labels[0].second, std::string(1000, '['));
  EXPECT_FALSE(ParseKubePodList(R"({"kind":"PodList","items":{}})", &pods).ok());
}

TEST(KubeStatusParser, ReadsTheApiServersErrorBodies) {
  KubeStatus status = ParseKubeStatus(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
      "message":"Too many requests, please try again later.","reason":"TooManyRequests",
      "details":{"retryAfterSeconds":7},"code":429})");
  EXPECT_EQ(status.code, 429);
  EXPECT_EQ(status.reason, "TooManyRequests");
  EXPECT_EQ(status.retry_after_seconds, 7);
  EXPECT_EQ(status.message, "Too many requests, please try again later.");
  status = ParseKubeStatus(
      R"({"kind":"Status","status":"Failure","message":"pods \"x\" not found","reason":"NotFound","code":404})");
  EXPECT_EQ(status.reason, "NotFound");
  EXPECT_EQ(status.retry_after_seconds, 0);
  // Not a Status (a proxy's HTML page, another object): nothing read.
  EXPECT_EQ(ParseKubeStatus("<html>502 Bad Gateway</html>").code, 0);
  EXPECT_EQ(ParseKubeStatus(R"({"kind":"Pod","code":404})").code, 0);
  EXPECT_EQ(
      ParseKubeStatus(R"({"kind":"Status","details":{"retryAfterSeconds":99999999}})").retry_after_seconds,
      86400);
}

TEST(PodLabelMetricName, SanitisesAsKubeStateMetricsDoes) {
  EXPECT_EQ(PodLabelMetricName("team"), "label_team");
  EXPECT_EQ(PodLabelMetricName("app.kubernetes.io/name"), "label_app_kubernetes_io_name");
  EXPECT_EQ(PodLabelMetricName("cost-center"), "label_cost_center");
  EXPECT_EQ(PodLabelMetricName("9lives"), "label_9lives");
  EXPECT_EQ(PodLabelMetricName("été"), "label__t_");  // one '_' per character, not per UTF-8 byte
}

}  // namespace
}  // namespace gpuscope
