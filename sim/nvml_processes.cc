// NVML entry points for the processes running on a GPU or MIG instance: the scenario's made-up ones, or
// real marked processes of this machine when the scenario asks for them.
//
// Thread-safety: every entry point may be called from any thread.
#include "sim/nvml_entry.h"

using gpuscope::sim::GpuConfig;
using gpuscope::sim::GpuState;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::FillList;
using gpuscope::sim::nvml::kNoInstance;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

namespace {

std::vector<nvmlProcessInfo_t> Processes(const Call& c, const GpuState& st) {
  const GpuConfig& g = c.config();
  const unsigned n = g.workload.processes;
  std::vector<nvmlProcessInfo_t> list;
  constexpr double kGiBytes = 1024.0 * 1024 * 1024;
  if (c.sim->scenario().proc_processes.enabled) {
    // Real marked processes replace the scenario's made-up ones (whole GPUs only; MIG handles get none).
    if (c.mig >= 0) return list;
    const auto memory =
        static_cast<unsigned long long>(c.sim->scenario().proc_processes.memory_gib * kGiBytes);
    const std::vector<std::vector<unsigned>> by_gpu = c.sim->ProcProcessesByGpu();
    for (unsigned pid : by_gpu[c.gpu]) list.push_back({pid, memory, kNoInstance, kNoInstance});
    return list;
  }
  if (n == 0) return list;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (g.mig.empty()) {
    const std::vector<double>& shares = g.workload.process_memory_shares;
    double total = 0;
    for (double share : shares) total += share;
    for (unsigned i = 0; i < n; ++i) {
      const double fraction = shares.size() == n ? shares[i] / total : 1.0 / n;
      list.push_back({c.sim->Pid(c.gpu, i),
                      static_cast<unsigned long long>(st.mem_used_gib * kGiB * fraction), kNoInstance,
                      kNoInstance});
    }
    return list;
  }
  for (size_t i = 0; i < g.mig.size(); ++i) {
    if ((c.mig >= 0 && static_cast<size_t>(c.mig) != i) || g.mig[i].load <= 0) continue;
    list.push_back({c.sim->Pid(c.gpu, static_cast<unsigned>(i)),
                    static_cast<unsigned long long>(gpuscope::sim::MigInstanceMemoryGib(st, g.mig[i]) * kGiB),
                    g.mig[i].gpu_instance_id, g.mig[i].compute_instance_id});
  }
  return list;
}

}  // namespace

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                nvmlProcessInfo_t* infos) {
  return OnDevice(device, Scope::kMigToo,
                  [&](Call& c) { return FillList(Processes(c, c.State()), count, infos); });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return OnDevice(device, Scope::kMigToo, [&](Call&) {
    return FillList(std::vector<nvmlProcessInfo_t>{}, count, infos);  // compute nodes run no graphics
  });
}

}  // extern "C"
