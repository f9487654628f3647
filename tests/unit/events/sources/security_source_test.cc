#include "src/events/sources/security_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_SECURITY_FIXTURES) + "/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What the pipeline would see of one line.
struct Seen {
  std::string text;
  std::string origin;
  int64_t time_unix_ns;
  Event event;
};

class SecuritySourceTest : public ::testing::Test {
 protected:
  SecuritySourceTest() {
    std::string tmpl = (fs::temp_directory_path() / "gpuscope_security_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    fs::create_directories(P("proc/4242"));
    std::ofstream(P("proc/4242/cgroup")) << "0::/system.slice/slurmstepd.scope/job_4101/step_0/user/task_0\n";
    fs::create_directories(P("proc/5151"));  // a pod's process: no Slurm job
    std::ofstream(P("proc/5151/cgroup")) << "0::/kubepods.slice/kubepods-pod1.slice\n";
  }
  ~SecuritySourceTest() override { fs::remove_all(dir_); }

  std::string P(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  void Append(const std::string& name, const std::string& data) const {
    std::ofstream(P(name), std::ios::binary | std::ios::app) << data;
  }
  SecuritySource::Options Opts(SecurityTool tool, const std::string& glob) const {
    SecuritySource::Options o;
    o.tool = tool;
    o.files.globs = {P(glob)};
    o.files.checkpoint_path = P(tool == SecurityTool::kFalco ? "falco.ckpt" : "tetragon.ckpt");
    o.procfs = P("proc");
    return o;
  }
  static std::vector<Seen> Poll(SecuritySource& source) {
    std::vector<Seen> seen;
    Status status = source.Poll([&](const EventLine& line) {
      EXPECT_NE(line.event, nullptr) << "every line comes with its event: the classifiers are skipped";
      if (line.event == nullptr) return;
      seen.push_back(Seen{std::string(line.text), std::string(line.origin), line.time_unix_ns, *line.event});
    });
    EXPECT_TRUE(status.ok()) << status.ToString();
    return seen;
  }
  static double Count(const SecuritySource& source, const std::string& rule, const std::string& priority) {
    std::vector<MetricFamily> families;
    source.AppendMetrics(families);
    EXPECT_EQ(families.at(0).name, "gpuscope_security_events_total");
    for (const Sample& s : families.at(0).samples) {
      if (s.labels ==
          Labels{{"source", std::string(source.Name())}, {"rule", rule}, {"priority", priority}}) {
        return s.value;
      }
    }
    return 0;
  }

  std::string dir_;
};

TEST_F(SecuritySourceTest, FalcoLinesBecomeFalcoEventsWithFieldsInOrderAndTheJobOfTheirPid) {
  Append("falco.json", Fixture("falco.jsonl"));
  SecuritySource source(Opts(SecurityTool::kFalco, "falco*.json"));
  EXPECT_EQ(source.Name(), "falco");
  std::vector<Seen> seen = Poll(source);
  ASSERT_EQ(seen.size(), 7u);
  const Event& first = seen[0].event;
  EXPECT_EQ(first.event_class, "falco");
  EXPECT_EQ(first.severity, EventSeverity::kWarning);
  std::vector<std::string> keys;
  for (const auto& [key, value] : first.fields) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"rule", "priority", "pid", "process", "process_user",
                                            "container_id", "pod", "namespace", "falco_source", "cmdline",
                                            "fd_name", "hostname", "tags", "job_id"}));
  EXPECT_EQ(first.Field("job_id"), "4101") << "pid 4242's cgroup is job 4101's";
  EXPECT_EQ(seen[0].time_unix_ns, 1714645205408091526);
  EXPECT_EQ(seen[0].origin, P("falco.json"));
  // The line is Falco's output text, not the JSON (whose fields are the event's fields).
  EXPECT_EQ(seen[0].text.substr(0, 41), "2024-05-02T10:20:05.408091526Z: Warning S");
  EXPECT_EQ(seen[1].event.Field("pod"), "trainer-0");
  EXPECT_EQ(seen[1].event.Field("job_id"), "") << "pid 5151 has no /proc entry";
  EXPECT_EQ(seen[2].event.severity, EventSeverity::kCritical);
  EXPECT_EQ(seen[3].event.severity, EventSeverity::kError);
  EXPECT_EQ(seen[5].event.severity, EventSeverity::kInfo);
  EXPECT_EQ(seen[6].event.severity, EventSeverity::kDebug);
  EXPECT_EQ(Count(source, "Read sensitive file untrusted", "warning"), 1);
  EXPECT_EQ(Count(source, "Drift Detected (chmod)", "critical"), 1);
  EXPECT_EQ(source.counters().read_errors, 0u);
}

TEST_F(SecuritySourceTest, TetragonLinesBecomeTetragonEventsAndAPodProcessHasNoJob) {
  Append("tetragon.log", Fixture("tetragon.jsonl"));
  SecuritySource source(Opts(SecurityTool::kTetragon, "tetragon.log"));
  EXPECT_EQ(source.Name(), "tetragon");
  std::vector<Seen> seen = Poll(source);
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen[0].event.event_class, "tetragon");
  EXPECT_EQ(seen[0].event.Field("job_id"), "4101");
  EXPECT_EQ(seen[1].event.Field("job_id"), "") << "pid 5151's cgroup is a pod's";
  EXPECT_EQ(seen[1].event.Field("namespace"), "research");
  EXPECT_EQ(seen[2].event.severity, EventSeverity::kCritical);
  EXPECT_EQ(seen[2].event.Field("rule"), "block-mining-pools");
  EXPECT_EQ(seen[2].event.Field("kind"), "process_kprobe");
  EXPECT_EQ(Count(source, "block-mining-pools", "critical"), 1);
  EXPECT_EQ(Count(source, "process_exec", "info"), 1);
}

TEST_F(SecuritySourceTest, HostileLinesAreReadErrorsAndTheOthersStillFlow) {
  Append("falco.json", Fixture("falco-hostile.jsonl"));
  SecuritySource source(Opts(SecurityTool::kFalco, "falco.json"));
  std::vector<Seen> seen = Poll(source);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].event.Field("rule"), "After hostile lines");
  EXPECT_EQ(source.counters().read_errors, 8u);

  Append("tetragon.log", Fixture("tetragon-hostile.jsonl"));
  SecuritySource tetragon(Opts(SecurityTool::kTetragon, "tetragon.log"));
  EXPECT_EQ(Poll(tetragon).size(), 1u);
  EXPECT_EQ(tetragon.counters().read_errors, 5u);
}

TEST_F(SecuritySourceTest, ResumesFromItsCheckpointAndFollowsRotation) {
  const std::string fixture = Fixture("falco.jsonl");
  const size_t second = fixture.find('\n') + 1;
  Append("falco.json", fixture.substr(0, second));
  {
    SecuritySource source(Opts(SecurityTool::kFalco, "falco*.json"));
    EXPECT_EQ(Poll(source).size(), 1u);
  }
  Append("falco.json", fixture.substr(second));
  SecuritySource restarted(Opts(SecurityTool::kFalco, "falco*.json"));
  std::vector<Seen> seen = Poll(restarted);
  ASSERT_EQ(seen.size(), 6u) << "the first line is not read again";
  EXPECT_EQ(seen[0].event.Field("rule"), "Terminal shell in container");

  // Falco's file_output rotated by logrotate: the old file is renamed out of the glob, a new one starts.
  Append("falco.json", fixture.substr(0, second));
  fs::rename(P("falco.json"), P("falco.json.1"));
  Append("falco.json", fixture.substr(second, fixture.find('\n', second) + 1 - second));
  seen = Poll(restarted);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].event.Field("rule"), "Read sensitive file untrusted");
  EXPECT_EQ(seen[1].event.Field("rule"), "Terminal shell in container");
  EXPECT_EQ(Count(restarted, "Terminal shell in container", "notice"), 2);
}

TEST_F(SecuritySourceTest, DistinctRulesAreBoundedThenCountedAsOther) {
  std::string lines;
  for (int i = 0; i < 5; ++i)
    lines += R"({"rule":"rule )" + std::to_string(i) +
             R"(","priority":"Notice"})"
             "\n";
  Append("falco.json", lines);
  SecuritySource::Options o = Opts(SecurityTool::kFalco, "falco.json");
  o.max_rules = 3;
  SecuritySource source(o);
  EXPECT_EQ(Poll(source).size(), 5u) << "every event still flows";
  EXPECT_EQ(Count(source, "rule 0", "notice"), 1);
  EXPECT_EQ(Count(source, "rule 2", "notice"), 1);
  EXPECT_EQ(Count(source, "rule 3", "notice"), 0);
  EXPECT_EQ(Count(source, "other", "notice"), 2);
  Append("falco.json", R"({"rule":"rule 1","priority":"Notice"})"
                       "\n");
  Poll(source);
  EXPECT_EQ(Count(source, "rule 1", "notice"), 2) << "a rule already counted keeps its own series";
}

TEST_F(SecuritySourceTest, PostedFalcoEventsFlowWithTheFileOnes) {
  PostedEvents posted(2);
  SecuritySource::Options o;
  o.tool = SecurityTool::kFalco;
  o.procfs = P("proc");
  o.posted = &posted;
  SecuritySource source(o);  // no files: Falco over HTTP only
  PostedEvent event;
  const std::string first_line = Fixture("falco.jsonl").substr(0, Fixture("falco.jsonl").find('\n'));
  ASSERT_TRUE(SecurityEventForPost(first_line, P("proc"), &event).ok());
  EXPECT_EQ(event.event.Field("job_id"), "4101");
  EXPECT_TRUE(posted.Post(event));
  EXPECT_FALSE(SecurityEventForPost("{not json", P("proc"), &event).ok());
  std::vector<Seen> seen = Poll(source);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].origin, "http_output");
  EXPECT_EQ(seen[0].text, event.event.summary);
  EXPECT_EQ(seen[0].text.substr(0, 41), "2024-05-02T10:20:05.408091526Z: Warning S");
  EXPECT_EQ(seen[0].time_unix_ns, 1714645205408091526);
  EXPECT_EQ(Count(source, "Read sensitive file untrusted", "warning"), 1);
}

TEST_F(SecuritySourceTest, DescribeNamesTheFamiliesItAppends) {
  EXPECT_EQ(SecuritySource::Describe(SecurityTool::kTetragon).size(), 1u);
  std::vector<MetricDescription> d = SecuritySource::Describe(SecurityTool::kFalco);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "gpuscope_security_events_total");
  EXPECT_EQ(d[0].labels, (std::vector<std::string>{"source", "rule", "priority"}));
  EXPECT_EQ(d[1].name, "gpuscope_event_posted_dropped_total");  // with Falco over HTTP
  PostedEvents posted;
  SecuritySource::Options o;
  o.posted = &posted;
  std::vector<MetricFamily> families;
  SecuritySource(o).AppendMetrics(families);
  ASSERT_EQ(families.size(), d.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(families[i].name, d[i].name);
}

// Falco's http_output bodies (the route POST /api/v1/falco hands them over as they came).
TEST_F(SecuritySourceTest, PostFalcoEventsQueuesEveryLineOfABody) {
  PostedEvents posted;
  const std::string fixture = Fixture("falco.jsonl");
  ASSERT_TRUE(PostFalcoEvents(fixture, P("proc"), &posted).ok());
  std::vector<PostedEvent> queued = posted.Take();
  ASSERT_EQ(queued.size(), 7u);
  EXPECT_EQ(queued[0].event.Field("rule"), "Read sensitive file untrusted");
  EXPECT_EQ(queued[0].event.Field("job_id"), "4101");
  EXPECT_EQ(queued[0].origin, "http_output");
  // One object without a newline (what Falco sends), and CRLF with blank lines around.
  const std::string first = fixture.substr(0, fixture.find('\n'));
  ASSERT_TRUE(PostFalcoEvents(first, P("proc"), &posted).ok());
  ASSERT_TRUE(PostFalcoEvents("\r\n" + first + "\r\n\r\n", P("proc"), &posted).ok());
  EXPECT_EQ(posted.Take().size(), 2u);
}

TEST_F(SecuritySourceTest, PostFalcoEventsQueuesNothingOfABodyWithALineThatDoesNotParse) {
  PostedEvents posted;
  const std::string fixture = Fixture("falco.jsonl");
  Status status = PostFalcoEvents(fixture + "{not json\n", P("proc"), &posted);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(status.message().starts_with("line 8: ")) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos);
  EXPECT_TRUE(posted.Take().empty());
  EXPECT_EQ(PostFalcoEvents("", P("proc"), &posted).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(PostFalcoEvents("\n \n", P("proc"), &posted).code(), Status::Code::kInvalidArgument);
}

TEST_F(SecuritySourceTest, PostFalcoEventsIntoAFullQueueIsUnavailableAndCountsTheLost) {
  PostedEvents posted(2);
  Status status = PostFalcoEvents(Fixture("falco.jsonl"), P("proc"), &posted);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message(), "5 of 7 events lost: too many wait for the event pipeline");
  EXPECT_EQ(posted.dropped(), 5u);
  EXPECT_EQ(posted.Take().size(), 2u);
}

}  // namespace
}  // namespace gpuscope
