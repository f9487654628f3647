// The NCCL profiler plugin's cost per collective on NCCL's threads, loaded as NCCL loads it: the Coll
// event's start and stop, two kernel-channel children started and stopped, and for a rank with network
// peers (proxy_ops:2) two proxy-op children started and stopped (the entry and completion records pushed to
// the ring), in NCCL's order (Collective below). The sender thread runs beside it, sending to a socket nobody
// bound (the cost NCCL pays does not depend on the agent), or to a bound one that is drained.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "plugins/nccl_profiler/nccl_profiler_abi.h"

namespace {

// One collective in the order NCCL produces it: the Coll event started and stopped (enqueued) by the
// host thread; then its proxy thread starts the kernel channels (all of them before any stops, as its
// profiler progress function does) and, on a rank with network peers, the proxy ops, and stops them as the
// work finishes.
void Collective(const ncclProfiler_v5_t* table, void* context, uint64_t seq, int proxy_ops) {
  ncclProfilerEventDescr_v5_t coll{};
  coll.type = ncclProfileColl;
  coll.coll.seqNumber = seq;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1 << 20;
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.nChannels = 2;
  coll.coll.algo = "Ring";
  coll.coll.proto = "Simple";
  void* handle = nullptr;
  table->startEvent(context, &handle, &coll);
  table->stopEvent(handle);
  static const pid_t pid = getpid();  // NCCL fills it from what it stored, no syscall per event
  void* children[2 + 4] = {};
  int started = 0;
  for (int c = 0; c < 2; ++c) {
    ncclProfilerEventDescr_v5_t child{};
    child.type = ncclProfileKernelCh;
    child.parentObj = handle;
    child.kernelCh.channelId = static_cast<uint8_t>(c);
    table->startEvent(context, &children[started++], &child);
  }
  for (int op = 0; op < proxy_ops && op < 4; ++op) {
    ncclProfilerEventDescr_v5_t child{};
    child.type = ncclProfileProxyOp;
    child.parentObj = handle;
    child.proxyOp.pid = pid;
    child.proxyOp.isSend = op % 2;
    table->startEvent(context, &children[started++], &child);
  }
  for (int i = 0; i < started; ++i) table->stopEvent(children[i]);
}

void BM_CollectiveOnNcclThreads(benchmark::State& state) {
  const bool agent = state.range(0) == 1;
  const int proxy_ops = static_cast<int>(state.range(1));
  const std::string path = "/tmp/gpuscope-bench-nccl-" + std::to_string(getpid()) + ".sock";
  setenv("GPUSCOPE_TRAINING_SOCKET", path.c_str(), 1);
  int fd = -1;
  std::atomic<bool> stop{false};
  std::thread drain;
  if (agent) {
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    timeval timeout{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    drain = std::thread([&] {
      char buffer[9000];
      while (!stop.load()) recv(fd, buffer, sizeof(buffer), 0);
    });
  }
  void* library = dlopen(GPUSCOPE_NCCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  const auto* table = static_cast<const ncclProfiler_v5_t*>(dlsym(library, "ncclProfiler_v5"));
  int mask = 0;
  void* context = nullptr;
  table->init(&context, 1, &mask, "bench", 1, 8, 0, nullptr);
  uint64_t seq = 0;
  for (auto _ : state) Collective(table, context, seq++, proxy_ops);
  state.SetItemsProcessed(static_cast<int64_t>(seq));
  table->finalize(context);
  dlclose(library);
  stop = true;
  if (drain.joinable()) drain.join();
  if (fd >= 0) {
    close(fd);
    unlink(path.c_str());
  }
}
BENCHMARK(BM_CollectiveOnNcclThreads)->ArgsProduct({{0, 1}, {0, 2}})->ArgNames({"agent", "proxy_ops"});

}  // namespace

BENCHMARK_MAIN();
