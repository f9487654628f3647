// The registries of event sources and push sinks: names are unique, each entry is switched by its own
// options, builds what it names from the agent config, and describes every family that thing exports (so
// docs/metrics.md lists it).
#include "src/agent/event_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/agent/events.h"
#include "src/agent/registry.h"
#include "src/agent/training_hang_event.h"
#include "src/core/snapshot.h"
#include "src/events/sources/posted_source.h"
#include "src/sinks/queue/durable_queue.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class EventRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-event-registry-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    fs::create_directories(dir_ / "state");
    fs::create_directories(dir_ / "journal");
    std::ofstream(dir_ / "kmsg") << "6,1,1000,-;hello\n";
    std::ofstream(dir_ / "logs" / "slurm-1.out") << "a line\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every source and sink on, pointed at this test's directory.
  AgentConfig AllOn() const {
    AgentConfig config;
    config.events_state_dir = (dir_ / "state").string();
    config.events_kmsg_path = (dir_ / "kmsg").string();
    config.events_files = {(dir_ / "logs" / "*.out").string()};
    config.events_journal = true;
    config.events_journal_directory = (dir_ / "journal").string();
    config.loki_url = "http://127.0.0.1:1/loki/api/v1/push";
    config.otlp_url = "http://127.0.0.1:1/v1/logs";
    config.collectors["training"].enabled = true;
    config.collectors["ebpf"].enabled = true;
    config.collectors["gpu"].enabled = true;
    config.events_falco_files = {(dir_ / "falco" / "*.json").string()};
    config.events_tetragon_files = {(dir_ / "tetragon.log").string()};
    return config;
  }

  fs::path dir_;
};

// Every family in `emitted` is described by name, type and label names.
void ExpectDescribed(const std::vector<MetricFamily>& emitted,
                     const std::vector<MetricDescription>& described, const std::string& who) {
  std::map<std::string, const MetricDescription*> by_name;
  for (const MetricDescription& d : described) by_name[d.name] = &d;
  for (const MetricFamily& family : emitted) {
    auto it = by_name.find(family.name);
    ASSERT_NE(it, by_name.end()) << who << " emits " << family.name << " without describing it";
    EXPECT_EQ(family.type, it->second->type) << family.name;
    for (const Sample& sample : family.samples) {
      std::vector<std::string> names;
      for (const auto& [name, value] : sample.labels) names.push_back(name);
      EXPECT_EQ(names, it->second->labels) << family.name;
    }
  }
}

TEST(EventSourceRegistry, RejectsDuplicateNames) {
  EventSourceRegistry registry;
  ASSERT_TRUE(registry.Register({"x", "", nullptr, nullptr, nullptr}).ok());
  Status again = registry.Register({"x", "", nullptr, nullptr, nullptr});
  EXPECT_EQ(again.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(again.message(), "event source 'x' registered twice");
  EXPECT_EQ(registry.entries().size(), 1u);
}

TEST(PushSinkRegistry, RejectsDuplicateNames) {
  PushSinkRegistry registry;
  ASSERT_TRUE(registry.Register({"x", "", nullptr, nullptr, nullptr}).ok());
  Status again = registry.Register({"x", "", nullptr, nullptr, nullptr});
  EXPECT_EQ(again.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(again.message(), "push sink 'x' registered twice");
}

TEST(EventRegistry, BuiltinsAreTheKnownSourcesAndSinksInPollOrder) {
  std::vector<std::string> sources, sinks;
  for (const EventSourceEntry& e : BuiltinEventSources().entries()) sources.push_back(e.name);
  for (const PushSinkEntry& e : BuiltinPushSinks().entries()) sinks.push_back(e.name);
  EXPECT_EQ(sources, (std::vector<std::string>{"kmsg", "file", "journal", "training", "ebpf", "gpu", "falco",
                                               "tetragon"}));
  EXPECT_EQ(sinks, (std::vector<std::string>{"loki", "otlp", "remote_write", "otlp_metrics", "otlp_traces"}));
}

TEST(EventRegistry, EachEntryIsSwitchedOnByItsOwnOptionOnly) {
  const AgentConfig defaults;
  for (const EventSourceEntry& e : BuiltinEventSources().entries())
    EXPECT_FALSE(e.enabled(defaults)) << e.name;
  for (const PushSinkEntry& e : BuiltinPushSinks().entries()) EXPECT_FALSE(e.enabled(defaults)) << e.name;

  std::map<std::string, AgentConfig> only;
  only["kmsg"].events_kmsg_path = "/dev/kmsg";
  only["file"].events_files = {"/var/log/slurm/*.log"};
  only["journal"].events_journal = true;
  only["training"].collectors["training"].enabled = true;  // the training collector's hung ranks
  only["ebpf"].collectors["ebpf"].enabled = true;          // the ebpf collector's events (--ebpf)
  only["gpu"].collectors["gpu"].enabled = true;            // DCGM health and the profiling pause
  only["falco"].events_falco_files = {"/var/log/falco/events.json"};
  only["tetragon"].events_tetragon_files = {"/var/log/tetragon/tetragon.log"};
  only["loki"].loki_url = "http://loki:3100/loki/api/v1/push";
  only["otlp"].otlp_url = "http://collector:4318/v1/logs";
  only["otlp_metrics"].otlp_metrics_url = "http://collector:4318/v1/metrics";
  only["otlp_traces"].otlp_traces_url = "http://collector:4318/v1/traces";
  only["remote_write"].remote_write_endpoints.emplace_back().url =
      "http://mimir:8080/api/v1/push";  // no flag URL
  for (const auto& [name, config] : only) {
    for (const EventSourceEntry& e : BuiltinEventSources().entries())
      EXPECT_EQ(e.enabled(config), e.name == name) << name << " turns " << e.name;
    for (const PushSinkEntry& e : BuiltinPushSinks().entries())
      EXPECT_EQ(e.enabled(config), e.name == name) << name << " turns " << e.name;
  }
}

TEST_F(EventRegistryTest, EverySourceIsBuiltFromTheConfigUnderItsNameAndDescribesWhatItExports) {
  const AgentConfig config = AllOn();
  for (const EventSourceEntry& entry : BuiltinEventSources().entries()) {
    ASSERT_TRUE(entry.enabled(config)) << entry.name;
    PostedEvents training_events;
    PostedEvents ebpf_events;
    PostedEvents falco_events;
    PostedEvents gpu_events;
    EventSourceContext context;
    context.training_events = &training_events;
    context.ebpf_events = &ebpf_events;
    context.falco_events = &falco_events;
    context.gpu_events = &gpu_events;
    std::unique_ptr<EventSource> source = entry.create(config, context);
    ASSERT_NE(source, nullptr) << entry.name;
    EXPECT_EQ(source->Name(), entry.name);
    source->Poll([](const EventLine&) {});  // the journal directory has no journal: an error is fine here
    std::vector<MetricFamily> families;
    source->AppendMetrics(families);
    ExpectDescribed(families, entry.describe(), entry.name);
    // And what the source describes is what it emits (no stale description).
    std::set<std::string> emitted;
    for (const MetricFamily& f : families) emitted.insert(f.name);
    for (const MetricDescription& d : entry.describe()) EXPECT_TRUE(emitted.count(d.name)) << d.name;
  }
  // The checkpoints went where the config says.
  EXPECT_TRUE(fs::exists(dir_ / "state" / "kmsg.seq"));
  EXPECT_TRUE(fs::exists(dir_ / "state" / "files.checkpoint"));
}

TEST_F(EventRegistryTest, EverySinkIsBuiltOnTheQueueUnderItsNameAndDescribesWhatItExports) {
  const AgentConfig config = AllOn();
  DurableQueueOptions q;
  q.directory = (dir_ / "queue").string();
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) q.consumers.push_back(entry.name);
  std::unique_ptr<DurableQueue> queue;
  ASSERT_TRUE(DurableQueue::Open(q, &queue).ok());
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) {
    std::unique_ptr<PushSink> sink = entry.create(config, PushSinkContext{queue.get()});
    ASSERT_NE(sink, nullptr) << entry.name;
    EXPECT_EQ(sink->Name(), entry.name);
    std::vector<MetricFamily> families = sink->Metrics();
    EXPECT_FALSE(families.empty()) << entry.name;
    ExpectDescribed(families, entry.describe(), entry.name);
  }
}

// OTLP logs and OTLP metrics share the OTLP credentials (and remote_write endpoints have their own): an
// unreadable token file makes each of those sinks fail to start, naming the file.
TEST_F(EventRegistryTest, EachSinkStartsWithTheCredentialsOfItsOwnOptions) {
  AgentConfig config = AllOn();
  config.otlp_metrics_url = "http://127.0.0.1:1/v1/metrics";
  config.otlp_traces_url = "http://127.0.0.1:1/v1/traces";
  config.otlp_bearer_token_file = (dir_ / "no-otlp-token").string();
  config.remote_write_endpoints.emplace_back().url = "http://127.0.0.1:1/api/v1/write";
  config.remote_write_endpoints.back().bearer_token_file = (dir_ / "no-rw-token").string();
  DurableQueueOptions q;
  q.directory = (dir_ / "queue").string();
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) q.consumers.push_back(entry.name);
  std::unique_ptr<DurableQueue> queue;
  ASSERT_TRUE(DurableQueue::Open(q, &queue).ok());
  SnapshotStore snapshots;
  std::map<std::string, std::string> errors;
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries()) {
    std::unique_ptr<PushSink> sink = entry.create(config, PushSinkContext{queue.get(), &snapshots, "node1"});
    const Status status = sink->Start();
    errors[entry.name] = status.message();
    sink->Stop();
  }
  EXPECT_EQ(errors["loki"], "");
  EXPECT_NE(errors["otlp"].find("cannot read the bearer token file " + config.otlp_bearer_token_file),
            std::string::npos)
      << errors["otlp"];
  EXPECT_NE(errors["otlp_metrics"].find("cannot read the bearer token file " + config.otlp_bearer_token_file),
            std::string::npos)
      << errors["otlp_metrics"];
  EXPECT_NE(errors["otlp_traces"].find("cannot read the bearer token file " + config.otlp_bearer_token_file),
            std::string::npos)
      << errors["otlp_traces"];
  EXPECT_NE(
      errors["remote_write"].find("cannot read the bearer token file " + (dir_ / "no-rw-token").string()),
      std::string::npos)
      << errors["remote_write"];
}

// The traces sink is the one the agent hands the collectors that make spans, through the event path.
TEST_F(EventRegistryTest, OnlyTheTracesSinkTakesSpansAndTheEventPathHandsItOut) {
  for (const PushSinkEntry& entry : BuiltinPushSinks().entries())
    EXPECT_EQ(static_cast<bool>(entry.span_exporter), entry.name == "otlp_traces") << entry.name;
  AgentConfig config;
  config.events_state_dir = (dir_ / "state").string();
  std::unique_ptr<EventPath> path;
  ASSERT_TRUE(EventPath::Create(config, "node1", nullptr, nullptr, nullptr, nullptr, nullptr, &path).ok());
  EXPECT_EQ(path, nullptr);  // nothing configured
  config.otlp_traces_url = "http://127.0.0.1:1/v1/traces";
  ASSERT_TRUE(EventPath::Create(config, "node1", nullptr, nullptr, nullptr, nullptr, nullptr, &path).ok());
  ASSERT_NE(path, nullptr);
  ASSERT_NE(path->spans(), nullptr);
  ASSERT_TRUE(path->Start().ok());
  path->spans()->Export({Span{}});  // queued under <queue>/otlp_traces (the receiver is not there)
  path->Stop();
  EXPECT_TRUE(fs::exists(dir_ / "state" / "queue" / "otlp_traces"));
}

TEST(EventRegistry, TheEventsCollectorDescribesEveryRegisteredSourceAndSinkOnce) {
  const std::vector<MetricDescription> all = EventPath::Describe();
  std::set<std::string> names;
  for (const MetricDescription& d : all) EXPECT_TRUE(names.insert(d.name).second) << d.name << " twice";
  for (const EventSourceEntry& e : BuiltinEventSources().entries()) {
    for (const MetricDescription& d : e.describe())
      EXPECT_TRUE(names.count(d.name)) << e.name << ": " << d.name;
  }
  for (const PushSinkEntry& e : BuiltinPushSinks().entries()) {
    for (const MetricDescription& d : e.describe())
      EXPECT_TRUE(names.count(d.name)) << e.name << ": " << d.name;
  }
  EXPECT_TRUE(names.count("gpuscope_event_files_skipped_total"));
}

// What the training collector posts for a hung rank comes out of the "training" source as a training_hang
// event naming job, rank, node, GPU, communicator, the sequence number and how long.
TEST(EventRegistry, TheTrainingSourceHandsOnTheHangEventOfARank) {
  AgentConfig config;
  config.collectors["training"].enabled = true;
  PostedEvents posted;
  std::unique_ptr<EventSource> source;
  for (const EventSourceEntry& entry : BuiltinEventSources().entries()) {
    if (entry.name == "training") source = entry.create(config, EventSourceContext{&posted});
  }
  ASSERT_NE(source, nullptr);
  TrainingHang hang;
  hang.job = "1234";
  hang.rank = 3;
  hang.gpu = "2";
  hang.uuid = "GPU-abc";
  hang.comm = 0xab;
  hang.seq = 18;
  hang.op = 4;
  hang.furthest_seq = 20;
  hang.stalled_seconds = 65.4;
  ASSERT_TRUE(posted.Post(TrainingHangEvent(hang, "node7", 42)));
  int lines = 0;
  ASSERT_TRUE(
      source
          ->Poll([&](const EventLine& line) {
            ++lines;
            EXPECT_EQ(line.time_unix_ns, 42);
            EXPECT_EQ(line.origin, "training");
            EXPECT_EQ(line.text,
                      "training_hang: rank 3 of job 1234 on node7 GPU 2 has not passed collective seq 18 "
                      "(all_reduce) on communicator 0x00000000000000ab for 65 s while other ranks "
                      "reached seq 20");
            ASSERT_NE(line.event, nullptr);
            EXPECT_EQ(line.event->event_class, "training_hang");
            EXPECT_EQ(line.event->severity, EventSeverity::kError);
            EXPECT_EQ(line.event->fields,
                      (std::vector<std::pair<std::string, std::string>>{{"job_id", "1234"},
                                                                        {"rank", "3"},
                                                                        {"Hostname", "node7"},
                                                                        {"UUID", "GPU-abc"},
                                                                        {"comm", "0x00000000000000ab"},
                                                                        {"seq", "18"},
                                                                        {"op", "all_reduce"},
                                                                        {"furthest_seq", "20"},
                                                                        {"stalled_seconds", "65"}}));
          })
          .ok());
  EXPECT_EQ(lines, 1);
}

// The event path creates only what the config turns on and runs it end to end: a file source into the
// queue of one sink, whose metrics and the file source's are those of the events collector.
TEST_F(EventRegistryTest, TheEventPathRunsWhatTheConfigTurnsOn) {
  AgentConfig config;
  config.events_state_dir = (dir_ / "state").string();
  config.events_files = {(dir_ / "logs" / "*.out").string()};
  config.loki_url = "http://127.0.0.1:1/loki/api/v1/push";
  config.events_poll_interval = std::chrono::hours(1);
  std::ofstream(dir_ / "logs" / "slurm-2.out")
      << "slurmstepd: error: *** JOB 2 ON node1 CANCELLED AT 2026-11-29T10:00:00 DUE TO TIME LIMIT ***\n";
  std::unique_ptr<EventPath> path;
  ASSERT_TRUE(EventPath::Create(config, "node1", nullptr, nullptr, nullptr, nullptr, nullptr, &path).ok());
  ASSERT_NE(path, nullptr);
  std::unique_ptr<Collector> collector = path->MakeCollector();
  std::vector<MetricFamily> families;
  ASSERT_TRUE(path->Start().ok());
  path->Stop();  // the first poll has run
  ASSERT_TRUE(collector->Collect(families).ok());
  ExpectDescribed(families, EventPath::Describe(), "events collector");
  std::set<std::string> sources, sinks;
  for (const MetricFamily& f : families) {
    for (const Sample& s : f.samples) {
      for (const auto& [k, v] : s.labels) {
        if (k == "source" && f.name == "gpuscope_event_lines_total") sources.insert(v);
        if (k == "sink") sinks.insert(v);
      }
    }
    if (f.name == "gpuscope_events_shipped_total") {
      EXPECT_EQ(f.samples.at(0).value, 1);
    }
    EXPECT_NE(f.name, "gpuscope_kmsg_overruns_total");  // kmsg is off
  }
  EXPECT_EQ(sources, (std::set<std::string>{"file"}));
  EXPECT_EQ(sinks, (std::set<std::string>{"loki"}));
}

}  // namespace
}  // namespace gpuscope
