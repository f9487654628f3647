// PodMetadataSource without an API server: the in-cluster URL, gpuscope_k8s_pod_info for every pod the
// PodTable says holds a device (empty metadata fields, one label_<name> per allow-listed label), and
// the documented families. Its requests are tested against the real Go peer in
// tests/integration/kubernetes_api_test.cc.
#include "src/attribution/kubernetes/pod_metadata_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/attribution/kubernetes/pod_metadata_collector.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;

std::map<std::string, std::string> LabelMap(const Labels& labels) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : labels) out[name] = value;
  return out;
}

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const MetricFamily& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

TEST(ResolveApiServerUrl, OffGivenOrInClusterFromTheServiceEnvironment) {
  std::map<std::string, std::string> env;
  auto getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(ResolveApiServerUrl("", getenv), "");  // not in a pod: no lookups
  env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  EXPECT_EQ(ResolveApiServerUrl("", getenv), "https://10.96.0.1:443");
  EXPECT_EQ(ResolveApiServerUrl("off", getenv), "");
  EXPECT_EQ(ResolveApiServerUrl("https://api.example:6443", getenv), "https://api.example:6443");
  env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  EXPECT_EQ(ResolveApiServerUrl("", getenv), "https://[fd00::1]:443");
  env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}};
  EXPECT_EQ(ResolveApiServerUrl("", getenv), "");
}

TEST(PodMetadataSource, PodInfoExistsForEveryDeviceHolderEvenWithoutAnApiServer) {
  PodTable table;
  PodDevicesUpdate update;
  update.allocations = {{"GPU-a", "nvidia.com/gpu", false, "ml", "trainer-0", "trainer"},
                        {"GPU-b", "nvidia.com/gpu", false, "ml", "trainer-0", "trainer"},
                        {"MIG-c", "nvidia.com/mig-1g.10gb", false, "inference", "embed-0", "server"}};
  update.pods = {{"ml", "trainer-0"}, {"inference", "embed-0"}, {"web", "no-gpu"}};
  table.UpdateDevices(update);
  PodMetadataSourceOptions options;
  options.pod_labels = {"team", "app.kubernetes.io/name"};
  PodMetadataSource source(options, &table);
  source.Start();  // no thread without an API server
  EXPECT_TRUE(source.QueryOnce().ok());
  std::vector<MetricFamily> families = source.MetricFamilies();
  const MetricFamily* info = Find(families, "gpuscope_k8s_pod_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->type, MetricType::kInfo);
  ASSERT_EQ(info->samples.size(), 2u);  // the pod without a device shows in no series
  const std::map<std::string, std::string> expected = {{"namespace", "inference"},
                                                       {"pod", "embed-0"},
                                                       {"uid", ""},
                                                       {"owner_kind", ""},
                                                       {"owner_name", ""},
                                                       {"label_team", ""},
                                                       {"label_app_kubernetes_io_name", ""}};
  EXPECT_EQ(LabelMap(info->samples[0].labels), expected);
  EXPECT_EQ(LabelMap(info->samples[1].labels).at("pod"), "trainer-0");
  EXPECT_EQ(Find(families, "gpuscope_k8s_api_up"), nullptr);  // no API server, no health to report
  ASSERT_NE(Find(families, "gpuscope_k8s_api_requests_total"), nullptr);
  EXPECT_EQ(Find(families, "gpuscope_k8s_api_requests_total")->samples.size(),
            21u);  // 3 resources x 7 results

  // Metadata another cycle published shows in the labels; allow-listed labels only.
  table.UpdateMetadata({{{"ml", "trainer-0"}, "uid-1", "Deployment", "trainer", {{"team", "search"}}}});
  families = source.MetricFamilies();
  info = Find(families, "gpuscope_k8s_pod_info");
  ASSERT_EQ(info->samples.size(), 2u);
  const auto trainer = LabelMap(info->samples[1].labels);
  EXPECT_EQ(trainer.at("uid"), "uid-1");
  EXPECT_EQ(trainer.at("owner_kind"), "Deployment");
  EXPECT_EQ(trainer.at("label_team"), "search");
  EXPECT_EQ(trainer.at("label_app_kubernetes_io_name"), "");
}

TEST(PodMetadataSource, DescribesItsFamiliesWithOneLabelPerDistinctSanitisedName) {
  std::vector<MetricDescription> described =
      PodMetadataSource::Describe({"team", "app.kubernetes.io/name", "team"});
  ASSERT_EQ(described.size(), 4u);
  EXPECT_EQ(described[0].name, "gpuscope_k8s_pod_info");
  EXPECT_THAT(described[0].labels, ElementsAre("namespace", "pod", "uid", "owner_kind", "owner_name",
                                               "label_team", "label_app_kubernetes_io_name"));
  EXPECT_EQ(described[1].name, "gpuscope_k8s_api_up");
  EXPECT_EQ(described[2].name, "gpuscope_k8s_api_requests_total");
  EXPECT_THAT(described[2].labels, ElementsAre("resource", "result"));
  EXPECT_EQ(described[3].name, "gpuscope_k8s_api_pods_cached");
  PodTable table;
  PodMetadataSource source({}, &table);
  PodMetadataCollector collector(&source, {"team"});
  EXPECT_EQ(collector.Describe()[0].labels.back(), "label_team");
}

}  // namespace
}  // namespace gpuscope
