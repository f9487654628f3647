// CPU cost of one GPU collection cycle for an 8-GPU node, through the real NVML path on the simulator
// (the simulator's own work is included, so this is an upper bound for the agent's share).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <ctime>

#include "src/collectors/gpu/gpu_collector.h"

namespace gpuscope {
namespace {

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void BM_GpuCollectionCycle8Gpus(benchmark::State& state) {
  setenv("GPUSCOPE_SIM_SCENARIO", GPUSCOPE_SCENARIO_DIR "/h100-training.yaml", 1);
  GpuCollectorOptions options;
  options.nvml_library = GPUSCOPE_SIM_LIBRARY;
  options.hostname = "bench-node";
  GpuCollector collector(options);
  std::vector<MetricFamily> warmup;
  collector.Collect(warmup);  // initialises NVML and the GPM baseline
  size_t series = 0;
  double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    std::vector<MetricFamily> out;
    benchmark::DoNotOptimize(collector.Collect(out));
    series = 0;
    for (const auto& family : out) series += family.samples.size();
  }
  double cpu = ProcessCpuSeconds() - cpu_start;
  state.counters["series"] = static_cast<double>(series);
  state.counters["process_cpu_ms_per_cycle"] = cpu * 1000 / static_cast<double>(state.iterations());
}
BENCHMARK(BM_GpuCollectionCycle8Gpus)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
