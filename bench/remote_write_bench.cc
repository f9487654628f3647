// Micro-benchmark of remote_write encoding for one batch of 2,000 series with dcgm-exporter's identity
// labels (250 families x 8 GPUs, the "2,000 series every 15 s"): what the producer pays per
// interval (the 1.0 encoding it queues) and what a sender pays per request (1.0: the queued bytes
// snappy-compressed; 2.0: the queued bytes decoded, re-encoded with a symbols table, compressed).
// Reported as samples per second (ns per sample = 1e9 / items_per_second) and wire bytes per sample, never
// asserted (see bench/README.md).
#include <benchmark/benchmark.h>

#include <string>

#include "src/sinks/remote_write/remote_write_encode.h"

namespace gpuscope {
namespace {

constexpr int kFamilies = 250;
constexpr int kGpus = 8;

RemoteWriteBatch MakeBatch() {
  RemoteWriteBatch batch;
  for (int f = 0; f < kFamilies; ++f) {
    const std::string name = "DCGM_FI_BENCH_FIELD_" + std::to_string(f);
    batch.metadata.push_back(
        {name, f % 5 == 0 ? MetricType::kCounter : MetricType::kGauge, "A benchmark field (in W).", ""});
    for (int g = 0; g < kGpus; ++g) {
      // Sorted by name, as the sink sorts them.
      batch.series.push_back({{{"DCGM_FI_DRIVER_VERSION", "550.90.07"},
                               {"Hostname", "gpu-node-0042"},
                               {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + g)},
                               {"__name__", name},
                               {"cluster", "c1"},
                               {"device", "nvidia" + std::to_string(g)},
                               {"gpu", std::to_string(g)},
                               {"modelName", "NVIDIA H100 80GB HBM3"},
                               {"pci_bus_id", "00000000:1" + std::to_string(g) + ":00.0"}},
                              1234.5 * f + g,
                              1796150000000,
                              0});
    }
  }
  return batch;
}

void Report(benchmark::State& state, size_t samples, size_t wire_bytes) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * samples));
  state.counters["wire_bytes_per_sample"] = static_cast<double>(wire_bytes) / static_cast<double>(samples);
}

// The producer's share: the batch encoded as the 1.0 WriteRequest it queues.
void BM_QueueRecordV1(benchmark::State& state) {
  const RemoteWriteBatch batch = MakeBatch();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string record = EncodeWriteRequestV1(batch);
    bytes = record.size();
    benchmark::DoNotOptimize(record);
  }
  Report(state, batch.series.size(), bytes);
  state.counters["raw_bytes_per_sample"] =
      static_cast<double>(bytes) / static_cast<double>(batch.series.size());
}
BENCHMARK(BM_QueueRecordV1)->Unit(benchmark::kMicrosecond);

// A 1.0 request end to end: encode + snappy (the sender's part is the compression).
void BM_EncodeV1(benchmark::State& state) {
  const RemoteWriteBatch batch = MakeBatch();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = SnappyCompress(EncodeWriteRequestV1(batch));
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, batch.series.size(), bytes);
}
BENCHMARK(BM_EncodeV1)->Unit(benchmark::kMicrosecond);

// A 2.0 request from the batch: symbols table, refs, metadata per series, snappy.
void BM_EncodeV2(benchmark::State& state) {
  const RemoteWriteBatch batch = MakeBatch();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = SnappyCompress(EncodeRequestV2(batch));
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, batch.series.size(), bytes);
}
BENCHMARK(BM_EncodeV2)->Unit(benchmark::kMicrosecond);

// What a 2.0 sender does per request: the queued 1.0 record decoded, then encoded as 2.0 and compressed.
void BM_QueuedRecordToV2(benchmark::State& state) {
  const RemoteWriteBatch batch = MakeBatch();
  const std::string record = EncodeWriteRequestV1(batch);
  size_t bytes = 0;
  for (auto _ : state) {
    RemoteWriteBatch decoded;
    DecodeWriteRequestV1(record, &decoded);
    std::string body = SnappyCompress(EncodeRequestV2(decoded));
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, batch.series.size(), bytes);
}
BENCHMARK(BM_QueuedRecordToV2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
