// Throughput of the kernel-family event dispatcher (ClassifyKernelLine) in bytes per second of log, on a
// realistic mix where most lines match nothing, and on the matching lines alone. Figures are reported,
// not asserted.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "src/events/classifiers/kernel_classifier.h"

namespace {

// About 1 line in 50 is an event, the rest ordinary kernel, syslog and training-job output.
std::vector<std::string> Mix() {
  const std::vector<std::string> ordinary = {
      "[ 1234.567890] pci 0000:18:00.0: [10de:2330] type 00 class 0x030200",
      "[ 1234.567891] IPv6: ADDRCONF(NETDEV_CHANGE): ens1f0np0: link becomes ready",
      "Jan  2 03:04:05 gpu-node-17 systemd[1]: Started Session 42 of User root.",
      "Jan  2 03:04:05 gpu-node-17 sshd[2345]: Accepted publickey for alice from 10.0.0.5 port 51234 ssh2",
      "gpu-node-17:1234:1300 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
      "gpu-node-17:1234:1300 [3] NCCL INFO comm 0x55d5c8a0 rank 3 nranks 64 cudaDev 3 busId 3b000 - Init "
      "COMPLETE",
      "Epoch 3: 45%|####5     | 450/1000 [01:23<01:42,  5.37it/s, loss=2.31, lr=0.0003, grad_norm=0.812]",
      "{\"step\": 12000, \"loss\": 2.3104, \"tokens_per_sec\": 412345.6, \"mfu\": 0.512, \"time\": 1.234}",
      "[ 1300.000001] audit: type=1400 audit(1700000000.123:456): apparmor=\"STATUS\" "
      "operation=\"profile_load\"",
      "2026-01-02 03:04:05,123 INFO torch.distributed.elastic.agent.server.api: [default] Starting worker "
      "group",
  };
  const std::vector<std::string> events = {
      "[ 4711.1] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
      "[ 8123.4] Out of memory: Killed process 1234 (python3) total-vm:10485760kB, anon-rss:8388608kB, "
      "file-rss:1024kB, shmem-rss:0kB, UID:1001 pgtables:20480kB oom_score_adj:0",
      "slurmstepd: error: *** JOB 42 ON node1 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***",
  };
  std::vector<std::string> lines;
  for (int i = 0; i < 1000; ++i) {
    if (i % 50 == 49) {
      lines.push_back(events[(i / 50) % events.size()]);
    } else {
      lines.push_back(ordinary[(i * 7) % ordinary.size()]);
    }
  }
  return lines;
}

void Run(benchmark::State& state, const std::vector<std::string>& lines) {
  size_t bytes = 0;
  for (const std::string& line : lines) bytes += line.size() + 1;
  size_t matched = 0;
  for (auto _ : state) {
    for (const std::string& line : lines) {
      auto event = gpuscope::ClassifyKernelLine(line);
      matched += event.has_value();
      benchmark::DoNotOptimize(event);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["lines_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * lines.size()), benchmark::Counter::kIsRate);
  benchmark::DoNotOptimize(matched);
}

void BM_KernelDispatcherRealisticMix(benchmark::State& state) { Run(state, Mix()); }
BENCHMARK(BM_KernelDispatcherRealisticMix);

void BM_KernelDispatcherNonMatchingOnly(benchmark::State& state) {
  std::vector<std::string> lines;
  for (const std::string& line : Mix()) {
    if (!gpuscope::ClassifyKernelLine(line)) lines.push_back(line);
  }
  Run(state, lines);
}
BENCHMARK(BM_KernelDispatcherNonMatchingOnly);

void BM_KernelDispatcherMatchingOnly(benchmark::State& state) {
  std::vector<std::string> lines;
  for (const std::string& line : Mix()) {
    if (gpuscope::ClassifyKernelLine(line)) lines.push_back(line);
  }
  Run(state, lines);
}
BENCHMARK(BM_KernelDispatcherMatchingOnly);

}  // namespace

BENCHMARK_MAIN();
