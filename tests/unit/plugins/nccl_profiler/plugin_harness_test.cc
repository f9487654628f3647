// The NCCL profiler plugin, loaded as NCCL loads it (dlopen of libnccl-profiler-gpuscope.so, dlsym of
// ncclProfiler_v4/_v5/_v6), driven with the event sequences NCCL produces for each ABI version, against a
// datagram socket bound as the agent binds it: what arrives decodes with the agent's own decoder
// (src/parsers/training_wire.h). Covers completion from the kernel-channel children and from the proxy-op
// children, alone and mixed, in every version (the Coll event's stop only means enqueued), children that
// stop before the Coll event or out of order, stops that never come, proxy ops of another process (PXN),
// events the plugin does not track, an agent that is not listening, and a ring that overflows without
// blocking.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "plugins/nccl_profiler/nccl_profiler_abi.h"
#include "src/parsers/training_wire.h"
#include "tests/unit/sinks/queue/queue_test_util.h"

namespace gpuscope {
namespace {

// The layouts NCCL's headers give (checked by hand against them): a change to our declarations that
// moves a field NCCL writes fails here, not in a training job.
static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.count) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.datatype) == 72);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 96);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, kernelCh.pTimer) == 32);
static_assert(offsetof(ncclProfiler_v5_t, finalize) == 40);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.pid) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, proxyOp.isSend) == 44);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.pid) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, proxyOp.pid) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, proxyOp.isSend) == 44);

class Receiver {
 public:
  explicit Receiver(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    timeval timeout{0, 200000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~Receiver() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  // Every datagram until none came for 200 ms.
  std::vector<TrainingDatagram> Drain() {
    std::vector<TrainingDatagram> out;
    char buffer[kTrainingMaxDatagram];
    while (true) {
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      TrainingDatagram datagram;
      EXPECT_EQ(DecodeTrainingDatagram(std::string_view(buffer, static_cast<size_t>(n)), &datagram),
                TrainingWireError::kNone);
      out.push_back(std::move(datagram));
    }
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

std::vector<TrainingCollective> Collectives(const std::vector<TrainingDatagram>& datagrams) {
  std::vector<TrainingCollective> out;
  for (const TrainingDatagram& d : datagrams)
    out.insert(out.end(), d.collectives.begin(), d.collectives.end());
  return out;
}

// One ABI version's table, the way NCCL finds it.
template <typename Table>
const Table* LoadTable(void* library, const char* symbol) {
  return static_cast<const Table*>(dlsym(library, symbol));
}

class PluginHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_path_ = dir_.path() + "/training.sock";
    setenv("GPUSCOPE_TRAINING_SOCKET", socket_path_.c_str(), 1);
    setenv("RANK", "5", 1);
    library_ = dlopen(GPUSCOPE_NCCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (library_ != nullptr) dlclose(library_);
    unsetenv("GPUSCOPE_TRAINING_SOCKET");
    unsetenv("RANK");
  }

  // Drives one collective with `channels` kernel channels through a table of any version.
  template <typename Table, typename Descr>
  void Collective(const Table* table, void* context, uint64_t seq, int channels, int stopped_channels,
                  bool children_first, bool stop_coll = true) {
    Descr coll{};
    coll.type = ncclProfileColl;
    coll.coll.seqNumber = seq;
    coll.coll.func = "AllReduce";
    coll.coll.count = 1 << 20;
    coll.coll.datatype = "ncclBfloat16";
    coll.coll.nChannels = static_cast<uint8_t>(channels);
    coll.coll.algo = "Ring";
    coll.coll.proto = "Simple";
    void* coll_handle = nullptr;
    ASSERT_EQ(table->startEvent(context, &coll_handle, &coll), ncclSuccess);
    ASSERT_NE(coll_handle, nullptr);
    if (!children_first && stop_coll) table->stopEvent(coll_handle);
    std::vector<void*> children;
    for (int c = 0; c < channels; ++c) {
      Descr child{};
      child.type = ncclProfileKernelCh;
      child.parentObj = coll_handle;
      child.kernelCh.channelId = static_cast<uint8_t>(c);
      void* handle = nullptr;
      ASSERT_EQ(table->startEvent(context, &handle, &child), ncclSuccess);
      ASSERT_NE(handle, nullptr);
      children.push_back(handle);
    }
    for (int c = 0; c < stopped_channels; ++c) {
      table->recordEventState(children[c], ncclProfilerKernelChStop, nullptr);
      table->stopEvent(children[c]);
    }
    if (children_first && stop_coll) table->stopEvent(coll_handle);
  }

  TempDir dir_;
  std::string socket_path_;
  void* library_ = nullptr;
};

TEST_F(PluginHarness, EveryVersionStreamsEachCollectivesEntryAndItsCompletionFromItsKernelChannels) {
  Receiver receiver(socket_path_);
  ASSERT_TRUE(receiver.bound());
  const auto* v4 = LoadTable<ncclProfiler_v4_t>(library_, "ncclProfiler_v4");
  const auto* v5 = LoadTable<ncclProfiler_v5_t>(library_, "ncclProfiler_v5");
  const auto* v6 = LoadTable<ncclProfiler_v6_t>(library_, "ncclProfiler_v6");
  ASSERT_TRUE(v4 && v5 && v6);
  EXPECT_STREQ(v5->name, "gpuscope");
  int mask = 0;
  void* c4 = nullptr;
  void* c5 = nullptr;
  void* c6 = nullptr;
  ASSERT_EQ(v4->init(&c4, &mask, "dp", 0x44, 1, 4, 1, nullptr), ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp)
      << "the collectives and the children their completion is read from, nothing more";
  ASSERT_EQ(v5->init(&c5, 0x55, &mask, "dp", 1, 4, 1, nullptr), ncclSuccess);
  ASSERT_EQ(v6->init(&c6, 0x66, &mask, "dp", 1, 4, 1, nullptr), ncclSuccess);
  Collective<ncclProfiler_v4_t, ncclProfilerEventDescr_v4_t>(v4, c4, 7, 2, 2, false);
  Collective<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(v5, c5, 8, 2, 2, false);
  Collective<ncclProfiler_v6_t, ncclProfilerEventDescr_v6_t>(v6, c6, 9, 2, 2, false);
  v4->finalize(c4);
  v5->finalize(c5);
  v6->finalize(c6);  // the last communicator: the plugin flushes
  const auto datagrams = receiver.Drain();
  ASSERT_FALSE(datagrams.empty());
  ASSERT_TRUE(datagrams[0].hello.has_value());
  EXPECT_EQ(datagrams[0].hello->rank, 5) << "the global rank from the launcher's environment";
  const auto records = Collectives(datagrams);
  ASSERT_EQ(records.size(), 6u);
  for (uint64_t comm : {0x44u, 0x55u, 0x66u}) {
    std::vector<TrainingCollective> of_comm;
    for (const auto& r : records) {
      if (r.comm == comm) of_comm.push_back(r);
    }
    ASSERT_EQ(of_comm.size(), 2u) << comm;
    EXPECT_EQ(of_comm[0].end_ns, 0u) << "entered";
    EXPECT_GE(of_comm[1].end_ns, of_comm[1].begin_ns) << "completed";
    EXPECT_EQ(of_comm[0].seq, of_comm[1].seq);
    EXPECT_EQ(of_comm[1].op, 4);            // all_reduce
    EXPECT_EQ(of_comm[1].bytes, 2u << 20);  // 1 Mi bfloat16
    EXPECT_EQ(of_comm[1].algo, 2);          // Ring
    EXPECT_EQ(of_comm[1].proto, 3);         // Simple
    EXPECT_EQ(of_comm[1].nranks, 4);
  }
}

TEST_F(PluginHarness, ACollectiveIsCompleteOnlyWhenEveryChannelStoppedAndNCCLStoppedIt) {
  Receiver receiver(socket_path_);
  const auto* v5 = LoadTable<ncclProfiler_v5_t>(library_, "ncclProfiler_v5");
  int mask = 0;
  void* context = nullptr;
  ASSERT_EQ(v5->init(&context, 1, &mask, "dp", 1, 2, 0, nullptr), ncclSuccess);
  Collective<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(v5, context, 1, 4, 3,
                                                             false);                       // one channel runs
  Collective<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(v5, context, 2, 2, 2, true);  // children first
  Collective<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(v5, context, 3, 2, 2, true, /*stop_coll=*/false);
  v5->finalize(context);
  std::vector<std::pair<uint64_t, bool>> seen;
  for (const auto& r : Collectives(receiver.Drain())) seen.emplace_back(r.seq, r.end_ns != 0);
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, bool>>{{1, false}, {2, false}, {2, true}, {3, false}}))
      << "seq 1 waits for its fourth channel, seq 2 completes when NCCL stops it after its channels, seq 3 "
         "was never stopped";
}

TEST_F(PluginHarness, EventsThePluginDoesNotTrackGetNoHandleAndCostNothing) {
  Receiver receiver(socket_path_);
  const auto* v6 = LoadTable<ncclProfiler_v6_t>(library_, "ncclProfiler_v6");
  int mask = 0;
  void* context = nullptr;
  ASSERT_EQ(v6->init(&context, 1, &mask, "dp", 1, 2, 0, nullptr), ncclSuccess);
  for (uint64_t type : {ncclProfileGroup, ncclProfileProxyStep, ncclProfileCeColl, ncclProfileGroupApi}) {
    ncclProfilerEventDescr_v6_t descr{};
    descr.type = type;
    void* handle = reinterpret_cast<void*>(1);
    EXPECT_EQ(v6->startEvent(context, &handle, &descr), ncclSuccess);
    EXPECT_EQ(handle, nullptr);
    EXPECT_EQ(v6->recordEventState(handle, ncclProfilerKernelChStop, nullptr), ncclSuccess);
    EXPECT_EQ(v6->stopEvent(handle), ncclSuccess);
  }
  ncclProfilerEventDescr_v6_t orphan{};  // a kernel channel whose parent the plugin never saw
  orphan.type = ncclProfileKernelCh;
  void* handle = reinterpret_cast<void*>(1);
  EXPECT_EQ(v6->startEvent(context, &handle, &orphan), ncclSuccess);
  EXPECT_EQ(handle, nullptr);
  v6->finalize(context);
  EXPECT_TRUE(Collectives(receiver.Drain()).empty());
}

TEST_F(PluginHarness, AnAgentThatIsNotListeningChangesNothingForNCCL) {
  setenv("GPUSCOPE_TRAINING_SOCKET", (dir_.path() + "/nobody/training.sock").c_str(), 1);
  const auto* v5 = LoadTable<ncclProfiler_v5_t>(library_, "ncclProfiler_v5");
  int mask = 0;
  void* context = nullptr;
  ASSERT_EQ(v5->init(&context, 1, &mask, "dp", 1, 2, 0, nullptr), ncclSuccess);
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    Collective<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(v5, context, seq, 1, 1, false);
  }
  EXPECT_EQ(v5->finalize(context), ncclSuccess);
}

TEST_F(PluginHarness, AFullRingDropsRecordsWithoutBlockingAndEveryDropIsReported) {
  Receiver receiver(socket_path_);
  std::atomic<bool> done{false};
  std::vector<TrainingDatagram> received;
  std::thread reader([&] {
    while (!done.load()) {
      auto more = receiver.Drain();
      received.insert(received.end(), more.begin(), more.end());
    }
    auto rest = receiver.Drain();
    received.insert(received.end(), rest.begin(), rest.end());
  });
  const auto* v5 = LoadTable<ncclProfiler_v5_t>(library_, "ncclProfiler_v5");
  int mask = 0;
  void* context = nullptr;
  ASSERT_EQ(v5->init(&context, 1, &mask, "dp", 1, 2, 0, nullptr), ncclSuccess);
  constexpr uint64_t kCollectives = 100000;  // entries only: faster than the sender drains the ring
  for (uint64_t seq = 0; seq < kCollectives; ++seq) {
    ncclProfilerEventDescr_v5_t coll{};
    coll.type = ncclProfileColl;
    coll.coll.seqNumber = seq;
    coll.coll.func = "AllGather";
    coll.coll.datatype = "ncclFloat32";
    coll.coll.count = 1;
    void* handle = nullptr;
    v5->startEvent(context, &handle, &coll);
  }
  v5->finalize(context);
  done = true;
  reader.join();
  uint64_t arrived = Collectives(received).size();
  uint32_t reported_drops = 0;
  for (const auto& d : received) reported_drops = std::max(reported_drops, d.producer_drops);
  EXPECT_GT(reported_drops, 0u) << "the ring (16384) overflowed";
  EXPECT_GT(arrived, 0u);
  EXPECT_EQ(arrived + reported_drops, kCollectives) << "every record arrived or was counted";
}

// The agent's socket holds net.unix.max_dgram_qlen datagrams (often 10) whatever its buffer size: a burst
// of more while the agent is off the CPU is refused. The sender thread waits and tries again (the ring
// takes NCCL's records meanwhile), so a busy moment loses nothing.
TEST_F(PluginHarness, AnAgentBusyForAMomentLosesNothing) {
  Receiver receiver(socket_path_);
  const auto* v5 = LoadTable<ncclProfiler_v5_t>(library_, "ncclProfiler_v5");
  int mask = 0;
  void* context = nullptr;
  ASSERT_EQ(v5->init(&context, 1, &mask, "dp", 1, 2, 0, nullptr), ncclSuccess);
  constexpr uint64_t kCollectives = 6000;  // entries only: ~45 datagrams, the queue takes a few of them
  for (uint64_t seq = 0; seq < kCollectives; ++seq) {
    ncclProfilerEventDescr_v5_t coll{};
    coll.type = ncclProfileColl;
    coll.coll.seqNumber = seq;
    coll.coll.func = "AllGather";
    coll.coll.datatype = "ncclFloat32";
    coll.coll.count = 1;
    void* handle = nullptr;
    v5->startEvent(context, &handle, &coll);
  }
  // Nobody reads until the sender has found the queue full (its burst is due within 100 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::vector<TrainingDatagram> received;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      auto more = receiver.Drain();
      received.insert(received.end(), more.begin(), more.end());
    }
    auto rest = receiver.Drain();
    received.insert(received.end(), rest.begin(), rest.end());
  });
  v5->finalize(context);
  done = true;
  reader.join();
  uint32_t reported_drops = 0;
  for (const auto& d : received) reported_drops = std::max(reported_drops, d.producer_drops);
  EXPECT_EQ(reported_drops, 0u);
  EXPECT_EQ(Collectives(received).size(), kCollectives);
}

// ---- Completion from proxy-op children, in every ABI version ----

uint64_t RealtimeNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

// How each version's table is found and initialised.
struct V4 {
  using Table = ncclProfiler_v4_t;
  using Descr = ncclProfilerEventDescr_v4_t;
  static constexpr const char* kSymbol = "ncclProfiler_v4";
  static ncclResult_t Init(const Table* table, void** context, uint64_t comm, int* mask) {
    return table->init(context, mask, "dp", comm, 2, 4, 1, nullptr);
  }
};
struct V5 {
  using Table = ncclProfiler_v5_t;
  using Descr = ncclProfilerEventDescr_v5_t;
  static constexpr const char* kSymbol = "ncclProfiler_v5";
  static ncclResult_t Init(const Table* table, void** context, uint64_t comm, int* mask) {
    return table->init(context, comm, mask, "dp", 2, 4, 1, nullptr);
  }
};
struct V6 {
  using Table = ncclProfiler_v6_t;
  using Descr = ncclProfilerEventDescr_v6_t;
  static constexpr const char* kSymbol = "ncclProfiler_v6";
  static ncclResult_t Init(const Table* table, void** context, uint64_t comm, int* mask) {
    return table->init(context, comm, mask, "dp", 2, 4, 1, nullptr);
  }
};

// Plays NCCL for one communicator of version V: the Coll event, its kernel-channel and proxy-op children.
template <typename V>
class Nccl {
 public:
  Nccl(void* library, uint64_t comm) : table_(LoadTable<typename V::Table>(library, V::kSymbol)) {
    EXPECT_NE(table_, nullptr);
    int mask = 0;
    EXPECT_EQ(V::Init(table_, &context_, comm, &mask), ncclSuccess);
    EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp);
  }
  void* Coll(uint64_t seq, int channels) {
    typename V::Descr descr{};
    descr.type = ncclProfileColl;
    descr.coll.seqNumber = seq;
    descr.coll.func = "AllReduce";
    descr.coll.count = 1024;
    descr.coll.datatype = "ncclFloat32";
    descr.coll.nChannels = static_cast<uint8_t>(channels);
    descr.coll.algo = "Ring";
    descr.coll.proto = "Simple";
    return Start(descr);
  }
  void* Kernel(void* coll, int channel) {
    typename V::Descr descr{};
    descr.type = ncclProfileKernelCh;
    descr.parentObj = coll;
    descr.kernelCh.channelId = static_cast<uint8_t>(channel);
    return Start(descr);
  }
  // A proxy op as NCCL's proxy thread starts it (its pid: this process unless PXN ran it elsewhere).
  void* Proxy(void* coll, int channel, bool send, pid_t pid = getpid()) {
    typename V::Descr descr{};
    descr.type = ncclProfileProxyOp;
    descr.parentObj = coll;
    descr.proxyOp.pid = pid;
    descr.proxyOp.channelId = static_cast<uint8_t>(channel);
    descr.proxyOp.peer = 1;
    descr.proxyOp.nSteps = 4;
    descr.proxyOp.chunkSize = 1 << 19;
    descr.proxyOp.isSend = send ? 1 : 0;
    return Start(descr);
  }
  void StopKernel(void* handle) {
    table_->recordEventState(handle, ncclProfilerKernelChStop, nullptr);
    table_->stopEvent(handle);
  }
  void StopProxy(void* handle) {
    table_->recordEventState(handle, ncclProfilerProxyOpInProgress_v4, nullptr);
    table_->stopEvent(handle);
  }
  void Stop(void* handle) { table_->stopEvent(handle); }
  void Finalize() { EXPECT_EQ(table_->finalize(context_), ncclSuccess); }

 private:
  void* Start(typename V::Descr& descr) {
    void* handle = nullptr;
    EXPECT_EQ(table_->startEvent(context_, &handle, &descr), ncclSuccess);
    return handle;
  }
  const typename V::Table* table_;
  void* context_ = nullptr;
};

// seq -> its completion record's end_ns (0: entered only), and the seqs in the order they completed.
struct Outcome {
  std::map<uint64_t, uint64_t> end_ns;
  std::vector<uint64_t> completion_order;
  size_t entries = 0;
};
Outcome Outcomes(const std::vector<TrainingCollective>& records) {
  Outcome out;
  for (const TrainingCollective& r : records) {
    if (r.end_ns == 0) {
      ++out.entries;
      out.end_ns.emplace(r.seq, 0);
    } else {
      EXPECT_EQ(out.end_ns[r.seq], 0u) << "seq " << r.seq << " completed twice";
      EXPECT_GE(r.end_ns, r.begin_ns) << r.seq;
      out.end_ns[r.seq] = r.end_ns;
      out.completion_order.push_back(r.seq);
    }
  }
  return out;
}

template <typename V>
class EveryVersion : public PluginHarness {};
using Versions = ::testing::Types<V4, V5, V6>;
TYPED_TEST_SUITE(EveryVersion, Versions);

TYPED_TEST(EveryVersion, ACollectiveWithOnlyProxyOpsCompletesAtItsLastProxyOpsStop) {
  Receiver receiver(this->socket_path_);
  Nccl<TypeParam> nccl(this->library_, 0x70);
  // seq 1: NCCL stops the Coll event (enqueued) before the proxy thread starts the ops, as it does when
  // the kernel's channels are not profiled: two channels, a send and a receive op each.
  void* first = nccl.Coll(1, 2);
  nccl.Stop(first);
  std::vector<void*> ops;
  for (int channel = 0; channel < 2; ++channel) {
    for (bool send : {true, false}) ops.push_back(nccl.Proxy(first, channel, send));
  }
  for (void* op : ops) ASSERT_NE(op, nullptr);
  for (void* op : ops) nccl.StopProxy(op);
  // seq 2: the proxy ops are done before NCCL stops the Coll event: the end is the last op's stop.
  void* second = nccl.Coll(2, 1);
  void* send = nccl.Proxy(second, 0, true);
  void* recv = nccl.Proxy(second, 0, false);
  nccl.StopProxy(recv);
  nccl.StopProxy(send);
  const uint64_t after_last_op = RealtimeNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the Coll stop comes measurably later
  nccl.Stop(second);
  // seq 3: three of four ops stopped: still running.
  void* third = nccl.Coll(3, 2);
  nccl.Stop(third);
  std::vector<void*> third_ops;
  for (int channel = 0; channel < 2; ++channel) {
    for (bool is_send : {true, false}) third_ops.push_back(nccl.Proxy(third, channel, is_send));
  }
  for (size_t i = 0; i + 1 < third_ops.size(); ++i) nccl.StopProxy(third_ops[i]);
  nccl.Finalize();

  const Outcome outcome = Outcomes(Collectives(receiver.Drain()));
  EXPECT_EQ(outcome.entries, 3u);
  EXPECT_NE(outcome.end_ns.at(1), 0u) << "every proxy op of seq 1 stopped";
  ASSERT_NE(outcome.end_ns.at(2), 0u);
  EXPECT_LE(outcome.end_ns.at(2), after_last_op) << "the end is the last child's stop, not the Coll stop";
  EXPECT_EQ(outcome.end_ns.at(3), 0u) << "a proxy op of seq 3 still runs";
}

TYPED_TEST(EveryVersion, WithKernelChannelsAndProxyOpsBothKindsMustBeDone) {
  Receiver receiver(this->socket_path_);
  Nccl<TypeParam> nccl(this->library_, 0x71);
  // seq 1: the kernel finished both channels, the network send is still in flight.
  void* first = nccl.Coll(1, 2);
  void* k0 = nccl.Kernel(first, 0);
  void* k1 = nccl.Kernel(first, 1);
  void* in_flight = nccl.Proxy(first, 0, true);
  nccl.Stop(first);
  nccl.StopKernel(k0);
  nccl.StopKernel(k1);
  ASSERT_NE(in_flight, nullptr);
  // seq 2: the proxy ops are done, one of the two kernel channels has not even started.
  void* second = nccl.Coll(2, 2);
  nccl.Stop(second);
  void* k = nccl.Kernel(second, 0);
  void* op0 = nccl.Proxy(second, 0, true);
  void* op1 = nccl.Proxy(second, 0, false);
  nccl.StopProxy(op0);
  nccl.StopProxy(op1);
  nccl.StopKernel(k);
  // seq 3: both kinds done, in an interleaved order.
  void* third = nccl.Coll(3, 2);
  void* t_op = nccl.Proxy(third, 1, false);
  void* t_k0 = nccl.Kernel(third, 0);
  void* t_k1 = nccl.Kernel(third, 1);
  nccl.StopKernel(t_k1);
  nccl.Stop(third);
  nccl.StopProxy(t_op);
  nccl.StopKernel(t_k0);
  nccl.Finalize();

  const Outcome outcome = Outcomes(Collectives(receiver.Drain()));
  EXPECT_EQ(outcome.entries, 3u);
  EXPECT_EQ(outcome.end_ns.at(1), 0u) << "the kernel is done but its network send is not";
  EXPECT_EQ(outcome.end_ns.at(2), 0u) << "kernel channels came: nChannels of them must stop";
  EXPECT_NE(outcome.end_ns.at(3), 0u);
}

TYPED_TEST(EveryVersion, OutOfOrderProxyOpsCompleteEachCollectiveOnItsOwn) {
  Receiver receiver(this->socket_path_);
  Nccl<TypeParam> nccl(this->library_, 0x72);
  // Two collectives in flight on one communicator, their proxy ops started interleaved and stopped in
  // the reverse order: the later collective completes first.
  void* a = nccl.Coll(5, 1);
  void* b = nccl.Coll(6, 1);
  void* a_send = nccl.Proxy(a, 0, true);
  void* b_send = nccl.Proxy(b, 0, true);
  void* a_recv = nccl.Proxy(a, 0, false);
  void* b_recv = nccl.Proxy(b, 0, false);
  nccl.StopProxy(b_recv);  // before its Coll event stopped
  nccl.Stop(b);
  nccl.Stop(a);
  nccl.StopProxy(b_send);
  nccl.StopProxy(a_recv);
  const uint64_t before_a_done = RealtimeNs();
  nccl.StopProxy(a_send);
  nccl.Finalize();

  const Outcome outcome = Outcomes(Collectives(receiver.Drain()));
  EXPECT_EQ(outcome.completion_order, (std::vector<uint64_t>{6, 5}));
  EXPECT_LE(outcome.end_ns.at(6), before_a_done);
  EXPECT_GE(outcome.end_ns.at(5), before_a_done) << "5 ended at its own last op's stop";
}

TYPED_TEST(EveryVersion, ProxyOpsThatNeverStopLeaveTheirCollectiveEnteredAndCostNoMemory) {
  Receiver receiver(this->socket_path_);
  std::atomic<bool> done{false};
  std::atomic<size_t> arrived{0};
  std::vector<TrainingDatagram> received;  // the reader's until it is joined
  std::thread reader([&] {
    auto take = [&](std::vector<TrainingDatagram> more) {
      for (auto& d : more) {
        arrived += d.collectives.size();
        received.push_back(std::move(d));
      }
    };
    while (!done.load()) take(receiver.Drain());
    take(receiver.Drain());
  });
  Nccl<TypeParam> nccl(this->library_, 0x73);
  // seq 0's receive op never stops (a peer that never sends); then more collectives than the plugin has
  // slots (4096) run to completion; then the lost op's stop comes after all, for a slot reused since.
  void* hung = nccl.Coll(0, 1);
  nccl.Stop(hung);
  void* hung_send = nccl.Proxy(hung, 0, true);
  void* lost = nccl.Proxy(hung, 0, false);
  nccl.StopProxy(hung_send);
  constexpr uint64_t kCollectives = 4096 + 8;
  for (uint64_t seq = 1; seq <= kCollectives; ++seq) {
    void* coll = nccl.Coll(seq, 1);
    nccl.Stop(coll);
    void* op = nccl.Proxy(coll, 0, true);
    nccl.StopProxy(op);
    if (seq % 512 == 0) {
      // In step with the reader, so that the socket's buffer never fills (that is another test's subject).
      const size_t sent = 1 + 2 * seq;
      for (int wait = 0; wait < 10000 && arrived.load() < sent; ++wait)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  nccl.StopProxy(lost);  // seq 4096's slot now: ignored, it is not that collective's child
  nccl.Finalize();
  done = true;
  reader.join();

  uint32_t drops = 0;
  for (const auto& d : received) drops = std::max(drops, d.producer_drops);
  ASSERT_EQ(drops, 0u);
  const Outcome outcome = Outcomes(Collectives(received));
  EXPECT_EQ(outcome.entries, kCollectives + 1) << "every collective's entry was sent";
  EXPECT_EQ(outcome.end_ns.at(0), 0u) << "seq 0 never completed";
  EXPECT_EQ(outcome.completion_order.size(), kCollectives) << "each of the others completed once";
}

TYPED_TEST(EveryVersion, AProxyOpOfAnotherProcessIsNeverDereferenced) {
  Receiver receiver(this->socket_path_);
  Nccl<TypeParam> nccl(this->library_, 0x74);
  void* coll = nccl.Coll(1, 1);
  nccl.Stop(coll);
  // PXN: another process's proxy ran the op; its parent is an address in that process.
  void* foreign = nccl.Proxy(reinterpret_cast<void*>(0x10), 0, true, getpid() + 1);
  EXPECT_EQ(foreign, nullptr);
  void* also_foreign = nccl.Proxy(coll, 0, true, getpid() + 1);
  EXPECT_EQ(also_foreign, nullptr) << "not counted on the collective either";
  nccl.Stop(foreign);
  nccl.Finalize();
  const Outcome outcome = Outcomes(Collectives(receiver.Drain()));
  EXPECT_EQ(outcome.entries, 1u);
  EXPECT_EQ(outcome.end_ns.at(1), 0u) << "no child of this process came: enqueued only";
}

}  // namespace
}  // namespace gpuscope
