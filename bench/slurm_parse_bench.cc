// Slurm scheduler collector: parse time of a synthetic squeue output of 100k jobs (the figure),
// and one whole Collect() on it (fork + read + parse + aggregate) through a fake squeue that cats it.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/collectors/slurm/slurm_scheduler_collector.h"
#include "src/parsers/slurm_scheduler.h"

namespace {

// 100k jobs in the collector's squeue format: 16 partitions, 200 accounts, 2000 users, a realistic mix of
// states and pending reasons, array tasks, gpu requests.
std::string SyntheticSqueue(int jobs) {
  static const char* kStates[] = {"RUNNING", "RUNNING", "PENDING", "PENDING", "PENDING", "COMPLETING"};
  static const char* kReasons[] = {"Priority",          "Resources",
                                   "JobHeldUser",       "Dependency",
                                   "QOSMaxGRESPerUser", "ReqNodeNotAvail, Reserved for maintenance"};
  std::string out;
  out.reserve(static_cast<size_t>(jobs) * 90);
  for (int i = 0; i < jobs; ++i) {
    const char* state = kStates[i % 6];
    bool pending = state[0] == 'P';
    out += std::to_string(1000000 + i / 4);
    if (i % 4) out += "_" + std::to_string(i % 4);
    out += "|";
    out += state;
    out += "|part" + std::to_string(i % 16) + "|acct" + std::to_string(i % 200) + "|user" +
           std::to_string(i % 2000) + "|" + std::to_string(1 + i % 4) + "|";
    out += i % 3 ? "gres:gpu:h100:" + std::to_string(1 + i % 8) : std::string("N/A");
    out += "|";
    out += pending ? kReasons[i % 6] : "None";
    out += "\n";
  }
  return out;
}

void BM_ParseSqueue100k(benchmark::State& state) {
  const std::string text = SyntheticSqueue(100000);
  for (auto _ : state) {
    gpuscope::SqueueJobs jobs = gpuscope::ParseSqueue(text);
    benchmark::DoNotOptimize(jobs.jobs.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["jobs"] = 100000;
}
BENCHMARK(BM_ParseSqueue100k)->Unit(benchmark::kMillisecond);

void BM_CollectSqueue100k(benchmark::State& state) {
  char pattern[] = "/tmp/gpuscope-slurm-bench-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  std::ofstream(dir + "/squeue.txt") << SyntheticSqueue(100000);
  std::ofstream(dir + "/squeue") << "#!/bin/sh\nexec cat '" << dir << "/squeue.txt'\n";
  std::ofstream(dir + "/empty") << "#!/bin/sh\nexit 0\n";
  chmod((dir + "/squeue").c_str(), 0755);
  chmod((dir + "/empty").c_str(), 0755);
  gpuscope::SlurmSchedulerOptions options;
  options.squeue_path = dir + "/squeue";
  options.sinfo_path = options.sdiag_path = options.sshare_path = dir + "/empty";
  gpuscope::SlurmSchedulerCollector collector(options);
  for (auto _ : state) {
    std::vector<gpuscope::MetricFamily> out;
    collector.Collect(out);
    benchmark::DoNotOptimize(out.data());
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}
BENCHMARK(BM_CollectSqueue100k)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
