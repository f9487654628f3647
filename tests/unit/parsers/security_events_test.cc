#include "src/parsers/security_events.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_SECURITY_FIXTURES) + "/" + name, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Extra(const SecurityEvent& e, const std::string& key) {
  for (const auto& [k, v] : e.extra) {
    if (k == key) return v;
  }
  return "<absent>";
}

TEST(FalcoEventTest, FixtureLineGivesRulePriorityProcessAndTime) {
  const std::vector<std::string> lines = FixtureLines("falco.jsonl");
  ASSERT_EQ(lines.size(), 7u);
  SecurityEvent e;
  ASSERT_TRUE(ParseFalcoEvent(lines[0], &e).ok());
  EXPECT_EQ(e.tool, SecurityTool::kFalco);
  EXPECT_EQ(e.rule, "Read sensitive file untrusted");
  EXPECT_EQ(e.priority, "warning");
  EXPECT_EQ(e.severity, "warning");
  EXPECT_EQ(e.pid, "4242");
  EXPECT_EQ(e.process, "cat");
  EXPECT_EQ(e.user, "alice");
  EXPECT_EQ(e.container_id, "host");
  EXPECT_EQ(e.pod, "");
  EXPECT_EQ(e.time_unix_ns, 1714645205408091526);
  EXPECT_EQ(Extra(e, "falco_source"), "syscall");
  EXPECT_EQ(Extra(e, "cmdline"), "cat /etc/shadow");
  EXPECT_EQ(Extra(e, "fd_name"), "/etc/shadow");
  EXPECT_EQ(Extra(e, "hostname"), "gpu-node-03");
  EXPECT_EQ(Extra(e, "tags"), "T1555,container,filesystem,host,maturity_stable,mitre_credential_access");
  EXPECT_NE(e.summary.find("Sensitive file opened"), std::string::npos);
}

TEST(FalcoEventTest, KubernetesFieldsAndAPidWrittenAsAString) {
  const std::vector<std::string> lines = FixtureLines("falco.jsonl");
  SecurityEvent e;
  ASSERT_TRUE(ParseFalcoEvent(lines[1], &e).ok());
  EXPECT_EQ(e.pod, "trainer-0");
  EXPECT_EQ(e.namespace_name, "research");
  EXPECT_EQ(e.container_id, "3f9a0c1d2e4b");
  ASSERT_TRUE(ParseFalcoEvent(lines[2], &e).ok());
  EXPECT_EQ(e.pid, "5152");
  EXPECT_EQ(e.time_unix_ns, 1714645320250000000);
}

TEST(FalcoEventTest, EveryPriorityMapsToItsSeverity) {
  const std::pair<const char*, const char*> cases[] = {
      {"Emergency", "critical"}, {"Alert", "critical"},  {"Critical", "critical"},
      {"Error", "error"},        {"Warning", "warning"}, {"Notice", "info"},
      {"Informational", "info"}, {"INFO", "info"},       {"Debug", "debug"},
  };
  for (const auto& [priority, severity] : cases) {
    SecurityEvent e;
    const std::string line = std::string(R"({"rule":"r","priority":")") + priority + R"("})";
    ASSERT_TRUE(ParseFalcoEvent(line, &e).ok()) << priority;
    EXPECT_EQ(e.severity, severity) << priority;
    EXPECT_EQ(e.summary, "r") << "an event without output is summarised by its rule";
  }
}

TEST(FalcoEventTest, FixturePrioritiesCoverTheRange) {
  std::vector<std::string> got;
  for (const std::string& line : FixtureLines("falco.jsonl")) {
    SecurityEvent e;
    ASSERT_TRUE(ParseFalcoEvent(line, &e).ok()) << line;
    got.push_back(e.priority + ">" + e.severity);
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{"warning>warning", "notice>info", "critical>critical", "error>error",
                                      "emergency>critical", "informational>info", "debug>debug"}));
}

TEST(FalcoEventTest, HostileLinesAreErrorsAndTheValidOneStillParses) {
  const std::vector<std::string> lines = FixtureLines("falco-hostile.jsonl");
  ASSERT_EQ(lines.size(), 9u);
  int ok = 0;
  for (const std::string& line : lines) {
    SecurityEvent e;
    Status status = ParseFalcoEvent(line, &e);
    if (status.ok()) {
      ++ok;
      EXPECT_EQ(e.rule, "After hostile lines");
      EXPECT_EQ(e.severity, "critical");
    } else {
      EXPECT_NE(status.message().find("falco event"), std::string::npos) << status.message();
    }
  }
  EXPECT_EQ(ok, 1);
}

TEST(FalcoEventTest, ErrorsSayWhy) {
  SecurityEvent e;
  EXPECT_NE(ParseFalcoEvent("{", &e).message().find("not JSON"), std::string::npos);
  EXPECT_NE(ParseFalcoEvent("[1]", &e).message().find("not a JSON object"), std::string::npos);
  EXPECT_NE(ParseFalcoEvent(R"({"priority":"Warning"})", &e).message().find("no rule"), std::string::npos);
  EXPECT_NE(ParseFalcoEvent(R"({"rule":"r","priority":"Loud"})", &e).message().find("unknown priority"),
            std::string::npos);
  EXPECT_NE(ParseFalcoEvent("{\"rule\":\"\xc3\x28\",\"priority\":\"Debug\"}", &e).message().find("UTF-8"),
            std::string::npos);
  EXPECT_NE(ParseFalcoEvent(std::string(64, '[') + std::string(64, ']'), &e).message().find("nested deeper"),
            std::string::npos);
  EXPECT_NE(ParseFalcoEvent(R"({"rule":"r","priority":"Debug","tags":"x"})", &e).message().find("tags"),
            std::string::npos);
  std::string huge =
      R"({"rule":"r","priority":"Debug","output":")" + std::string(kMaxSecurityLineBytes, 'a') + "\"}";
  EXPECT_NE(ParseFalcoEvent(huge, &e).message().find("longer than"), std::string::npos);
}

TEST(FalcoEventTest, DeepNestingInsideOutputFieldsIsRefusedWithoutRecursion) {
  // A million brackets: refused, and neither the parse nor the tree's destruction recurses that deep.
  std::string deep = R"({"rule":"r","priority":"Debug","output_fields":{"x":)" + std::string(500000, '[') +
                     std::string(500000, ']') + "}}";
  SecurityEvent e;
  EXPECT_FALSE(ParseFalcoEvent(deep, &e).ok());
}

TEST(FalcoEventTest, FieldsAreCappedAndControlCharactersBecomeSpaces) {
  SecurityEvent e;
  const std::string line =
      R"({"rule":"r","priority":"Debug","output_fields":{"proc.name":"a\nb","proc.cmdline":")" +
      std::string(5000, 'x') + R"("}})";
  ASSERT_TRUE(ParseFalcoEvent(line, &e).ok());
  EXPECT_EQ(e.process, "a b");
  EXPECT_EQ(Extra(e, "cmdline").size(), 1024u);
}

TEST(FalcoEventTest, PidThatIsNotOneIsLeftEmpty) {
  SecurityEvent e;
  ASSERT_TRUE(ParseFalcoEvent(R"({"rule":"r","priority":"Debug","output_fields":{"proc.pid":-1}})", &e).ok());
  EXPECT_EQ(e.pid, "");
  ASSERT_TRUE(
      ParseFalcoEvent(R"({"rule":"r","priority":"Debug","output_fields":{"proc.pid":"12ab"}})", &e).ok());
  EXPECT_EQ(e.pid, "");
}

TEST(TetragonEventTest, ExecGivesProcessArgumentsAndInfo) {
  const std::vector<std::string> lines = FixtureLines("tetragon.jsonl");
  ASSERT_EQ(lines.size(), 7u);
  SecurityEvent e;
  ASSERT_TRUE(ParseTetragonEvent(lines[0], &e).ok());
  EXPECT_EQ(e.tool, SecurityTool::kTetragon);
  EXPECT_EQ(e.rule, "process_exec");
  EXPECT_EQ(e.severity, "info");
  EXPECT_EQ(e.priority, "info");
  EXPECT_EQ(e.pid, "4242");
  EXPECT_EQ(e.process, "/usr/bin/curl");
  EXPECT_EQ(e.user, "1001");
  EXPECT_EQ(e.time_unix_ns, 1714646400100000000);
  EXPECT_EQ(Extra(e, "kind"), "process_exec");
  EXPECT_EQ(Extra(e, "arguments"), "-s https://example.org/model.bin");
  EXPECT_EQ(Extra(e, "cwd"), "/home/alice");
  EXPECT_EQ(Extra(e, "node_name"), "gpu-node-03");
  EXPECT_EQ(Extra(e, "parent_process"), "/usr/bin/bash");
  EXPECT_EQ(e.summary, "process_exec /usr/bin/curl -s https://example.org/model.bin");
}

TEST(TetragonEventTest, KprobeWithAPolicyInAPodIsAWarning) {
  SecurityEvent e;
  ASSERT_TRUE(ParseTetragonEvent(FixtureLines("tetragon.jsonl")[1], &e).ok());
  EXPECT_EQ(e.rule, "file-monitoring");
  EXPECT_EQ(e.severity, "warning");
  EXPECT_EQ(e.pod, "trainer-0");
  EXPECT_EQ(e.namespace_name, "research");
  EXPECT_EQ(e.container_id, "containerd://3f9a0c1d2e4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5");
  EXPECT_EQ(Extra(e, "function_name"), "security_file_permission");
  EXPECT_EQ(Extra(e, "action"), "KPROBE_ACTION_POST");
}

TEST(TetragonEventTest, SeverityFollowsKindPolicyAndAction) {
  std::vector<std::string> got;
  for (const std::string& line : FixtureLines("tetragon.jsonl")) {
    SecurityEvent e;
    ASSERT_TRUE(ParseTetragonEvent(line, &e).ok()) << line;
    got.push_back(Extra(e, "kind") + ":" + e.rule + ">" + e.severity);
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "process_exec:process_exec>info",
                     "process_kprobe:file-monitoring>warning",
                     "process_kprobe:block-mining-pools>critical",  // SIGKILL enforces
                     "process_tracepoint:ptrace-watch>warning",
                     "process_lsm:lsm-exec>critical",  // OVERRIDE enforces
                     "process_uprobe:cuda-alloc>warning",
                     "process_exit:process_exit>info",
                 }));
  SecurityEvent e;
  ASSERT_TRUE(ParseTetragonEvent(R"({"process_kprobe":{"function_name":"f"}})", &e).ok());
  EXPECT_EQ(e.severity, "info") << "a kprobe without a policy";
  ASSERT_TRUE(ParseTetragonEvent(R"({"process_loader":{"process":{"pid":1}}})", &e).ok());
  EXPECT_EQ(e.severity, "debug");
}

TEST(TetragonEventTest, TracepointHookAndStringIntegers) {
  SecurityEvent e;
  ASSERT_TRUE(ParseTetragonEvent(FixtureLines("tetragon.jsonl")[3], &e).ok());
  EXPECT_EQ(Extra(e, "function_name"), "syscalls/sys_enter_ptrace");
  EXPECT_EQ(e.pid, "6001");
  EXPECT_EQ(e.user, "1002");
}

TEST(TetragonEventTest, HostileLinesAreErrorsAndTheValidOneStillParses) {
  const std::vector<std::string> lines = FixtureLines("tetragon-hostile.jsonl");
  ASSERT_EQ(lines.size(), 6u);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    SecurityEvent e;
    Status status = ParseTetragonEvent(lines[i], &e);
    EXPECT_FALSE(status.ok()) << lines[i];
    EXPECT_NE(status.message().find("tetragon event"), std::string::npos) << status.message();
  }
  SecurityEvent e;
  ASSERT_TRUE(ParseTetragonEvent(lines.back(), &e).ok());
  EXPECT_EQ(e.process, "/bin/true");
}

TEST(TetragonEventTest, ErrorsSayWhy) {
  SecurityEvent e;
  EXPECT_NE(ParseTetragonEvent(R"({"node_name":"n"})", &e).message().find("no event kind"),
            std::string::npos);
  EXPECT_NE(ParseTetragonEvent(R"({"a":{},"b":{}})", &e).message().find("more than one"), std::string::npos);
  EXPECT_NE(ParseTetragonEvent(R"({"process_exec":{"process":{"pid":[1]}}})", &e).message().find("scalar"),
            std::string::npos);
}

TEST(Rfc3339Test, ParsesFractionsAndOffsets) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseRfc3339Nanos("1970-01-01T00:00:00Z", &ns));
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(ParseRfc3339Nanos("2024-05-02T10:20:05.4Z", &ns));
  EXPECT_EQ(ns, 1714645205400000000);
  ASSERT_TRUE(ParseRfc3339Nanos("2024-05-02T12:20:05.000000001+02:00", &ns));
  EXPECT_EQ(ns, 1714645205000000001);
  ASSERT_TRUE(ParseRfc3339Nanos("2024-05-02T10:20:05.1234567891234Z", &ns)) << "beyond nanoseconds: cut";
  EXPECT_EQ(ns, 1714645205123456789);
  for (const char* bad : {"", "2024-05-02", "2024-13-02T10:20:05Z", "2024-05-02T10:20:05",
                          "2024-05-02T10:20:05.Z", "2024-05-02T10:20:05+2:00", "yyyy-05-02T10:20:05Z"}) {
    EXPECT_FALSE(ParseRfc3339Nanos(bad, &ns)) << bad;
  }
}

}  // namespace
}  // namespace gpuscope
