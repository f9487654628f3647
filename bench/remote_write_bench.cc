// Micro-benchmark of the remote_write encode path, per sample, for two snapshots:
//   2k:     2,000 series (250 families x 8 GPUs, dcgm-exporter's identity labels shared per GPU as the
//           collectors share them, one external label): the "2,000 series every 15 s";
//   48gpu:  a 48-GPU node: the real GPU collector's families on the simulator (h100-training with 48
//           GPUs), three successive collection cycles in turn, so the per-series cache meets each cycle's
//           label sets as the agent does.
// For each, the parts are timed apart: the producer's share (snapshot -> queued record, steady state),
// the sender's (records -> uncompressed 1.0 or 2.0 request), snappy, and all three together; plus the
// first interval (empty cache) and the path that stays for plain 1.0 records queued by an older agent
// (decoded and encoded again). Counters: `per_sample` (CPU seconds per sample), raw and wire bytes per
// sample. Reported, never asserted (see bench/README.md); bench/remote_write_vs_prometheus.sh runs it
// next to Prometheus's own encoder benchmarks.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "src/collectors/gpu/gpu_collector.h"
#include "src/core/snapshot.h"
#include "src/sinks/remote_write/remote_write_batcher.h"
#include "src/sinks/remote_write/remote_write_encode.h"
#include "src/sinks/remote_write/remote_write_record.h"

namespace gpuscope {
namespace {

const std::vector<std::pair<std::string, std::string>> kExternalLabels = {{"cluster", "c1"}};

// Snapshots fed to the batcher in turn (one per interval).
struct Shape {
  std::vector<std::shared_ptr<const Snapshot>> cycles;
  size_t series = 0;
};

Shape TwoThousandSeries() {
  std::vector<Labels> gpus;
  for (int g = 0; g < 8; ++g) {
    gpus.push_back(Labels{{"gpu", std::to_string(g)},
                          {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + g)},
                          {"pci_bus_id", "00000000:1" + std::to_string(g) + ":00.0"},
                          {"device", "nvidia" + std::to_string(g)},
                          {"modelName", "NVIDIA H100 80GB HBM3"},
                          {"Hostname", "gpu-node-0042"},
                          {"DCGM_FI_DRIVER_VERSION", "550.90.07"}});
  }
  std::vector<MetricFamily> families;
  for (int f = 0; f < 250; ++f) {
    MetricFamily family{"DCGM_FI_BENCH_FIELD_" + std::to_string(f),
                        "A benchmark field (in W).",
                        f % 5 == 0 ? MetricType::kCounter : MetricType::kGauge,
                        "",
                        {}};
    for (int g = 0; g < 8; ++g) family.samples.push_back({gpus[g], 1234.5 * f + g});
    families.push_back(std::move(family));
  }
  Shape shape;
  shape.cycles.push_back(std::make_shared<const Snapshot>(Snapshot::Of(std::move(families), 1)));
  shape.series = 2000;
  return shape;
}

Shape FortyEightGpus() {
  std::ifstream in(GPUSCOPE_SCENARIO_DIR "/h100-training.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string scenario = text.str();
  const std::string count = "\n  count: 8\n";
  scenario.replace(scenario.find(count), count.size(), "\n  count: 48\n");
  const std::string path = "/tmp/gpuscope-bench-remote-write-48.yaml";
  std::ofstream(path) << scenario;
  setenv("GPUSCOPE_SIM_SCENARIO", path.c_str(), 1);
  setenv("GPUSCOPE_SIM_KERNEL_LOG", "", 1);
  GpuCollectorOptions options;
  options.nvml_library = GPUSCOPE_SIM_LIBRARY;
  options.hostname = "bench-node";
  GpuCollector collector(options);
  SnapshotStore store;
  Shape shape;
  for (int cycle = 0; cycle < 4; ++cycle) {
    std::vector<MetricFamily> families;
    collector.Collect(families);
    store.Update("gpu", std::move(families));
    if (cycle == 0) continue;  // the first cycle initialises NVML and the GPM baseline
    shape.cycles.push_back(store.Current());
  }
  for (const MetricFamily* family : shape.cycles.back()->families()) shape.series += family->samples.size();
  return shape;
}

const Shape& ShapeOf(int64_t arg) {
  static const Shape two_thousand = TwoThousandSeries();
  if (arg == 0) return two_thousand;
  static const Shape forty_eight = FortyEightGpus();
  return forty_eight;
}

void Label(benchmark::State& state) { state.SetLabel(state.range(0) == 0 ? "2k" : "48gpu"); }

void Report(benchmark::State& state, size_t samples, size_t raw_bytes, size_t wire_bytes) {
  Label(state);
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["per_sample"] =
      benchmark::Counter(static_cast<double>(samples),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  if (raw_bytes > 0) state.counters["raw_bytes_per_sample"] = static_cast<double>(raw_bytes) / samples;
  if (wire_bytes > 0) state.counters["wire_bytes_per_sample"] = static_cast<double>(wire_bytes) / samples;
}

// A batcher in the steady state (it has seen every cycle) and the record of the last cycle.
struct Warm {
  explicit Warm(const Shape& shape) : batcher(kExternalLabels) {
    for (int round = 0; round < 2; ++round) {
      for (const auto& cycle : shape.cycles) {
        batcher.Build(*cycle, 1796150000000 + round, &record);
        batcher.Committed(true);
      }
    }
  }
  RemoteWriteBatcher batcher;
  std::string record;
};

// Producer: snapshot -> queued record (the 2.0 record with the symbols table), steady state.
void BM_Encode_Record(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  size_t i = 0;
  int64_t timestamp = 1796150015000;
  for (auto _ : state) {
    warm.batcher.Build(*shape.cycles[i++ % shape.cycles.size()], timestamp += 15000, &warm.record);
    warm.batcher.Committed(true);
  }
  Report(state, shape.series, warm.record.size(), 0);
}

// The first interval: every series and symbol worked out (what a restart or a new job's series cost).
void BM_Encode_RecordColdCache(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  std::string record;
  for (auto _ : state) {
    RemoteWriteBatcher batcher(kExternalLabels);
    batcher.Build(*shape.cycles[0], 1796150000000, &record);
    batcher.Committed(true);
  }
  Report(state, shape.series, record.size(), 0);
}

// Sender: one queued record -> the uncompressed request (2.0: the record's own bytes, no copy).
void BM_Encode_V2Body(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  const std::vector<std::string> records = {warm.record};
  std::string scratch;
  size_t bytes = 0;
  for (auto _ : state) {
    size_t unreadable = 0;
    std::string_view body = RemoteWriteRecordsToV2(records, &scratch, &unreadable);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, bytes, 0);
}

void BM_Encode_V1Body(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  const std::vector<std::string> records = {warm.record};
  RemoteWriteV1Writer writer;
  size_t bytes = 0;
  for (auto _ : state) {
    size_t unreadable = 0;
    std::string body = writer.Request(records, &unreadable);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, bytes, 0);
}

// Compression alone: snappy over the uncompressed request.
void BM_Compress_V2(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  size_t unreadable = 0;
  std::string scratch;
  const std::string raw(RemoteWriteRecordsToV2({warm.record}, &scratch, &unreadable));
  size_t wire = 0;
  for (auto _ : state) {
    std::string body = SnappyCompress(raw);
    wire = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, raw.size(), wire);
}

void BM_Compress_V1(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  size_t unreadable = 0;
  const std::string raw = RemoteWriteV1Writer().Request({warm.record}, &unreadable);
  size_t wire = 0;
  for (auto _ : state) {
    std::string body = SnappyCompress(raw);
    wire = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, raw.size(), wire);
}

// Everything per interval and destination: snapshot -> record -> request -> snappy.
void BM_Total_V2(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  std::vector<std::string> records(1);
  std::string scratch;
  size_t i = 0;
  int64_t timestamp = 1796150015000;
  size_t raw = 0;
  size_t wire = 0;
  for (auto _ : state) {
    warm.batcher.Build(*shape.cycles[i++ % shape.cycles.size()], timestamp += 15000, &records[0]);
    warm.batcher.Committed(true);
    size_t unreadable = 0;
    const std::string_view request = RemoteWriteRecordsToV2(records, &scratch, &unreadable);
    std::string body = SnappyCompress(request);
    raw = request.size();
    wire = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, raw, wire);
}

void BM_Total_V1(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  std::vector<std::string> records(1);
  RemoteWriteV1Writer writer;
  size_t i = 0;
  int64_t timestamp = 1796150015000;
  size_t raw = 0;
  size_t wire = 0;
  for (auto _ : state) {
    warm.batcher.Build(*shape.cycles[i++ % shape.cycles.size()], timestamp += 15000, &records[0]);
    warm.batcher.Committed(true);
    size_t unreadable = 0;
    const std::string request = writer.Request(records, &unreadable);
    std::string body = SnappyCompress(request);
    raw = request.size();
    wire = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, raw, wire);
}

// A plain 1.0 record queued by an older agent, sent as 2.0 after the upgrade: decoded into owned
// strings and encoded again (what every 2.0 request cost before the per-series cache), snappy included.
void BM_Total_V2FromPreUpgradeRecord(benchmark::State& state) {
  const Shape& shape = ShapeOf(state.range(0));
  Warm warm(shape);
  size_t unreadable = 0;
  const std::vector<std::string> records = {RemoteWriteV1Writer().Request({warm.record}, &unreadable)};
  std::string scratch;
  size_t wire = 0;
  for (auto _ : state) {
    std::string body = SnappyCompress(RemoteWriteRecordsToV2(records, &scratch, &unreadable));
    wire = body.size();
    benchmark::DoNotOptimize(body);
  }
  Report(state, shape.series, 0, wire);
}

#define RW_BENCH(name) BENCHMARK(name)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)
RW_BENCH(BM_Encode_Record);
RW_BENCH(BM_Encode_RecordColdCache);
RW_BENCH(BM_Encode_V2Body);
RW_BENCH(BM_Encode_V1Body);
RW_BENCH(BM_Compress_V2);
RW_BENCH(BM_Compress_V1);
RW_BENCH(BM_Total_V2);
RW_BENCH(BM_Total_V1);
RW_BENCH(BM_Total_V2FromPreUpgradeRecord);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
