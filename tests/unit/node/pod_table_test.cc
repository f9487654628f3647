// The PodTable merges what the kubelet and the API server say into one atomically published view.
#include "src/node/pod_table.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

PodDeviceAllocation Held(std::string id, std::string ns, std::string pod, std::string container,
                         bool replica = false) {
  return {std::move(id), "nvidia.com/gpu", replica, std::move(ns), std::move(pod), std::move(container)};
}

TEST(PodTable, StartsEmptyAndUnknownThenPublishesVersionedViews) {
  PodTable table;
  auto empty = table.Current();
  EXPECT_FALSE(empty->devices_known);
  table.UpdateDevices({{Held("GPU-a", "ns", "p", "c")}, {{"GPU-a", "nvidia.com/gpu", 1}}, {}});
  auto first = table.Current();
  EXPECT_TRUE(first->devices_known);
  EXPECT_GT(first->version, empty->version);
  ASSERT_EQ(first->HoldersOf("GPU-a").size(), 1u);
  EXPECT_EQ(first->pods, (std::vector<PodRef>{{"ns", "p"}})) << "a pod with devices is a listed pod";
  EXPECT_TRUE(empty->allocations.empty()) << "an old view never changes";
}

TEST(PodTable, DuplicatesFromNumaTopologyCountOnceAndSharedGpusKeepEveryPod) {
  PodTable table;
  table.UpdateDevices({{Held("GPU-a", "b", "p2", "c", true), Held("GPU-a", "a", "p1", "c", true),
                        Held("GPU-a", "a", "p1", "c", true), Held("GPU-b", "a", "p1", "c")},
                       {},
                       {}});
  auto view = table.Current();
  auto holders = view->HoldersOf("GPU-a");
  ASSERT_EQ(holders.size(), 2u);
  EXPECT_EQ(holders[0]->pod, "p1");
  EXPECT_EQ(holders[1]->pod, "p2");
  EXPECT_TRUE(view->HoldersOf("GPU-c").empty());
}

TEST(PodTable, ANewKubeletAnswerReplacesTheOldOneSoEndedPodsAndTheirMetadataVanish) {
  PodTable table;
  table.UpdateDevices({{Held("GPU-a", "ns", "old", "c")}, {}, {}});
  table.UpdateMetadata({{{"ns", "old"}, "uid-1", "Job", "train", {}}, {{"ns", "new"}, "uid-2", "", "", {}}});
  EXPECT_NE(table.Current()->Metadata({"ns", "old"}), nullptr);
  EXPECT_EQ(table.Current()->Metadata({"ns", "new"}), nullptr) << "metadata only for listed pods";
  table.UpdateDevices({{Held("GPU-a", "ns", "new", "c")}, {}, {{"ns", "idle"}}});
  auto view = table.Current();
  ASSERT_EQ(view->HoldersOf("GPU-a").size(), 1u);
  EXPECT_EQ(view->HoldersOf("GPU-a")[0]->pod, "new");
  EXPECT_EQ(view->Metadata({"ns", "old"}), nullptr);
  ASSERT_NE(view->Metadata({"ns", "new"}), nullptr);
  EXPECT_EQ(view->Metadata({"ns", "new"})->uid, "uid-2");
  EXPECT_EQ(view->pods, (std::vector<PodRef>{{"ns", "idle"}, {"ns", "new"}}));
}

TEST(PodTable, AllocationsWithoutADeviceOrPodAreDropped) {
  PodTable table;
  table.UpdateDevices(
      {{Held("", "ns", "p", "c"), Held("GPU-a", "", "p", "c"), Held("GPU-a", "ns", "", "c")}, {}, {}});
  EXPECT_TRUE(table.Current()->allocations.empty());
}

}  // namespace
}  // namespace gpuscope
