// Micro-benchmark of a publish: SnapshotStore::Update with a node's worth of sources (the GPU collector's
// families for 8 or 48 GPUs, a host collector, the scheduler's self-metrics), the GPU source replaced
// each iteration. Reported, never asserted (see bench/README.md).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "src/core/snapshot.h"

namespace gpuscope {
namespace {

// `families` families of `samples` samples each, with dcgm-exporter's identity labels.
std::vector<MetricFamily> MakeFamilies(const std::string& prefix, int families, int samples) {
  std::vector<MetricFamily> list;
  for (int f = 0; f < families; ++f) {
    MetricFamily family{prefix + std::to_string(f), "A benchmark field (in W).", MetricType::kGauge, "", {}};
    for (int s = 0; s < samples; ++s) {
      Labels labels{{"gpu", std::to_string(s)},
                    {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + s)},
                    {"pci_bus_id", "00000000:1" + std::to_string(s) + ":00.0"},
                    {"device", "nvidia" + std::to_string(s)},
                    {"modelName", "NVIDIA H100 80GB HBM3"},
                    {"Hostname", "gpu-node-0042"},
                    {"DCGM_FI_DRIVER_VERSION", "550.90.07"}};
      family.samples.push_back({std::move(labels), 1234.5 * f + s});
    }
    list.push_back(std::move(family));
  }
  return list;
}

// One GPU collector cycle published into a store that also holds a host source and self-metrics.
// range(0): GPUs.
void BM_SnapshotStoreUpdate(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  SnapshotStore store;
  store.Update("host", MakeFamilies("node_bench_", 60, 4));
  store.Update("scheduler", MakeFamilies("gpuscope_bench_", 6, 5));
  const std::vector<MetricFamily> gpu = MakeFamilies("DCGM_FI_BENCH_FIELD_", 120, gpus);
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<MetricFamily> cycle = gpu;  // what the collector hands over; not part of the publish
    state.ResumeTiming();
    store.Update("gpu", std::move(cycle));
  }
  state.counters["series"] = static_cast<double>(120 * gpus + 60 * 4 + 6 * 5);
}
BENCHMARK(BM_SnapshotStoreUpdate)->Arg(8)->Arg(48)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
