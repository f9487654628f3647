#include "src/node/node_state.h"

#include <utility>

namespace gpuscope {

NodeState::NodeState(NodeStateOptions options)
    : xids_(options.xid_match_window, std::move(options.xid_action)),
      device_map_(std::move(options.device_map_file)) {}

void NodeState::PublishGpuInventory(GpuInventory inventory) {
  for (const XidObservation& xid : inventory.xids) {
    xids_.Record(XidObserver::kNvml, xid.pci_bus_id, xid.xid, xid.time_seconds);
  }
  inventory.cycle = next_cycle_++;
  device_map_.Write(inventory);
  gpus_.Publish(std::make_shared<const GpuInventory>(std::move(inventory)));
}

}  // namespace gpuscope
