// NodeState: the GPU collector's inventory becomes the GPU directory the event path reads, its NVML XIDs
// go into the ledger, and the device map the Slurm prolog reads is written from it.
#include "src/node/node_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuscope {
namespace {

// Four opened GPUs whose /dev/nvidia minors run backwards (7 - index), and a fifth NVML could not open.
GpuInventory FourGpus() {
  GpuInventory inventory;
  for (uint32_t i = 0; i < 5; ++i) {
    GpuDeviceInventory device;
    device.index = i;
    device.opened = i < 4;
    device.up = device.opened;
    if (device.opened) {
      device.minor = 7 - i;
      device.uuid = "GPU-" + std::to_string(i);
      device.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    }
    inventory.devices.push_back(device);
  }
  return inventory;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(NodeStateTest, WritesTheDeviceMapThePrologReads) {
  std::string dir = ::testing::TempDir() + "/gpuscope-node-state-test";
  std::filesystem::remove_all(dir);
  std::string path = dir + "/devices";
  NodeStateOptions options;
  options.device_map_file = path;
  NodeState node(options);
  node.PublishGpuInventory(FourGpus());
  EXPECT_EQ(ReadAll(path),
            "# nvml_index minor pci_bus_id uuid (written by gpuscope-agent)\n"
            "0 7 00000000:10:00.0 GPU-0\n1 6 00000000:11:00.0 GPU-1\n"
            "2 5 00000000:12:00.0 GPU-2\n3 4 00000000:13:00.0 GPU-3\n");
}

TEST(NodeStateTest, NoDeviceMapBeforeAnyGpuIsOpened) {
  EXPECT_EQ(RenderDeviceMap(GpuInventory{}), "");
  GpuInventory unopened;
  unopened.devices.resize(2);
  EXPECT_EQ(RenderDeviceMap(unopened), "") << "placeholders have no identity to publish";
}

TEST(NodeStateTest, TheInventoryIsTheDirectoryTheEventPathReads) {
  NodeState node;
  EXPECT_TRUE(node.gpus().Current()->devices.empty()) << "an empty view before the first cycle";
  node.PublishGpuInventory(FourGpus());
  auto gpu = node.gpus().Find("0000:12:00.0");
  ASSERT_TRUE(gpu.has_value()) << "any spelling of the bus id";
  EXPECT_EQ(gpu->index, "2");
  EXPECT_EQ(gpu->uuid, "GPU-2");
  EXPECT_FALSE(node.gpus().Find("00000000:14:00.0").has_value()) << "unopened GPUs are not findable";
  std::shared_ptr<const GpuInventory> first = node.gpus().Current();
  node.PublishGpuInventory(FourGpus());
  EXPECT_GT(node.gpus().Current()->cycle, first->cycle);
  EXPECT_EQ(first->devices.size(), 5u) << "a reader's view stays as it was";
}

TEST(NodeStateTest, NvmlXidsOfTheInventoryAreCountedInTheLedgerOnce) {
  NodeStateOptions options;
  options.xid_action = [](uint32_t xid) { return xid == 79 ? std::string("reboot") : std::string(); };
  NodeState node(options);
  GpuInventory inventory = FourGpus();
  inventory.xids.push_back({"00000000:11:00.0", 79, 1000.0});
  node.PublishGpuInventory(inventory);
  // The kernel log reports the same event a moment later: one count.
  EXPECT_FALSE(node.xids().Record(XidObserver::kKernelLog, "0000:11:00.0", 79, 1001.0));
  auto entries = node.xids().Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].count, 1u);
  EXPECT_EQ(entries[0].action, "reboot");
}

}  // namespace
}  // namespace gpuscope
