// AttributedCollector: ties a GPU collector's series to jobs. It wraps the GPU collector and, after each of
// its cycles, (1) hands the processes it saw on each GPU to the ProcResolver (→ JobTable), (2) adds the
// hpc_job label to every GPU series as dcgm-exporter does (one copy per job when several jobs share a GPU;
// a process series gets its own process's job), and (3) adds the join series
//   gpuscope_job_info{hpc_job,user,account,partition,job_name,...} 1
//   gpuscope_gpu_allocation_info{<GPU identity>,GPU_I_ID,hpc_job,rank,step} 1
//   gpuscope_gpu_allocated_idle{<GPU identity>,GPU_I_ID,hpc_job} 1 when the GPU (or MIG instance) is
//     allocated to the job but runs no process, else 0
// It also writes the device map the Slurm prolog reads to turn /dev/nvidiaN minors into NVML indices.
// Attribution is data read from the JobTable, never a lookup on the scrape path.
//
// Thread-safety: as Collector (Collect from the scheduler thread only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/attribution/job_table.h"
#include "src/core/collector.h"

namespace gpuscope {

class ProcResolver;

class GpuProcessTable;
class GpuDirectory;

struct AttributionOptions {
  bool hpc_job_label = true;    // add hpc_job to GPU series (off: only the join series, for cardinality)
  std::string device_map_file;  // "nvml_index minor pci_bus_id uuid" lines for the prolog; empty: none
  GpuProcessTable* processes = nullptr;  // when set, receives each cycle's GPU processes with their jobs
  GpuDirectory* gpus = nullptr;          // when set, receives each cycle's GPUs by PCI bus id (events use it)
};

class AttributedCollector : public Collector {
 public:
  // `table` must outlive the collector; `resolver` may be null (no /proc attribution).
  AttributedCollector(std::unique_ptr<Collector> inner, JobTable* table,
                      std::unique_ptr<ProcResolver> resolver, AttributionOptions options);
  ~AttributedCollector() override;

  std::string_view Name() const override { return inner_->Name(); }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;
  bool Healthy() const override { return inner_->Healthy(); }

  static std::vector<MetricDescription> DescribeAttribution();

 private:
  void WriteDeviceMap(const std::vector<MetricFamily>& families);
  void PublishGpuDirectory(const std::vector<MetricFamily>& families);

  std::unique_ptr<Collector> inner_;
  JobTable* table_;
  std::unique_ptr<ProcResolver> resolver_;
  AttributionOptions options_;
  std::string device_map_written_;  // content last written, to write only on change
};

}  // namespace gpuscope
