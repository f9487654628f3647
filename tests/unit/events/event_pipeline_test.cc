#include "src/events/event_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "src/events/sources/file_source.h"
#include "src/events/sources/kmsg_source.h"
#include "src/events/sources/posted_source.h"
#include "src/node/gpu_directory.h"
#include "src/node/job_table.h"
#include "src/node/xid_ledger.h"
#include "tests/unit/node/test_inventory.h"

namespace gpuscope {
namespace {

using testing::Job;
using testing::OpenedGpus;

namespace fs = std::filesystem;

constexpr char kXidLine[] =
    "[  120.000000] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', GPU has fallen off the bus.";
constexpr char kNcclWarn[] =
    "node1:1234:1300 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.2<41234> "
    "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 "
    "hca mlx5_0";
constexpr char kCancel[] =
    "slurmstepd: error: *** JOB 4242 ON node1 CANCELLED AT 2026-11-29T10:00:00 DUE TO TIME LIMIT ***";
constexpr char kNcclInfo[] = "node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>";

double Value(const std::vector<MetricFamily>& families, std::string_view name,
             std::vector<std::pair<std::string, std::string>> labels = {}) {
  for (const MetricFamily& f : families) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) {
      bool match = true;
      for (const auto& [k, v] : labels) {
        bool found = false;
        for (const auto& [lk, lv] : s.labels) found = found || (lk == k && lv == v);
        match = match && found;
      }
      if (match) return s.value;
    }
  }
  return -1;
}

// An inventory of opened GPUs, as the GPU collector publishes it: (NVML index, PCI bus id, UUID).
class EventPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-pipeline-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    fs::create_directories(dir_ / "state");
    gpus_.Publish(OpenedGpus({{1, "00000000:2A:00.0", "GPU-one"}}));
    AttributionUpdate update;
    update.jobs = {Job("4242", "alice", "ml")};
    jobs_.Update(AttributionSource::kMapping, update);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<EventSource> Files() {
    FileTailer::Options o;
    o.globs = {(dir_ / "logs" / "*.out").string()};
    o.checkpoint_path = (dir_ / "state" / "files.checkpoint").string();
    o.max_line_bytes = 1024;
    return std::make_unique<FileSource>(std::move(o));
  }
  std::unique_ptr<EventSource> Kmsg(const fs::path& path, std::function<int64_t()> now_unix_ns = nullptr,
                                    std::function<int64_t()> now_monotonic_ns = nullptr) {
    KmsgSource::Options o;
    o.reader.path = path.string();
    o.reader.checkpoint_path = (dir_ / "state" / "kmsg.seq").string();
    o.now_unix_ns = std::move(now_unix_ns);
    o.now_monotonic_ns = std::move(now_monotonic_ns);
    return std::make_unique<KmsgSource>(std::move(o));
  }
  EventPipelineOptions Options() {
    EventPipelineOptions o;
    o.host = "node1";
    o.sources.push_back(Files());
    o.max_line_bytes = 1024;
    o.ship = [this](const EventRecord& r) {
      shipped_.push_back(r);
      return ship_status_;
    };
    o.flush = [this] { ++flushes_; };
    return o;
  }
  void Append(const std::string& file, const std::string& text) {
    std::ofstream out(dir_ / "logs" / file, std::ios::app | std::ios::binary);
    out << text;
  }

  fs::path dir_;
  GpuDirectory gpus_;
  JobTable jobs_;
  XidLedger ledger_;
  std::vector<EventRecord> shipped_;
  Status ship_status_ = Status::Ok();
  int flushes_ = 0;
};

TEST_F(EventPipelineTest, ClassifiesAttributesCountsAndShips) {
  EventPipeline pipeline(Options(), &ledger_, &jobs_, &gpus_);
  Append("slurm-4242.out", std::string("epoch 1 loss 2.3\n") + kNcclWarn + "\n" + kNcclInfo + "\n" + kCancel +
                               "\n" + kXidLine + "\n");
  pipeline.PollOnce();

  // NCCL INFO is debug: counted, not shipped at the default ship severity (info).
  ASSERT_EQ(shipped_.size(), 3u);
  EXPECT_EQ(flushes_, 1);
  EXPECT_EQ(shipped_[0].event.event_class, "ib_completion");
  EXPECT_EQ(shipped_[0].job_id, "4242");  // from the path
  EXPECT_EQ(shipped_[0].user, "alice");
  EXPECT_EQ(shipped_[0].account, "ml");
  EXPECT_EQ(shipped_[0].host, "node1");
  EXPECT_EQ(shipped_[0].source, "file");
  EXPECT_EQ(shipped_[0].origin, (dir_ / "logs" / "slurm-4242.out").string());
  EXPECT_EQ(shipped_[0].line, kNcclWarn);
  EXPECT_GT(shipped_[0].time_unix_ns, 0);
  EXPECT_EQ(shipped_[1].event.event_class, "slurm_interruption");
  EXPECT_EQ(shipped_[2].event.event_class, "xid");
  EXPECT_EQ(shipped_[2].gpu, "1");
  EXPECT_EQ(shipped_[2].uuid, "GPU-one");

  // The XID went into the ledger as a kernel-log observation.
  ASSERT_EQ(ledger_.Entries().size(), 1u);
  EXPECT_EQ(ledger_.Entries()[0].xid, 79u);
  EXPECT_EQ(ledger_.Entries()[0].count, 1u);

  auto m = pipeline.Metrics();
  EXPECT_EQ(Value(m, "gpuscope_event_lines_total", {{"source", "file"}}), 5);
  EXPECT_EQ(Value(m, "gpuscope_events_total", {{"class", "nccl"}, {"severity", "debug"}}), 1);
  EXPECT_EQ(Value(m, "gpuscope_events_total", {{"class", "xid"}, {"severity", "critical"}}), 1);
  EXPECT_EQ(Value(m, "gpuscope_events_shipped_total"), 3);
  EXPECT_EQ(Value(m, "gpuscope_events_not_shipped_total", {{"reason", "queue"}}), 0);
  EXPECT_GT(Value(m, "gpuscope_event_last_seen_timestamp_seconds", {{"class", "xid"}}), 0);
}

TEST_F(EventPipelineTest, ARestartResumesFromTheCheckpointWithoutShippingTwice) {
  {
    EventPipeline pipeline(Options(), &ledger_, &jobs_, &gpus_);
    Append("slurm-1.out", std::string(kCancel) + "\n");
    pipeline.PollOnce();
  }
  ASSERT_EQ(shipped_.size(), 1u);
  EventPipeline restarted(Options(), &ledger_, &jobs_, &gpus_);
  restarted.PollOnce();
  EXPECT_EQ(shipped_.size(), 1u);
  Append("slurm-1.out", std::string(kNcclWarn) + "\n");
  restarted.PollOnce();
  ASSERT_EQ(shipped_.size(), 2u);
  EXPECT_EQ(shipped_[1].event.event_class, "ib_completion");
}

TEST_F(EventPipelineTest, OversizedLinesAreCutCountedAndStillClassified) {
  EventPipeline pipeline(Options(), &ledger_, &jobs_, &gpus_);
  Append("slurm-7.out", std::string(kCancel) + " " + std::string(5000, 'x') + "\n" + kNcclWarn + "\n");
  pipeline.PollOnce();
  ASSERT_EQ(shipped_.size(), 2u);
  EXPECT_EQ(shipped_[0].event.event_class, "slurm_interruption");
  EXPECT_LE(shipped_[0].line.size(), 1024u + 32u);
  EXPECT_TRUE(shipped_[0].line.ends_with("[truncated]"));
  EXPECT_EQ(Value(pipeline.Metrics(), "gpuscope_event_lines_truncated_total", {{"source", "file"}}), 1);
}

TEST_F(EventPipelineTest, HostileBytesNeverBreakTheRecord) {
  static constexpr char kHostile[] = "\0\xff\xfe garbage \xc3";
  EventPipeline pipeline(Options(), &ledger_, &jobs_, &gpus_);
  std::string hostile = std::string(kCancel) + std::string(kHostile, sizeof(kHostile) - 1) + "\n";
  Append("slurm-8.out", hostile + std::string(3000, '\0') + "\n");
  pipeline.PollOnce();
  ASSERT_EQ(shipped_.size(), 1u);
  // Valid UTF-8 on the way out; the record survives the queue encoding.
  std::optional<EventRecord> decoded = DecodeEventRecord(EncodeEventRecord(shipped_[0]));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->line, shipped_[0].line);
  EXPECT_EQ(shipped_[0].line.find('\xff'), std::string::npos);
}

TEST_F(EventPipelineTest, QueueFailuresAreCountedNotHidden) {
  ship_status_ = Status::Unavailable("disk full");
  EventPipeline pipeline(Options(), &ledger_, &jobs_, &gpus_);
  Append("slurm-9.out", std::string(kCancel) + "\n" + kNcclWarn + "\n");
  pipeline.PollOnce();
  EXPECT_EQ(shipped_.size(), 2u);  // both were offered
  auto m = pipeline.Metrics();
  EXPECT_EQ(Value(m, "gpuscope_events_not_shipped_total", {{"reason", "queue"}}), 2);
  EXPECT_EQ(Value(m, "gpuscope_events_shipped_total"), 0);
  EXPECT_EQ(flushes_, 0);
}

TEST_F(EventPipelineTest, ShipSeverityFiltersWhatLeavesButNotWhatIsCounted) {
  EventPipelineOptions o = Options();
  o.ship_severity = EventSeverity::kCritical;
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  Append("slurm-10.out", std::string(kNcclWarn) + "\n" + kXidLine + "\n");
  pipeline.PollOnce();
  ASSERT_EQ(shipped_.size(), 1u);
  EXPECT_EQ(shipped_[0].event.event_class, "xid");
  EXPECT_EQ(Value(pipeline.Metrics(), "gpuscope_events_total", {{"class", "ib_completion"}}), 1);
}

TEST_F(EventPipelineTest, KmsgRecordsUseTheKernelClassifiersAndTimestamps) {
  const fs::path kmsg = dir_ / "kmsg";
  {
    std::ofstream out(kmsg, std::ios::binary);
    out << "3,100,5000000,-;NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', GPU has fallen off the bus.\n";
    out << "6,101,6000000,-;" << kNcclWarn << "\n";  // job-family lines are not looked for in the kernel log
  }
  EventPipelineOptions o = Options();
  o.sources.clear();
  o.sources.push_back(Kmsg(
      kmsg, [] { return int64_t{1'000'000'000'000'000'000}; },
      [] { return int64_t{10'000'000'000}; }));  // 10 s after boot
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  pipeline.PollOnce();
  ASSERT_EQ(shipped_.size(), 1u);
  EXPECT_EQ(shipped_[0].source, "kmsg");
  EXPECT_EQ(shipped_[0].gpu, "1");
  // Logged 5 s after boot, read at 10 s: 5 s before "now".
  EXPECT_EQ(shipped_[0].time_unix_ns, 1'000'000'000'000'000'000 - 5'000'000'000);
  EXPECT_EQ(Value(pipeline.Metrics(), "gpuscope_event_lines_total", {{"source", "kmsg"}}), 2);
}

TEST_F(EventPipelineTest, AMissingKmsgDeviceIsCountedAndRetried) {
  EventPipelineOptions o = Options();
  o.sources.insert(o.sources.begin(), Kmsg(dir_ / "no-such-kmsg"));
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  pipeline.PollOnce();
  pipeline.PollOnce();
  EXPECT_EQ(Value(pipeline.Metrics(), "gpuscope_event_source_errors_total", {{"source", "kmsg"}}), 2);
  // The file source still works.
  Append("slurm-11.out", std::string(kCancel) + "\n");
  pipeline.PollOnce();
  EXPECT_EQ(shipped_.size(), 1u);
}

TEST_F(EventPipelineTest, StartNeedsASourceAndStopsPromptly) {
  EventPipelineOptions none = Options();
  none.sources.clear();
  EventPipeline idle(std::move(none), nullptr, nullptr, nullptr);
  EXPECT_EQ(idle.Start().code(), Status::Code::kInvalidArgument);

  EventPipelineOptions o = Options();
  o.poll_interval = std::chrono::hours(1);  // Stop must not wait for the next poll
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  Append("slurm-12.out", std::string(kCancel) + "\n");
  ASSERT_TRUE(pipeline.Start().ok());
  pipeline.Stop();
  EXPECT_EQ(shipped_.size(), 1u);  // the first poll runs at start
}

// A source the pipeline knows only through EventSource, as a new kind of source would be: its lines are
// classified (kernel-only ones by the kernel family alone), stamped, attributed by path only when the
// source says its origin is one, shipped under its name, and its counters and own families exported.
class ScriptedSource final : public EventSource {
 public:
  std::string_view Name() const override { return "scripted"; }
  Status Poll(const Emit& emit) override {
    ++polls_;
    for (const EventLine& line : lines_) emit(line);
    lines_.clear();
    if (fail_) return Status::Unavailable("socket gone");
    return Status::Ok();
  }
  Counters counters() const override { return Counters{polls_ * 2, polls_ * 3}; }
  void AppendMetrics(std::vector<MetricFamily>& out) const override {
    MetricFamily family;
    family.name = "scripted_polls_total";
    family.type = MetricType::kCounter;
    family.samples.push_back(Sample{{}, static_cast<double>(polls_)});
    out.push_back(std::move(family));
  }

  std::vector<EventLine> lines_;
  bool fail_ = false;
  uint64_t polls_ = 0;
};

TEST_F(EventPipelineTest, RunsASourceItKnowsOnlyThroughTheInterface) {
  auto owned = std::make_unique<ScriptedSource>();
  ScriptedSource* source = owned.get();
  const std::string job_path = (dir_ / "slurm-4242.out").string();
  EventLine by_path{kNcclWarn, job_path, 1'700'000'000'000'000'000, false, true};
  EventLine not_a_path{kNcclWarn, job_path, 0, false, false};
  EventLine kernel_only{kNcclWarn, "kernel", 0, true, false};  // job-family line: not looked for
  source->lines_ = {by_path, not_a_path, kernel_only};
  EventPipelineOptions o = Options();
  o.sources.clear();
  o.sources.push_back(std::move(owned));
  o.now_unix_ns = [] { return int64_t{42}; };
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  pipeline.PollOnce();

  ASSERT_EQ(shipped_.size(), 2u);
  EXPECT_EQ(shipped_[0].source, "scripted");
  EXPECT_EQ(shipped_[0].event.event_class, "ib_completion");
  EXPECT_EQ(shipped_[0].time_unix_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(shipped_[0].origin, job_path);
  EXPECT_EQ(shipped_[0].job_id, "4242");  // from the path
  EXPECT_EQ(shipped_[0].user, "alice");
  EXPECT_EQ(shipped_[1].event.event_class, "ib_completion");
  EXPECT_EQ(shipped_[1].time_unix_ns, 42);  // no time of its own: the pipeline's clock
  EXPECT_EQ(shipped_[1].job_id, "");        // the origin is not a path: the job is not read from it

  auto m = pipeline.Metrics();
  EXPECT_EQ(Value(m, "gpuscope_event_lines_total", {{"source", "scripted"}}), 3);
  EXPECT_EQ(Value(m, "gpuscope_events_total", {{"source", "scripted"}, {"class", "ib_completion"}}), 2);
  EXPECT_EQ(Value(m, "gpuscope_event_lines_truncated_total", {{"source", "scripted"}}), 2);
  EXPECT_EQ(Value(m, "gpuscope_event_source_errors_total", {{"source", "scripted"}}), 3);
  EXPECT_EQ(Value(m, "scripted_polls_total"), 1);

  // A failed poll is counted on top of what the source counted itself.
  source->fail_ = true;
  pipeline.PollOnce();
  m = pipeline.Metrics();
  EXPECT_EQ(Value(m, "gpuscope_event_source_errors_total", {{"source", "scripted"}}), 6 + 1);
  EXPECT_EQ(Value(m, "scripted_polls_total"), 2);
}

TEST_F(EventPipelineTest, TwoSourcesOfOneNameAreRefused) {
  EventPipelineOptions o = Options();
  o.sources.push_back(Files());
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  Status status = pipeline.Start();
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(status.message().find("'file'"), std::string::npos) << status.message();
}

// The agent's own detectors post events already classified (PostedEventSource): the pipeline counts them
// under the source's name, attributes them (job from job_id, GPU from UUID) and ships them with their
// line, without running the classifiers over that line.
TEST_F(EventPipelineTest, APostedEventIsShippedAsPostedAttributedAndNeverReclassified) {
  PostedEvents posted;
  EventPipelineOptions o = Options();
  o.sources.clear();
  o.sources.push_back(std::make_unique<PostedEventSource>("training", &posted));
  EventPipeline pipeline(std::move(o), &ledger_, &jobs_, &gpus_);
  PostedEvent hang;
  hang.event.event_class = "training_hang";
  hang.event.severity = EventSeverity::kError;
  hang.event.summary = "rank 3 hung";
  hang.event.fields = {{"job_id", "4242"}, {"rank", "3"}, {"UUID", "GPU-one"}, {"seq", "18"}};
  hang.line = kXidLine;  // a line a classifier would take for an XID: the posted event wins
  hang.origin = "training";
  hang.time_unix_ns = 1'700'000'000'000'000'000;
  ASSERT_TRUE(posted.Post(hang));
  pipeline.PollOnce();

  ASSERT_EQ(shipped_.size(), 1u);
  const EventRecord& r = shipped_[0];
  EXPECT_EQ(r.source, "training");
  EXPECT_EQ(r.origin, "training");
  EXPECT_EQ(r.time_unix_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(r.line, kXidLine);
  EXPECT_EQ(r.event.event_class, "training_hang");
  EXPECT_EQ(r.job_id, "4242");
  EXPECT_EQ(r.user, "alice");
  EXPECT_EQ(r.gpu, "1") << "the GPU its UUID names";
  EXPECT_EQ(r.uuid, "GPU-one");
  const auto metadata = EventRecordMetadata(r);
  EXPECT_EQ(
      std::count_if(metadata.begin(), metadata.end(), [](const auto& kv) { return kv.first == "UUID"; }), 1)
      << "the UUID once, as the attribution's";
  EXPECT_TRUE(ledger_.Entries().empty()) << "not an XID";
  const auto metrics = pipeline.Metrics();
  EXPECT_EQ(Value(metrics, "gpuscope_events_total",
                  {{"source", "training"}, {"class", "training_hang"}, {"severity", "error"}}),
            1);
  EXPECT_EQ(Value(metrics, "gpuscope_events_total", {{"class", "xid"}}), -1);
  EXPECT_EQ(Value(metrics, "gpuscope_event_posted_dropped_total", {{"source", "training"}}), 0);
  pipeline.PollOnce();
  EXPECT_EQ(shipped_.size(), 1u) << "handed over once";
}

TEST(PostedEvents, AFullQueueLosesTheNewEventAndCountsIt) {
  PostedEvents posted(2);
  PostedEventSource source("training", &posted);
  for (int i = 0; i < 3; ++i) {
    PostedEvent event;
    event.line = "event " + std::to_string(i);
    EXPECT_EQ(posted.Post(std::move(event)), i < 2) << i;
  }
  std::vector<std::string> lines;
  ASSERT_TRUE(source.Poll([&](const EventLine& line) { lines.emplace_back(line.text); }).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"event 0", "event 1"}));
  std::vector<MetricFamily> families;
  source.AppendMetrics(families);
  EXPECT_EQ(Value(families, "gpuscope_event_posted_dropped_total", {{"source", "training"}}), 1);
  PostedEvent after;
  after.line = "room again";
  EXPECT_TRUE(posted.Post(std::move(after)));
}

}  // namespace
}  // namespace gpuscope
