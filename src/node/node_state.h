// NodeState: the facts about this node that the GPU collector, attribution, the event path and other
// collectors share, in one place with one owner (the agent creates one; everyone else gets a pointer):
//   - GpuDirectory: the GPUs as the GPU collector last saw them (the typed GpuInventory of its cycle);
//   - JobTable: which job holds which GPU (mapping files, /proc, Slurm);
//   - PodTable: which Kubernetes pod holds which device (the kubelet, the API server);
//   - GpuProcessTable: the processes on each GPU with their jobs (written by attribution);
//   - XidLedger: the XIDs NVML and the kernel log reported, each counted once;
//   - ProfilingPause: whether the GPUs' performance counters are left to a user's profiler now.
// Each publishes immutable views (shared_ptr<const ...>) that readers keep as long as they need; no
// reader ever waits for a writer's work. docs/design/node-state.md draws who writes and who reads.
//
// Writers: the GPU collector (PublishGpuInventory, its scheduler thread), the JobTable sources (their own
// threads), attribution (GpuProcessTable, the GPU collector's thread), the event pipeline (kernel-log
// XIDs, its thread). Readers: anyone.
//
// Thread-safety: all members are safe to use concurrently; PublishGpuInventory is called by one thread
// at a time (the GPU collector's).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "src/node/device_map.h"
#include "src/node/gpu_directory.h"
#include "src/node/gpu_inventory.h"
#include "src/node/gpu_process_table.h"
#include "src/node/job_table.h"
#include "src/node/pod_table.h"
#include "src/node/profiling_pause.h"
#include "src/node/xid_ledger.h"

namespace gpuscope {

struct NodeStateOptions {
  std::string device_map_file;  // "nvml_index minor pci_bus_id uuid" lines for the prolog; empty: none
  std::chrono::milliseconds xid_match_window = XidLedger::kDefaultMatchWindow;
  XidActionNamer xid_action;  // names an XID's recommended action (the XID catalog); null: empty
};

class NodeState {
 public:
  explicit NodeState(NodeStateOptions options = {});

  JobTable& jobs() { return jobs_; }
  const JobTable& jobs() const { return jobs_; }
  PodTable& pods() { return pods_; }
  const PodTable& pods() const { return pods_; }
  GpuDirectory& gpus() { return gpus_; }
  const GpuDirectory& gpus() const { return gpus_; }
  GpuProcessTable& gpu_processes() { return gpu_processes_; }
  const GpuProcessTable& gpu_processes() const { return gpu_processes_; }
  XidLedger& xids() { return xids_; }
  const XidLedger& xids() const { return xids_; }
  ProfilingPause& profiling_pause() { return profiling_pause_; }
  const ProfilingPause& profiling_pause() const { return profiling_pause_; }

  // The GPU collector's cycle: records the inventory's NVML XID observations in the ledger, publishes
  // the inventory (GpuDirectory) and rewrites the device map when it changed.
  void PublishGpuInventory(GpuInventory inventory);

 private:
  JobTable jobs_;
  PodTable pods_;
  GpuDirectory gpus_;
  GpuProcessTable gpu_processes_;
  XidLedger xids_;
  ProfilingPause profiling_pause_;
  DeviceMapWriter device_map_;  // used by PublishGpuInventory's caller thread only
  uint64_t next_cycle_ = 1;     // likewise
};

}  // namespace gpuscope
