// The kubelet's pod-resources answers as PodTable data: device id schemes of NVIDIA's device plugin
// (UUIDs, MIG UUIDs, time-slicing/MPS replicas, NVML indexes), NUMA duplicates, other plugins' devices,
// and the ignored-device counts. Protobuf messages built in the test, no gRPC.
#include "src/attribution/kubernetes/pod_devices.h"

#include <gtest/gtest.h>

#include "podresources/v1/api.pb.h"
#include "src/node/gpu_directory.h"

namespace gpuscope {
namespace {

void AddDevices(google::protobuf::RepeatedPtrField<v1::ContainerDevices>* out, const std::string& resource,
                std::vector<std::string> ids, std::vector<int64_t> numa = {}) {
  v1::ContainerDevices* group = out->Add();
  group->set_resource_name(resource);
  for (const std::string& id : ids) group->add_device_ids(id);
  for (int64_t node : numa) group->mutable_topology()->add_nodes()->set_id(node);
}

v1::ContainerResources* AddContainer(v1::ListPodResourcesResponse& list, const std::string& ns,
                                     const std::string& pod, const std::string& container) {
  v1::PodResources* p = nullptr;
  for (v1::PodResources& existing : *list.mutable_pod_resources()) {
    if (existing.namespace_() == ns && existing.name() == pod) p = &existing;
  }
  if (p == nullptr) {
    p = list.add_pod_resources();
    p->set_namespace_(ns);
    p->set_name(pod);
  }
  v1::ContainerResources* c = p->add_containers();
  c->set_name(container);
  return c;
}

TEST(KubeletDeviceIds, AReplicaSuffixIsRemovedAndMarked) {
  KubeletDeviceId id = ParseKubeletDeviceId("nvidia.com/gpu", "GPU-5e7a::1");
  EXPECT_EQ(id.id, "GPU-5e7a");
  EXPECT_TRUE(id.replica);
  EXPECT_EQ(id.kind, KubeletDeviceKind::kGpuUuid);
  id = ParseKubeletDeviceId("nvidia.com/gpu", "GPU-5e7a");
  EXPECT_EQ(id.id, "GPU-5e7a");
  EXPECT_FALSE(id.replica);
  id = ParseKubeletDeviceId("example.com/x", "a::b");
  EXPECT_EQ(id.id, "a::b") << "only a number after :: is a replica";
  EXPECT_FALSE(id.replica);
}

TEST(KubeletDeviceIds, IdsAreJoinedByTheirFormNotByTheResourceName) {
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/mig-1g.10gb", "MIG-0a1b").kind, KubeletDeviceKind::kMigUuid);
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/gpu", "MIG-0a1b").kind, KubeletDeviceKind::kMigUuid)
      << "the single MIG strategy lists MIG devices under nvidia.com/gpu";
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/gpu.shared", "GPU-1::3").kind, KubeletDeviceKind::kGpuUuid)
      << "renamed replicas";
  EXPECT_TRUE(IsGpuDeviceId("nvidia.com/gpu", "GPU-1"));
  EXPECT_FALSE(IsGpuDeviceId("nvidia.com/gpu", "0"));
}

TEST(KubeletDeviceIds, IndexIdsUnknownFormsAndOtherPluginsAreTold) {
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/gpu", "0").kind, KubeletDeviceKind::kIndex);
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/mig-1g.10gb", "0:1").kind, KubeletDeviceKind::kIndex);
  EXPECT_EQ(ParseKubeletDeviceId("nvidia.com/gpu", "gpu-zero").kind, KubeletDeviceKind::kUnknown);
  EXPECT_EQ(ParseKubeletDeviceId("example.com/fpga", "fpga-0").kind, KubeletDeviceKind::kOther);
  EXPECT_EQ(ParseKubeletDeviceId("example.com/fpga", "0").kind, KubeletDeviceKind::kOther)
      << "an index under another plugin's resource is that plugin's business";
}

TEST(PodDevicesFromKubelet, ContainersDevicesBecomeAllocationsWithEveryListedPod) {
  v1::ListPodResourcesResponse list;
  AddDevices(AddContainer(list, "ml", "trainer-0", "trainer")->mutable_devices(), "nvidia.com/gpu", {"GPU-2"},
             {0});
  AddContainer(list, "ml", "trainer-0", "sidecar");
  AddDevices(AddContainer(list, "n", "alice", "nb")->mutable_devices(), "nvidia.com/gpu", {"GPU-3::0"}, {1});
  AddContainer(list, "web", "frontend", "nginx");  // no devices at all
  PodDevicesUpdate update = PodDevicesFromKubelet(list, v1::AllocatableResourcesResponse());
  ASSERT_EQ(update.allocations.size(), 2u);
  EXPECT_EQ(update.allocations[0].device_id, "GPU-2");
  EXPECT_EQ(update.allocations[0].container, "trainer");
  EXPECT_FALSE(update.allocations[0].replica);
  EXPECT_EQ(update.allocations[1].device_id, "GPU-3");
  EXPECT_TRUE(update.allocations[1].replica);
  EXPECT_EQ(update.allocations[1].namespace_name, "n");
  EXPECT_EQ(update.allocations[1].pod, "alice");
  EXPECT_EQ(update.pods, (std::vector<PodRef>{{"ml", "trainer-0"}, {"n", "alice"}, {"web", "frontend"}}));
}

TEST(PodDevicesFromKubelet, ADeviceListedOncePerNumaNodeCountsOnce) {
  v1::ListPodResourcesResponse list;
  auto* devices = AddContainer(list, "media", "encoder", "enc")->mutable_devices();
  AddDevices(devices, "nvidia.com/gpu", {"GPU-1"}, {0});
  AddDevices(devices, "nvidia.com/gpu", {"GPU-1"}, {1});
  v1::AllocatableResourcesResponse allocatable;
  AddDevices(allocatable.mutable_devices(), "nvidia.com/gpu", {"GPU-1"}, {0});
  AddDevices(allocatable.mutable_devices(), "nvidia.com/gpu", {"GPU-1"}, {1});
  AddDevices(allocatable.mutable_devices(), "nvidia.com/gpu", {"GPU-3::0", "GPU-3::1"}, {1});
  PodDevicesUpdate update = PodDevicesFromKubelet(list, allocatable);
  PodTable table;
  table.UpdateDevices(update);
  EXPECT_EQ(table.Current()->allocations.size(), 1u) << "the table dedupes the allocation";
  ASSERT_EQ(update.allocatable.size(), 2u);
  EXPECT_EQ(update.allocatable[0].device_id, "GPU-1");
  EXPECT_EQ(update.allocatable[0].replicas, 1u) << "two NUMA entries of one id are one device";
  EXPECT_EQ(update.allocatable[1].device_id, "GPU-3");
  EXPECT_EQ(update.allocatable[1].replicas, 2u);
}

TEST(IgnoredDevices, CountsDistinctIdsNotJoinedByResourceAndReason) {
  GpuInventory inventory;
  GpuDeviceInventory gpu;
  gpu.index = 0;
  gpu.opened = true;
  gpu.uuid = "GPU-aaaa";
  gpu.pci_bus_id = "00000000:18:00.0";
  gpu.mig.push_back({1, "1g.10gb", {"MIG-bbbb"}, std::nullopt});
  inventory.devices.push_back(gpu);
  GpuDirectory gpus;
  gpus.Publish(std::make_shared<const GpuInventory>(inventory));

  PodDevicesUpdate update;
  update.allocations = {{"GPU-aaaa", "nvidia.com/gpu", false, "a", "p", "c"},
                        {"MIG-bbbb", "nvidia.com/mig-1g.10gb", false, "a", "q", "c"},
                        {"GPU-ffff", "nvidia.com/gpu", false, "a", "r", "c"},
                        {"0", "nvidia.com/gpu", false, "a", "s", "c"},
                        {"fpga-0", "example.com/fpga", false, "a", "t", "c"},
                        {"fpga-0", "example.com/fpga", false, "a", "u", "c"}};
  update.allocatable = {
      {"0", "nvidia.com/gpu", 1}, {"1", "nvidia.com/gpu", 1}, {"fpga-1", "example.com/fpga", 1}};
  auto ignored = IgnoredDevices(update, &gpus);
  using Key = std::pair<std::string, std::string>;
  EXPECT_EQ(ignored, (std::map<Key, size_t>{{{"example.com/fpga", "other_resource"}, 2},
                                            {{"nvidia.com/gpu", "index_id"}, 2},
                                            {{"nvidia.com/gpu", "unknown_device"}, 1}}));
  EXPECT_EQ(IgnoredDevices(update, nullptr).count({"nvidia.com/gpu", "unknown_device"}), 0u)
      << "without a GPU directory UUIDs are not checked";
}

}  // namespace
}  // namespace gpuscope
