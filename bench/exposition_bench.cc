// Micro-benchmarks of the scrape path: rendering ~2,000 series as text 0.0.4 and OpenMetrics, and the
// cached path a repeated scrape of one snapshot takes. Reported, never asserted (see bench/README.md).
#include <benchmark/benchmark.h>

#include <string>

#include "src/core/metric.h"
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

// A training node's step histograms: `ranks` ranks, 16 buckets each, every bucket with an exemplar.
Snapshot MakeHistogramSnapshot(int ranks) {
  const auto buckets =
      HistogramBuckets::Make({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600});
  MetricFamily family{
      "gpuscope_training_step_duration_seconds", "Step time.", MetricType::kHistogram, "seconds", {}};
  for (int r = 0; r < ranks; ++r) {
    auto value = std::make_shared<HistogramValue>();
    value->buckets = buckets;
    for (size_t i = 0; i < buckets->size(); ++i) value->counts.push_back(1000 * (i + 1));
    value->sum = 1234.5;
    for (size_t i = 0; i < buckets->size(); ++i)
      value->exemplars.push_back(
          {Labels{{"trace_id", "0af7651916cd43dd8448eb211c80319c"}}, 0.3, 1733100000123000000});
    family.samples.emplace_back(
        Labels{{"hpc_job", "4242"},
               {"rank", std::to_string(r)},
               {"Hostname", "gpu-node-0042"},
               {"gpu", std::to_string(r)},
               {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + r)}},
        std::move(value));
  }
  return Snapshot::Of({family}, /*version=*/1);
}

void BM_RenderOpenMetricsStepHistograms(benchmark::State& state) {
  Snapshot snapshot = MakeHistogramSnapshot(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = RenderSnapshot(snapshot, ExpositionFormat::kOpenMetrics100, nullptr);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["series"] = static_cast<double>(state.range(0) * 18);
  state.counters["body_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderOpenMetricsStepHistograms)->Arg(8);

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
