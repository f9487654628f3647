// TrainingCollector (src/collectors/training/training_collector.h) on a real unix datagram socket: the
// kernel names the sender, claims that disagree with the agent's identity of that pid are rejected by
// reason, hostile datagrams are counted, a path the agent must not take is refused with a clear error, and
// traced steps reach the traces sink (the SpanExporter) under the agent's identity, only when there is one,
// and a rank the others left behind is handed to the hang hook once per episode.
#include "src/collectors/training/training_collector.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "src/collectors/training/trace_ids.h"
#include "tests/unit/sinks/queue/queue_test_util.h"

namespace gpuscope {
namespace {

void Put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A version-1 datagram: a hello, then `steps` one-second steps.
std::string Datagram(int32_t rank, const std::string& job, int steps, uint32_t drops = 0) {
  std::string records;
  std::string hello;
  Put(hello, static_cast<uint32_t>(rank), 4);
  Put(hello, 0, 4);
  Put(hello, 4, 4);
  Put(hello, job.size(), 1);
  hello += job;
  records.push_back(1);
  Put(records, hello.size(), 2);
  records += hello;
  for (int i = 0; i < steps; ++i) {
    std::string step;
    Put(step, static_cast<uint64_t>(i), 8);
    Put(step, 1'000'000'000ull * (i + 1), 8);
    Put(step, 1'000'000'000ull * (i + 2), 8);
    Put(step, 16, 4);
    records.push_back(2);
    Put(records, step.size(), 2);
    records += step;
  }
  std::string out = "GPST";
  out.push_back(1);
  out.push_back(0);
  Put(out, static_cast<uint64_t>(1 + steps), 2);
  Put(out, drops, 4);
  return out + records;
}

class Client {
 public:
  Client() : fd_(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Client() { close(fd_); }
  bool Send(const std::string& path, const std::string& data) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    return sendto(fd_, data.data(), data.size(), 0, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ==
           static_cast<ssize_t>(data.size());
  }

 private:
  int fd_;
};

std::map<std::string, double> Values(TrainingCollector& collector) {
  std::vector<MetricFamily> families;
  EXPECT_TRUE(collector.Collect(families).ok());
  std::map<std::string, double> out;
  for (const MetricFamily& family : families) {
    for (const Sample& sample : family.samples) {
      std::string key = family.name;
      for (const auto& [name, value] : sample.labels) {
        if (name == "reason" || name == "rank" || name == "hpc_job") key += "," + name + "=" + value;
      }
      out[key] = sample.value;
    }
  }
  return out;
}

// Collects until the source has taken `count` datagrams (the receive thread runs on its own).
std::map<std::string, double> WaitForDatagrams(TrainingCollector& collector, double count) {
  for (int i = 0; i < 500; ++i) {
    auto values = Values(collector);
    if (values["gpuscope_training_datagrams_total"] >= count) return values;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Values(collector);
}

class TrainingCollectorTest : public ::testing::Test {
 protected:
  TrainingCollectorOptions Options() {
    TrainingCollectorOptions options;
    options.socket_path = dir_.path() + "/run/training.sock";
    options.hostname = "node1";
    options.resolve = [this](uint32_t pid) -> std::optional<TrainingIdentity> {
      asked_pid_ = pid;
      return TrainingIdentity{"4242", 3, "1", "GPU-1"};
    };
    return options;
  }
  TempDir dir_;
  uint32_t asked_pid_ = 0;
};

TEST_F(TrainingCollectorTest, TheKernelNamesTheSenderAndItsStepsAreCountedUnderTheAgentsIdentity) {
  TrainingCollector collector(Options());
  ASSERT_TRUE(collector.Start().ok());
  EXPECT_TRUE(collector.Healthy());
  Client client;
  ASSERT_TRUE(client.Send(dir_.path() + "/run/training.sock", Datagram(3, "4242", 5)));
  auto values = WaitForDatagrams(collector, 1);
  EXPECT_EQ(asked_pid_, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(values["gpuscope_training_steps_total,hpc_job=4242,rank=3"], 5);
  EXPECT_EQ(values["gpuscope_training_samples_total,hpc_job=4242,rank=3"], 80);
  EXPECT_EQ(values["gpuscope_training_ranks"], 1);
}

TEST_F(TrainingCollectorTest, ClaimsOfAnotherJobOrRankAreRejectedAndCountedByReason) {
  TrainingCollector collector(Options());
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  const std::string path = dir_.path() + "/run/training.sock";
  ASSERT_TRUE(client.Send(path, Datagram(3, "9999", 1)));  // another job
  ASSERT_TRUE(client.Send(path, Datagram(0, "4242", 1)));  // another rank
  ASSERT_TRUE(client.Send(path, Datagram(3, "", 1)));      // no claimed job: the agent's identity holds
  auto values = WaitForDatagrams(collector, 3);
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=identity"], 2);
  EXPECT_EQ(values["gpuscope_training_steps_total,hpc_job=4242,rank=3"], 1);
  EXPECT_EQ(values.count("gpuscope_training_steps_total,hpc_job=9999,rank=3"), 0u);
}

TEST_F(TrainingCollectorTest, HostileDatagramsAreCountedAndTheNextGoodOneStillCounts) {
  TrainingCollector collector(Options());
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  const std::string path = dir_.path() + "/run/training.sock";
  std::string no_hello = Datagram(3, "4242", 0);
  no_hello = no_hello.substr(0, 12);
  no_hello[6] = 0;  // zero records
  ASSERT_TRUE(client.Send(path, "GPST garbage"));
  ASSERT_TRUE(client.Send(path, std::string(9000, 'x')));
  ASSERT_TRUE(client.Send(path, no_hello));
  ASSERT_TRUE(client.Send(path, Datagram(3, "4242", 2, /*drops=*/7)));
  ASSERT_TRUE(client.Send(path, Datagram(3, "4242", 1, /*drops=*/9)));
  auto values = WaitForDatagrams(collector, 5);
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=malformed"], 1);
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=oversize"], 1);
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=no_hello"], 1);
  EXPECT_EQ(values["gpuscope_training_steps_total,hpc_job=4242,rank=3"], 3);
  EXPECT_EQ(values["gpuscope_training_producer_drops_total"], 9) << "the producer's cumulative count, once";
}

TEST_F(TrainingCollectorTest, AProcessTheAgentCannotFindIsRejected) {
  TrainingCollectorOptions options = Options();
  options.resolve = [](uint32_t) -> std::optional<TrainingIdentity> { return std::nullopt; };
  TrainingCollector collector(options);
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(3, "4242", 1)));
  auto values = WaitForDatagrams(collector, 1);
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=unknown_process"], 1);
}

TEST_F(TrainingCollectorTest, WithoutAResolverTheSendersOwnProcTellsItsIdentity) {
  TrainingCollectorOptions options = Options();
  options.resolve = nullptr;  // /proc/<pid>: this test process, in no Slurm job
  TrainingCollector collector(options);
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  const char* rank = std::getenv("RANK");
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  if (rank != nullptr || slurm_job != nullptr) GTEST_SKIP() << "run under a launcher that sets RANK or a job";
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(6, "", 2)));
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(6, "4242", 1)));  // claims a job it is not in
  auto values = WaitForDatagrams(collector, 2);
  EXPECT_EQ(values["gpuscope_training_steps_total,hpc_job=,rank=6"], 2) << "no rank variable: the claim";
  EXPECT_EQ(values["gpuscope_training_records_rejected_total,reason=identity"], 1);
}

// The traces sink as the collector sees it: every span handed over, kept.
class RecordingExporter : public SpanExporter {
 public:
  void Export(const std::vector<Span>& spans) override {
    std::lock_guard<std::mutex> lock(mu_);
    spans_.insert(spans_.end(), spans.begin(), spans.end());
  }
  std::vector<Span> spans() {
    std::lock_guard<std::mutex> lock(mu_);
    return spans_;
  }

 private:
  std::mutex mu_;
  std::vector<Span> spans_;
};

TEST_F(TrainingCollectorTest, TracedStepsReachTheSpanExporterUnderTheAgentsIdentity) {
  RecordingExporter exporter;
  TrainingCollectorOptions options = Options();
  options.spans = &exporter;
  options.traces.traces = TrainingTraces::kAll;
  TrainingCollector collector(options);
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(3, "4242", 3)));
  std::map<std::string, double> values;
  for (int i = 0; i < 500 && exporter.spans().size() < 3; ++i) {
    values = Values(collector);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<Span> spans = exporter.spans();
  ASSERT_EQ(spans.size(), 3u);  // three steps without collectives
  for (uint64_t step = 0; step < 3; ++step) {
    EXPECT_EQ(spans[step].name, "train.step");
    EXPECT_EQ(spans[step].trace_id, TrainingStepTraceId("4242", step));
    EXPECT_EQ(spans[step].span_id, TrainingStepSpanId("4242", step, 3));
    EXPECT_EQ(spans[step].start_unix_ns, 1'000'000'000ull * (step + 1));
    std::map<std::string, std::string> strings;
    for (const SpanAttribute& a : spans[step].attributes) {
      if (const auto* text = std::get_if<std::string>(&a.value)) strings[a.key] = *text;
    }
    EXPECT_EQ(strings["hpc_job"], "4242");
    EXPECT_EQ(strings["Hostname"], "node1");
    EXPECT_EQ(strings["gpu"], "1");
    EXPECT_EQ(strings["UUID"], "GPU-1");
  }
  values = Values(collector);
  EXPECT_EQ(values["gpuscope_training_traced_steps_total"], 3);
  EXPECT_EQ(values["gpuscope_training_spans_total"], 3);
}

TEST_F(TrainingCollectorTest, WithoutATracesSinkNoStepIsTraced) {
  TrainingCollectorOptions options = Options();
  options.traces.traces = TrainingTraces::kAll;  // asked for, but nowhere to send
  TrainingCollector collector(options);
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(3, "4242", 3)));
  auto values = WaitForDatagrams(collector, 1);
  EXPECT_EQ(values["gpuscope_training_steps_total,hpc_job=4242,rank=3"], 3);
  values = Values(collector);
  EXPECT_EQ(values["gpuscope_training_traced_steps_total"], 0);
  EXPECT_EQ(values["gpuscope_training_spans_total"], 0);
}

TEST_F(TrainingCollectorTest, APathHeldByAFileIsRefusedAndAStaleSocketIsReplaced) {
  TrainingCollectorOptions options = Options();
  options.socket_path = dir_.path() + "/file";
  std::ofstream(options.socket_path) << "not a socket";
  TrainingCollector refused(options);
  std::vector<MetricFamily> families;
  const Status status = refused.Collect(families);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("is not a socket"), std::string::npos) << status.message();
  EXPECT_FALSE(refused.Healthy());
  std::ifstream kept(options.socket_path);
  EXPECT_TRUE(kept.good()) << "the file is left alone";

  options.socket_path = dir_.path() + "/run/training.sock";
  {
    TrainingCollector first(Options());
    ASSERT_TRUE(first.Start().ok());
  }
  {
    // A socket an agent killed with -9 left behind (simulated: bind one and close it without unlinking).
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, options.socket_path.data(), options.socket_path.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    close(fd);
  }
  TrainingCollector second(Options());
  EXPECT_TRUE(second.Start().ok());
  Client client;
  ASSERT_TRUE(client.Send(options.socket_path, Datagram(3, "4242", 1)));
  EXPECT_EQ(WaitForDatagrams(second, 1)["gpuscope_training_steps_total,hpc_job=4242,rank=3"], 1);
}

TEST_F(TrainingCollectorTest, EveryFamilyCollectedIsDescribed) {
  TrainingCollector collector(Options());
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  ASSERT_TRUE(client.Send(Options().socket_path, Datagram(3, "4242", 1)));
  WaitForDatagrams(collector, 1);
  std::vector<MetricFamily> families;
  ASSERT_TRUE(collector.Collect(families).ok());
  std::map<std::string, MetricType> described;
  for (const MetricDescription& d : collector.Describe()) described[d.name] = d.type;
  for (const MetricFamily& family : families) {
    ASSERT_TRUE(described.count(family.name)) << family.name;
    EXPECT_EQ(described[family.name], family.type) << family.name;
  }
}

// Rank 1 stops after seq 2 on communicator 7 while rank 0 goes on to 5: past the threshold, the hook hears
// of it at the next collection, and at none after (one episode).
TEST_F(TrainingCollectorTest, ARankLeftBehindIsHandedToTheHangHookOncePerEpisode) {
  int64_t now = 1'700'000'000'000'000'000;
  TrainingCollectorOptions options = Options();
  options.resolve = [](uint32_t) -> std::optional<TrainingIdentity> {
    return TrainingIdentity{"4242", -1, "1", "GPU-1"};  // no rank variable: the hello's claim holds
  };
  options.now_ns = [&now] { return now; };
  options.state.hang_after_ns = 60'000'000'000;
  std::vector<std::pair<TrainingHang, std::string>> hangs;
  options.on_hang = [&](const TrainingHang& hang, const std::string& hostname, int64_t) {
    hangs.emplace_back(hang, hostname);
  };
  TrainingCollector collector(options);
  ASSERT_TRUE(collector.Start().ok());
  Client client;
  for (auto [rank, last_seq] : {std::pair{0, 5}, std::pair{1, 2}}) {
    std::string datagram;
    AppendTrainingHeader(&datagram, 0);
    AppendTrainingHello(&datagram, TrainingHello{rank, rank, 2, "4242"});
    for (int seq = 0; seq <= last_seq; ++seq) {
      TrainingCollective c;
      c.comm = 7;
      c.seq = static_cast<uint64_t>(seq);
      c.op = 4;
      c.begin_ns = 1;
      c.end_ns = 2;
      AppendTrainingCollective(&datagram, c);
    }
    FinishTrainingDatagram(&datagram, static_cast<uint16_t>(2 + last_seq));
    ASSERT_TRUE(client.Send(dir_.path() + "/run/training.sock", datagram));
  }
  WaitForDatagrams(collector, 2);
  EXPECT_TRUE(hangs.empty());
  now += 61'000'000'000;
  Values(collector);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0].first.rank, 1);
  EXPECT_EQ(hangs[0].first.job, "4242");
  EXPECT_EQ(hangs[0].first.seq, 2u);
  EXPECT_EQ(hangs[0].first.furthest_seq, 5u);
  EXPECT_EQ(hangs[0].first.uuid, "GPU-1");
  EXPECT_EQ(hangs[0].second, "node1");
  now += 10'000'000'000;
  Values(collector);
  EXPECT_EQ(hangs.size(), 1u) << "the same episode is not handed out again";
}

}  // namespace
}  // namespace gpuscope
