// The event path in one process, per core: lines through EventPipeline::ProcessLine (both classifier
// families, attribution, counters) into a real DurableQueue on disk, then the queue drained and encoded
// as Loki protobuf+snappy request bodies (what the sender POSTs). Reports lines/s and bytes/s of input.
// The HTTP round trip is left out here; bench/events_path.sh measures the whole agent with a receiver.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "src/events/event_pipeline.h"
#include "src/node/gpu_directory.h"
#include "src/node/job_table.h"
#include "src/node/xid_ledger.h"
#include "src/sinks/loki/loki_events.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {
namespace {

std::vector<std::string> Mix(int events_per_thousand) {
  const std::vector<std::string> ordinary = {
      "Epoch 3/100: 42%|####      | 420/1000 [01:23<01:55, 5.02it/s, loss=2.31, v_num=17]",
      "step 1200 | loss 1.9837 | lr 3.0e-4 | grad_norm 0.87 | tokens/s 412345 | mfu 0.47",
      "Saving checkpoint to /checkpoints/run-42/step_1200/model_states.pt",
      "[2025-03-14 09:12:44,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=1200, skipped=0, lr=[0.0003]",
  };
  // Shipped events, and an NCCL INFO line (an event counted at debug severity, not shipped).
  const std::vector<std::string> events = {
      "gpu-node07:48211:48211 [3] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
      "gpu-node07:48211:48390 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<41234> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 "
      "remoteGids::ffff:10.0.0.2 hca mlx5_0",
      "[ 1234.567890] NVRM: Xid (PCI:0000:18:00): 13, pid=41022, name=python3, Graphics SM Warp Exception",
      "slurmstepd: error: *** JOB 4242 ON gpu-node07 CANCELLED AT 2026-11-29T10:00:00 DUE TO TIME LIMIT ***",
  };
  std::vector<std::string> lines;
  for (int i = 0; i < 1000; ++i) {
    lines.push_back(i < events_per_thousand ? events[static_cast<size_t>(i) % events.size()]
                                            : ordinary[static_cast<size_t>(i) % ordinary.size()]);
  }
  return lines;
}

void BM_ClassifyQueueEncode(benchmark::State& state) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuscope-bench-events-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  DurableQueueOptions q;
  q.directory = dir.string();
  q.sync = QueueSyncPolicy::kNone;
  q.consumers = {"loki"};
  std::unique_ptr<DurableQueue> queue;
  if (!DurableQueue::Open(q, &queue).ok()) {
    state.SkipWithError("cannot open the queue");
    return;
  }
  XidLedger ledger;
  JobTable jobs;
  GpuDirectory gpus;
  auto inventory = std::make_shared<GpuInventory>();
  inventory->devices.resize(1);
  inventory->devices[0].opened = true;
  inventory->devices[0].pci_bus_id = "00000000:18:00.0";
  inventory->devices[0].uuid = "GPU-zero";
  gpus.Publish(std::move(inventory));
  EventPipelineOptions o;
  o.host = "gpu-node07";
  o.ship = [&](const EventRecord& r) { return queue->Append(EncodeEventRecord(r)); };
  EventPipeline pipeline(std::move(o), &ledger, &jobs, &gpus);
  const std::vector<std::string> lines = Mix(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (const std::string& l : lines) bytes += l.size() + 1;
  size_t body_bytes = 0;
  EventLine in;
  in.origin = "/jobs/slurm-4242.out";
  in.origin_is_path = true;
  in.time_unix_ns = 1;
  for (auto _ : state) {
    for (const std::string& line : lines) {
      in.text = line;
      pipeline.ProcessLine("file", in);
    }
    QueueBatch batch;
    while (queue->Peek("loki", 1000, 1 << 20, &batch).ok() && batch.id != 0) {
      body_bytes += LokiBodyForRecords(batch.records, LokiFormat::kProtobuf, nullptr).size();
      queue->Ack("loki", batch.id);
    }
  }
  benchmark::DoNotOptimize(body_bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(lines.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["events_per_1000_lines"] = static_cast<double>(state.range(0));
  queue.reset();
  std::filesystem::remove_all(dir);
}
// 0, 10 and 100 events per 1000 lines: quiet training output, a noisy job, an incident.
BENCHMARK(BM_ClassifyQueueEncode)->Arg(0)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
