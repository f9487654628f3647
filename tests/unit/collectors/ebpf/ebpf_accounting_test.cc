// EbpfAccounting on records laid out as the BPF programs write them: CUDA memory per process and job,
// connections judged against the allow-list, opens by user and owner, read/write sums, events raised once
// a minute, ended processes and idle jobs forgotten, malformed records counted.
#include "src/collectors/ebpf/ebpf_accounting.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

namespace gpuscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

class EbpfAccountingTest : public ::testing::Test {
 protected:
  void Make(std::vector<std::string> allow = {}) {
    EbpfAccounting::Options options;
    options.watch_dirs = {"/checkpoints", "/datasets"};
    for (const std::string& rule : allow) options.allow.push_back(*ParseAllowRule(rule));
    options.max_destinations_per_job = 2;
    EbpfAccounting::Hooks hooks;
    hooks.job_of = [this](uint32_t tgid, uint32_t ppid) {
      ++job_lookups_;
      auto it = jobs_.find(tgid);
      if (it == jobs_.end()) it = jobs_.find(ppid);
      return it == jobs_.end() ? std::string() : it->second;
    };
    hooks.user_of = [](uint32_t uid) { return uid == 1001 ? std::string("alice") : std::string(); };
    hooks.alive = [this](uint32_t tgid) { return alive_.count(tgid) != 0; };
    hooks.post = [this](EbpfNotice event) { events_.push_back(std::move(event)); };
    accounting_ = std::make_unique<EbpfAccounting>(options, hooks);
  }

  gpuscope_task Task(uint32_t tgid, uint32_t uid = 1001) {
    gpuscope_task t{};
    t.tgid = tgid;
    t.pid = tgid;
    t.uid = uid;
    std::strcpy(t.comm, "pt_main_thread");
    alive_.insert(tgid);
    return t;
  }

  void Alloc(uint32_t tgid, uint64_t ptr, uint64_t bytes, int32_t result = 0, int64_t now = 0) {
    gpuscope_cuda_record r{};
    r.kind = GPUSCOPE_RECORD_CUDA_ALLOC;
    r.call = GPUSCOPE_CUDA_MEM_ALLOC;
    r.task = Task(tgid);
    r.device_ptr = result == 0 ? ptr : 0;
    r.bytes = bytes;
    r.result = result;
    accounting_->OnRecord(&r, sizeof(r), now);
  }

  void Free(uint32_t tgid, uint64_t ptr) {
    gpuscope_cuda_record r{};
    r.kind = GPUSCOPE_RECORD_CUDA_FREE;
    r.call = GPUSCOPE_CUDA_MEM_FREE;
    r.task = Task(tgid);
    r.device_ptr = ptr;
    accounting_->OnRecord(&r, sizeof(r), 0);
  }

  void Connect(uint32_t tgid, const char* address, uint16_t port, int64_t now = 0) {
    gpuscope_connect_record r{};
    r.kind = GPUSCOPE_RECORD_CONNECT;
    r.task = Task(tgid);
    if (inet_pton(AF_INET, address, r.daddr) == 1) {
      r.family = 2;
    } else {
      ASSERT_EQ(inet_pton(AF_INET6, address, r.daddr), 1);
      r.family = 10;
    }
    r.dport = port;
    accounting_->OnRecord(&r, sizeof(r), now);
  }

  void Open(uint32_t tgid, uint32_t uid, uint32_t owner, uint32_t dir, std::vector<const char*> names_up,
            uint32_t f_mode = 1) {
    gpuscope_file_open_record r{};
    r.kind = GPUSCOPE_RECORD_FILE_OPEN;
    r.task = Task(tgid, uid);
    r.dir = dir;
    r.owner_uid = owner;
    r.f_mode = f_mode;
    r.depth = static_cast<uint32_t>(names_up.size());
    for (size_t i = 0; i < names_up.size() && i < GPUSCOPE_MAX_NAMES; ++i)
      std::strncpy(r.names[i], names_up[i], GPUSCOPE_NAME_LEN - 1);
    accounting_->OnRecord(&r, sizeof(r), 0);
  }

  // family name -> "label=value,..." -> value
  std::map<std::string, std::map<std::string, double>> Families() {
    std::vector<MetricFamily> out;
    accounting_->AppendFamilies(out);
    std::map<std::string, std::map<std::string, double>> m;
    for (const MetricFamily& f : out) {
      auto& samples = m[f.name];
      for (const Sample& s : f.samples) {
        std::string key;
        for (const auto& [name, value] : s.labels) key += (key.empty() ? "" : ",") + name + "=" + value;
        samples[key] = s.value;
      }
    }
    return m;
  }

  std::unique_ptr<EbpfAccounting> accounting_;
  std::map<uint32_t, std::string> jobs_ = {{100, "4242"}, {200, "4243"}};
  std::set<uint32_t> alive_;
  std::vector<EbpfNotice> events_;
  int job_lookups_ = 0;
};

TEST_F(EbpfAccountingTest, CudaMemoryPerProcessFollowsAllocationsAndFrees) {
  Make();
  Alloc(100, 0x1000, 1 << 20);
  Alloc(100, 0x2000, 3 << 20);
  Alloc(200, 0x1000, 5 << 20);
  Free(100, 0x1000);
  Free(100, 0x9999);  // allocated before the probe: not known, no change
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_cuda_memory_bytes"]["hpc_job=4242,pid=100"], 3 << 20);
  EXPECT_EQ(f["gpuscope_ebpf_cuda_memory_bytes"]["hpc_job=4243,pid=200"], 5 << 20);
  EXPECT_EQ(f["gpuscope_ebpf_cuda_allocations_total"]["hpc_job=4242"], 2);
  EXPECT_EQ(f["gpuscope_ebpf_cuda_allocated_bytes_total"]["hpc_job=4242"], 4 << 20);
  EXPECT_EQ(f["gpuscope_ebpf_cuda_frees_total"]["hpc_job=4242"], 2);
  // One lookup per process, not per record.
  EXPECT_EQ(job_lookups_, 2);
}

TEST_F(EbpfAccountingTest, FailedAllocationCountedByResultAndRaisedOncePerMinute) {
  Make();
  Alloc(100, 0, 1ull << 40, 2, 10 * kSecond);
  Alloc(100, 0, 1ull << 40, 2, 20 * kSecond);
  Alloc(100, 0, 1ull << 40, 2, 71 * kSecond);
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_cuda_allocation_failures_total"]["hpc_job=4242,result=CUDA_ERROR_OUT_OF_MEMORY"],
            3);
  EXPECT_TRUE(f["gpuscope_ebpf_cuda_memory_bytes"].empty());
  ASSERT_EQ(events_.size(), 2u);
  EXPECT_EQ(events_[0].event_class, "ebpf_cuda_allocation_failure");
  EXPECT_EQ(events_[0].Field("job_id"), "4242");
  EXPECT_EQ(events_[0].Field("result"), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(events_[0].Field("process"), "pt_main_thread");
}

TEST_F(EbpfAccountingTest, ConnectionsOutsideTheAllowListAreUnexpected) {
  Make({"127.0.0.0/8:5000", "[::1]:5000"});
  Connect(100, "127.0.0.1", 5000);
  Connect(100, "::1", 5000);
  Connect(100, "127.0.0.1", 6000);
  Connect(100, "::1", 6000);
  Connect(100, "127.0.0.2", 7000);  // a third destination: past the per-job limit of 2
  Connect(300, "127.0.0.1", 6000);  // a process in no job: not counted
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"]["hpc_job=4242,family=ipv4,allowed=true"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"]["hpc_job=4242,family=ipv6,allowed=true"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"]["hpc_job=4242,family=ipv4,allowed=false"], 2);
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"]["hpc_job=4242,family=ipv6,allowed=false"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_unexpected_connections_total"]["hpc_job=4242,destination=127.0.0.1:6000"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_unexpected_connections_total"]["hpc_job=4242,destination=[::1]:6000"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_unexpected_connections_total"]["hpc_job=4242,destination=other"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"].count("hpc_job=,family=ipv4,allowed=false"), 0u);
  ASSERT_EQ(events_.size(), 3u);
  EXPECT_EQ(events_[0].event_class, "ebpf_unexpected_connection");
  EXPECT_EQ(events_[0].Field("destination"), "127.0.0.1:6000");
  EXPECT_EQ(events_[1].Field("destination"), "[::1]:6000");
  EXPECT_EQ(events_[1].Field("family"), "ipv6");
  EXPECT_EQ(events_[0].Field("job_id"), "4242");
}

TEST_F(EbpfAccountingTest, AChildThatExitedIsTiedToItsParentsJob) {
  Make({"127.0.0.0/8:5000"});
  gpuscope_connect_record r{};
  r.kind = GPUSCOPE_RECORD_CONNECT;
  r.task = Task(555);  // not in jobs_: "exited"
  r.task.ppid = 100;   // job 4242's process
  r.family = 2;
  inet_pton(AF_INET, "192.0.2.1", r.daddr);
  r.dport = 22;
  accounting_->OnRecord(&r, sizeof(r), 0);
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_unexpected_connections_total"]["hpc_job=4242,destination=192.0.2.1:22"], 1);
}

TEST_F(EbpfAccountingTest, WithoutAllowListNothingIsUnexpected) {
  Make();
  Connect(100, "203.0.113.1", 443);
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_connections_total"]["hpc_job=4242,family=ipv4,allowed=true"], 1);
  EXPECT_TRUE(f["gpuscope_ebpf_unexpected_connections_total"].empty());
  EXPECT_TRUE(events_.empty());
}

TEST_F(EbpfAccountingTest, OpensByUserAndForeignOpensByOwner) {
  Make();
  Open(100, 1001, 1001, 0, {"model.pt", "step_100"});
  Open(300, 0, 1001, 0, {"model.pt", "step_100"});  // root, in no job, reads alice's checkpoint
  Open(300, 0, 1001, 0, {"model.pt", "step_100"});  // the same again: counted, not raised again
  Open(200, 1001, 1001, 1, {"a", "b", "c", "d", "e", "f", "g", "h"});
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_file_opens_total"]["hpc_job=4242,dir=/checkpoints,user=alice"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_file_opens_total"]["hpc_job=,dir=/checkpoints,user=0"], 2);
  EXPECT_EQ(f["gpuscope_ebpf_file_opens_total"]["hpc_job=4243,dir=/datasets,user=alice"], 1);
  EXPECT_EQ(f["gpuscope_ebpf_file_foreign_opens_total"]["hpc_job=,dir=/checkpoints,user=0,owner=alice"], 2);
  EXPECT_EQ(f["gpuscope_ebpf_file_foreign_opens_total"].size(), 1u);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].event_class, "ebpf_foreign_file_access");
  EXPECT_EQ(events_[0].Field("path"), "/checkpoints/step_100/model.pt");
  EXPECT_EQ(events_[0].Field("owner"), "alice");
  EXPECT_EQ(events_[0].Field("access"), "read");
}

TEST_F(EbpfAccountingTest, ReadWriteSumsAreDeltasPerJobAndDirectory) {
  Make();
  alive_.insert(100);
  gpuscope_io_key read{100, 0, 0, 0};
  gpuscope_io_key write{100, 0, 1, 0};
  accounting_->OnIo({{read, {1000, 2 * kSecond, 10, 0}}, {write, {500, kSecond, 1, 0}}}, 0);
  accounting_->OnIo({{read, {3000, 3 * kSecond, 12, 0}}, {write, {500, kSecond, 1, 0}}}, 0);
  auto f = Families();
  EXPECT_EQ(f["gpuscope_ebpf_file_read_bytes_total"]["hpc_job=4242,dir=/checkpoints"], 3000);
  EXPECT_EQ(f["gpuscope_ebpf_file_written_bytes_total"]["hpc_job=4242,dir=/checkpoints"], 500);
  EXPECT_DOUBLE_EQ(f["gpuscope_ebpf_file_io_seconds_total"]["hpc_job=4242,dir=/checkpoints,op=read"], 3.0);
  EXPECT_DOUBLE_EQ(f["gpuscope_ebpf_file_io_seconds_total"]["hpc_job=4242,dir=/checkpoints,op=write"], 1.0);
  // The key deleted and made again (smaller sums) counts from zero.
  accounting_->OnIo({{read, {100, kSecond / 2, 1, 0}}}, 0);
  EXPECT_EQ(Families()["gpuscope_ebpf_file_read_bytes_total"]["hpc_job=4242,dir=/checkpoints"], 3100);
}

TEST_F(EbpfAccountingTest, SweepForgetsEndedProcessesAndIdleJobs) {
  Make();
  Alloc(100, 0x1000, 1 << 20, 0, 0);
  gpuscope_io_key read{100, 0, 0, 0};
  accounting_->OnIo({{read, {1000, kSecond, 1, 0}}}, 0);
  alive_.erase(100);
  const std::vector<gpuscope_io_key> ended = accounting_->Sweep(kSecond);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].tgid, 100u);
  auto f = Families();
  EXPECT_TRUE(f["gpuscope_ebpf_cuda_memory_bytes"].empty());  // the process's memory left with it
  EXPECT_EQ(f["gpuscope_ebpf_cuda_allocations_total"]["hpc_job=4242"], 1);  // the job's counters stay
  accounting_->Sweep(16 * 60 * kSecond);
  EXPECT_TRUE(Families()["gpuscope_ebpf_cuda_allocations_total"].empty());  // idle 15 minutes: gone
}

TEST_F(EbpfAccountingTest, MalformedRecordsAreCountedNotRead) {
  Make();
  const uint32_t unknown = 77;
  accounting_->OnRecord(&unknown, sizeof(unknown), 0);
  gpuscope_cuda_record r{};
  r.kind = GPUSCOPE_RECORD_CUDA_ALLOC;
  accounting_->OnRecord(&r, sizeof(r) - 8, 0);
  accounting_->OnRecord(&r, 2, 0);
  EXPECT_EQ(accounting_->malformed_records(), 3u);
  EXPECT_EQ(accounting_->processes(), 0u);
}

TEST_F(EbpfAccountingTest, DescribeCoversEveryFamily) {
  Make();
  Alloc(100, 0x1000, 1);
  std::vector<MetricFamily> out;
  accounting_->AppendFamilies(out);
  std::set<std::string> described;
  for (const MetricDescription& d : EbpfAccounting::Describe()) described.insert(d.name);
  for (const MetricFamily& f : out) EXPECT_EQ(described.count(f.name), 1u) << f.name;
  EXPECT_EQ(out.size(), described.size());
}

TEST(CudaResultNameTest, KnownAndUnknown) {
  EXPECT_EQ(CudaResultName(2), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(CudaResultName(12345), "CUresult_12345");
}

}  // namespace
}  // namespace gpuscope
