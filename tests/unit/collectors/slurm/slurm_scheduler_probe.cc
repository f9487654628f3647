// slurm_scheduler_probe: builds a SlurmSchedulerCollector from argv, runs Collect() one or more times and
// prints each cycle's exposition (text 0.0.4) on stdout, so tests can drive the collector against a real
// Slurm without the agent. After each cycle one line goes to stderr:
//   cycle=N status=<Status::ToString()> elapsed_ms=<wall time of Collect()>
// Usage: slurm_scheduler_probe [--squeue=P] [--sinfo=P] [--sdiag=P] [--sshare=P] [--timeout-ms=N]
//          [--max-staleness-ms=N] [--no-user] [--no-sdiag] [--no-sshare] [--cycles=N] [--interval-ms=N]
// Cycles after the first are preceded by a comment line "# cycle N" on stdout.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>

#include "src/collectors/slurm/slurm_scheduler_collector.h"
#include "src/core/snapshot.h"
#include "src/sinks/prometheus/exposition.h"

namespace {

bool Flag(std::string_view arg, std::string_view name, std::string* value) {
  if (!arg.starts_with(name) || arg.size() <= name.size() || arg[name.size()] != '=') return false;
  *value = std::string(arg.substr(name.size() + 1));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuscope;
  SlurmSchedulerOptions options;
  int cycles = 1;
  std::chrono::milliseconds interval{1000};
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string v;
    if (Flag(arg, "--squeue", &v)) {
      options.squeue_path = v;
    } else if (Flag(arg, "--sinfo", &v)) {
      options.sinfo_path = v;
    } else if (Flag(arg, "--sdiag", &v)) {
      options.sdiag_path = v;
    } else if (Flag(arg, "--sshare", &v)) {
      options.sshare_path = v;
    } else if (Flag(arg, "--timeout-ms", &v)) {
      options.timeout = std::chrono::milliseconds(std::atoll(v.c_str()));
    } else if (Flag(arg, "--max-staleness-ms", &v)) {
      options.max_staleness = std::chrono::milliseconds(std::atoll(v.c_str()));
    } else if (Flag(arg, "--cycles", &v)) {
      cycles = std::atoi(v.c_str());
    } else if (Flag(arg, "--interval-ms", &v)) {
      interval = std::chrono::milliseconds(std::atoll(v.c_str()));
    } else if (arg == "--no-user") {
      options.include_user = false;
    } else if (arg == "--no-sdiag") {
      options.collect_sdiag = false;
    } else if (arg == "--no-sshare") {
      options.collect_sshare = false;
    } else {
      std::cerr << "unknown argument: " << arg << "\n";
      return 2;
    }
  }
  SlurmSchedulerCollector collector(options);
  for (int cycle = 1; cycle <= cycles; ++cycle) {
    if (cycle > 1) {
      std::this_thread::sleep_for(interval);
      std::cout << "# cycle " << cycle << "\n";
    }
    std::vector<MetricFamily> families;
    auto began = std::chrono::steady_clock::now();
    Status status = collector.Collect(families);
    auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    std::cout << RenderSnapshot(Snapshot::Of(std::move(families)), ExpositionFormat::kText004, nullptr)
              << std::flush;
    std::cerr << "cycle=" << cycle << " status=" << status.ToString() << " elapsed_ms=" << elapsed.count()
              << std::endl;
  }
  return 0;
}
