// Micro-benchmarks of the scrape path: rendering ~2,000 series as text 0.0.4 and OpenMetrics, and the
// cached path a repeated scrape of one snapshot takes. Reported, never asserted (see bench/README.md).
#include <benchmark/benchmark.h>

#include <string>

#include "src/core/snapshot.h"
#include "src/sinks/prometheus/exposition.h"
#include "src/sinks/prometheus/prometheus_endpoint.h"

namespace gpuscope {
namespace {

// 8 GPUs x 250 series with dcgm-exporter's identity labels: about what a busy HGX node exposes.
Snapshot MakeSnapshot(int gpus, int families) {
  std::vector<MetricFamily> list;
  for (int f = 0; f < families; ++f) {
    MetricFamily family{"DCGM_FI_BENCH_FIELD_" + std::to_string(f),
                        "A benchmark field (in W).",
                        f % 3 == 0 ? MetricType::kCounter : MetricType::kGauge,
                        "",
                        {}};
    for (int g = 0; g < gpus; ++g) {
      Labels labels{{"gpu", std::to_string(g)},
                    {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + g)},
                    {"pci_bus_id", "00000000:1" + std::to_string(g) + ":00.0"},
                    {"device", "nvidia" + std::to_string(g)},
                    {"modelName", "NVIDIA H100 80GB HBM3"},
                    {"Hostname", "gpu-node-0042"},
                    {"DCGM_FI_DRIVER_VERSION", "550.90.07"}};
      family.samples.push_back({std::move(labels), 1234.5 * f + g});
    }
    list.push_back(std::move(family));
  }
  return Snapshot::Of(std::move(list), /*version=*/1);
}

void BM_RenderText(benchmark::State& state) {
  Snapshot snapshot = MakeSnapshot(8, static_cast<int>(state.range(0)) / 8);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = RenderSnapshot(snapshot, ExpositionFormat::kText004, nullptr);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["series"] = static_cast<double>(state.range(0));
  state.counters["body_bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_RenderText)->Arg(2000)->Arg(10000);

void BM_RenderOpenMetrics(benchmark::State& state) {
  Snapshot snapshot = MakeSnapshot(8, static_cast<int>(state.range(0)) / 8);
  for (auto _ : state) {
    std::string body = RenderSnapshot(snapshot, ExpositionFormat::kOpenMetrics100, nullptr);
    benchmark::DoNotOptimize(body);
  }
}
BENCHMARK(BM_RenderOpenMetrics)->Arg(2000);

void BM_RenderGzipUncached(benchmark::State& state) {
  Snapshot snapshot = MakeSnapshot(8, 250);
  for (auto _ : state) {
    RenderCache cache;  // a fresh cache: every iteration renders and compresses
    benchmark::DoNotOptimize(cache.Get(snapshot, ExpositionFormat::kText004, true));
  }
}
BENCHMARK(BM_RenderGzipUncached);

void BM_CachedScrapeOfOneSnapshot(benchmark::State& state) {
  Snapshot snapshot = MakeSnapshot(8, 250);
  RenderCache cache;
  cache.Get(snapshot, ExpositionFormat::kText004, false);
  for (auto _ : state) benchmark::DoNotOptimize(cache.Get(snapshot, ExpositionFormat::kText004, false));
}
BENCHMARK(BM_CachedScrapeOfOneSnapshot);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
