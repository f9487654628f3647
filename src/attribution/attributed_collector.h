// AttributedCollector: ties a GPU collector's series to jobs and, with Kubernetes on, to pods. It wraps
// the GPU collector and, after each of its cycles, reads the typed GpuInventory that cycle published to the
// NodeState and (1) hands the processes on each GPU to the ProcResolver (→ JobTable) and, with their
// jobs, to the GpuProcessTable, (2) adds the hpc_job label to every GPU series as dcgm-exporter does, and
// with `kubernetes` the namespace, pod and container labels (dcgm-exporter's names) from the PodTable,
// from each sample's subject (the GPU, MIG instance or process it is about): one copy per holder when
// several jobs or containers share a GPU (time-slicing, MPS); a MIG instance gets the holder of its MIG
// device, else of its whole GPU; a process series gets its own process's job, and its own pod: on a GPU
// several pods share, the pod whose API-server uid (PodMetadata::uid) is the pod UID in the process's
// cgroup (ProcResolver::PodUidOf), else none; on a GPU one pod holds, that pod unless both UIDs are known
// and differ; and (3) adds the join series
//   gpuscope_job_info{hpc_job,user,account,partition,job_name,...} 1
//   gpuscope_gpu_allocation_info{<GPU identity>,GPU_I_ID,hpc_job,rank,step} 1
//   gpuscope_gpu_allocated_idle{<GPU identity>,GPU_I_ID,hpc_job} 1 when the GPU (or MIG instance) is
//     allocated to the job and its utilisation stayed below kIdleUtilisation for the whole kIdleWindow
//   gpuscope_gpu_allocated_without_process{<GPU identity>,GPU_I_ID,hpc_job} 1 when it is allocated to
//     the job but runs no process
// and with `kubernetes` their pod counterparts and the node's counts per resource name:
//   gpuscope_k8s_gpu_allocation_info{<GPU identity>,GPU_I_ID,namespace,pod,container,resource,shared} 1
//   gpuscope_k8s_gpu_allocated_idle{<GPU identity>,GPU_I_ID,namespace,pod,container} (the same window)
//   gpuscope_k8s_gpus_{allocatable,allocated,allocated_idle,in_use}{resource}
// GPU and MIG device UUIDs of the PodTable become GPU keys through GpuDirectory::GpuKeyOfUuid each cycle.
// It never reads rendered labels or family names back. Attribution is data read from the NodeState,
// never a lookup on the scrape path.
//
// Thread-safety: as Collector (Collect from the scheduler thread only).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/collector.h"
#include "src/core/label_cache.h"

namespace gpuscope {

class NodeState;
class ProcResolver;

struct AttributionOptions {
  bool hpc_job_label = true;  // add hpc_job to GPU series (off: only the join series, for cardinality)
  bool kubernetes = false;    // namespace, pod, container on GPU series and the gpuscope_k8s_* series
  // The clock of the idle window; null: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class AttributedCollector : public Collector {
 public:
  // Utilisation (SM active where the GPU reports it, else GPU utilisation, as the mixin's
  // gpuscope:gpu_utilisation:ratio) below which an allocated GPU counts as idle: the mixin's
  // idleUtilisation threshold.
  static constexpr double kIdleUtilisation = 0.05;
  // How long the utilisation must stay below kIdleUtilisation, in every cycle, before
  // gpuscope_gpu_allocated_idle is 1: long enough that a step's data loading or a short pause is not
  // idleness, short enough for a dashboard of "now". The mixin's alert adds its own `for:` duration.
  static constexpr std::chrono::seconds kIdleWindow{60};

  // `node` must outlive the collector; `resolver` may be null (no /proc attribution). `inner` publishes
  // its GpuInventory to `node` in Collect().
  AttributedCollector(std::unique_ptr<Collector> inner, NodeState* node,
                      std::unique_ptr<ProcResolver> resolver, AttributionOptions options);
  ~AttributedCollector() override;

  std::string_view Name() const override { return inner_->Name(); }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;
  bool Healthy() const override { return inner_->Healthy(); }

  static std::vector<MetricDescription> DescribeAttribution();

 private:
  std::unique_ptr<Collector> inner_;
  NodeState* node_;
  std::unique_ptr<ProcResolver> resolver_;
  AttributionOptions options_;
  // (JobTable GPU key, job id or "pod:<namespace>/<pod>/<container>") -> since when its utilisation has
  // been below kIdleUtilisation in every cycle (allocations not seen in a cycle are dropped).
  std::map<std::pair<std::string, std::string>, std::chrono::steady_clock::time_point> quiet_since_;
  LabelSetCache
      label_cache_;  // series labels + hpc_job / namespace, pod, container, kept from cycle to cycle
};

}  // namespace gpuscope
