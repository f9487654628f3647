// The NCCL profiler plugin, loaded as NCCL loads it (dlopen of libnccl-profiler-gpuscope.so, dlsym of
// ncclProfiler_v4/_v5/_v6), driven with the event sequences NCCL produces for each ABI version, against a
// datagram socket bound as the agent binds it: what arrives decodes with the agent's own decoder
// (src/parsers/training_wire.h). Covers completion from the kernel-channel children (the Coll event's stop
// only means enqueued), children that stop before the Coll event, stops that never come, events the plugin
// does not track, an agent that is not listening, and a ring that overflows without blocking.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
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
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh);
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

}  // namespace
}  // namespace gpuscope
