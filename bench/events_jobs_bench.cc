// Throughput of the jobs-family dispatcher (ClassifyJobLine) on a realistic training-log mix: mostly
// progress/metrics lines that match nothing, a few NCCL INFO lines, rare errors. Reports bytes/s.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "src/events/classifiers/job_classifier.h"

namespace {

std::vector<std::string> Mix(int matching_per_thousand) {
  const std::vector<std::string> ordinary = {
      "Epoch 3/100: 42%|####      | 420/1000 [01:23<01:55, 5.02it/s, loss=2.31, v_num=17]",
      "[2025-03-14 09:12:44,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=1200, skipped=0, "
      "lr=[0.0003], mom=[(0.9, 0.95)]",
      "step 1200 | loss 1.9837 | lr 3.0e-4 | grad_norm 0.87 | tokens/s 412345 | mfu 0.47",
      "Saving checkpoint to /checkpoints/run-42/step_1200/model_states.pt",
      "wandb: Syncing run fearless-sun-42 to https://wandb.example/team/project/runs/abc123",
      "Using CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 on host gpu-node07",
      "  warnings.warn(\"torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly\")",
  };
  const std::vector<std::string> matching = {
      "gpu-node07:48211:48390 [3] NCCL INFO comm 0x55d1c9a0e2b0 rank 3 nranks 8 cudaDev 3 busId 45000 - "
      "Init COMPLETE",
      "gpu-node07:48211:48211 [3] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
      "[rank3]:[E1129 10:00:00.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, "
      "Timeout(ms)=600000) ran for 600046 milliseconds before timing out.",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity "
      "of 79.19 GiB of which 1.02 GiB is free.",
  };
  std::vector<std::string> lines;
  for (int i = 0; i < 1000; ++i) {
    if (i % 1000 < matching_per_thousand) {
      lines.push_back(matching[static_cast<std::size_t>(i) % matching.size()]);
    } else {
      lines.push_back(ordinary[static_cast<std::size_t>(i) % ordinary.size()]);
    }
  }
  return lines;
}

void Run(benchmark::State& state, const std::vector<std::string>& lines) {
  std::size_t bytes = 0;
  for (const auto& line : lines) bytes += line.size() + 1;
  for (auto _ : state) {
    for (const auto& line : lines) benchmark::DoNotOptimize(gpuscope::ClassifyJobLine(line));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_JobsDispatcherNoMatch(benchmark::State& state) { Run(state, Mix(0)); }
void BM_JobsDispatcherRealisticMix(benchmark::State& state) { Run(state, Mix(10)); }     // 1% ours
void BM_JobsDispatcherNcclDebugHeavy(benchmark::State& state) { Run(state, Mix(300)); }  // NCCL_DEBUG=INFO

BENCHMARK(BM_JobsDispatcherNoMatch);
BENCHMARK(BM_JobsDispatcherRealisticMix);
BENCHMARK(BM_JobsDispatcherNcclDebugHeavy);

}  // namespace

BENCHMARK_MAIN();
