// Events to the wire: queue records through the Loki and OTLP event encoders, decoded again by the test
// receiver's decoders (written from the wire formats, not from our encoders).
#include "src/sinks/loki/loki_events.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/events/event_record.h"
#include "src/sinks/otlp/otlp_events.h"
#include "tests/tools/push_receiver/push_decoder.h"

namespace gpuscope {
namespace {

EventRecord Record(std::string event_class, EventSeverity severity, std::string line, std::string job) {
  EventRecord r;
  r.time_unix_ns = 1795958583000000001;
  r.host = "node7";
  r.source = "file";
  r.origin = "/logs/slurm-" + job + ".out";
  r.line = std::move(line);
  r.event.event_class = std::move(event_class);
  r.event.severity = severity;
  r.event.fields = {{"xid", "79"}, {"action", "reboot"}, {"message", "not in metadata"}};
  r.job_id = std::move(job);
  r.user = "alice";
  r.gpu = "1";
  r.uuid = "GPU-one";
  return r;
}

std::vector<std::string> Records() {
  return {EncodeEventRecord(Record("xid", EventSeverity::kCritical, "NVRM: Xid 79", "4242")),
          EncodeEventRecord(Record("nccl", EventSeverity::kWarning, "NCCL WARN \"quoted\"", "4243")),
          "not a record"};
}

void ExpectLokiEntries(const std::vector<std::string>& lines) {
  ASSERT_EQ(lines.size(), 2u);
  // Stream labels are the low-cardinality four; the job is structured metadata, never a label.
  for (const char* want : {"\"host\":\"node7\"", "\"source\":\"file\"", "\"class\":\"xid\"",
                           "\"severity\":\"critical\"", "\"hpc_job\":\"4242\"", "\"UUID\":\"GPU-one\"",
                           "\"action\":\"reboot\"", "NVRM: Xid 79", "1795958583000000001"}) {
    EXPECT_NE(lines[0].find(want), std::string::npos) << want << " in " << lines[0];
  }
  EXPECT_EQ(lines[0].find("not in metadata"), std::string::npos);
  EXPECT_NE(lines[1].find("\"class\":\"nccl\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"hpc_job\":\"4243\""), std::string::npos) << lines[1];
}

TEST(EventsWireTest, LokiProtobufCarriesLabelsMetadataAndLines) {
  size_t undecodable = 0;
  std::string body = LokiBodyForRecords(Records(), LokiFormat::kProtobuf, &undecodable);
  EXPECT_EQ(undecodable, 1u);
  std::vector<std::string> lines;
  std::string error;
  ASSERT_TRUE(testing::DecodeLokiPush(body, false, &lines, &error)) << error;
  ExpectLokiEntries(lines);
}

TEST(EventsWireTest, LokiJsonCarriesTheSame) {
  std::string body = LokiBodyForRecords(Records(), LokiFormat::kJson, nullptr);
  std::vector<std::string> lines;
  std::string error;
  ASSERT_TRUE(testing::DecodeLokiPush(body, true, &lines, &error)) << error;
  ExpectLokiEntries(lines);
}

TEST(EventsWireTest, OtlpRecordsCarrySeverityAttributesAndResource) {
  size_t undecodable = 0;
  std::string body = OtlpBodyForRecords(Records(), &undecodable);
  EXPECT_EQ(undecodable, 1u);
  std::vector<std::string> lines;
  std::string error;
  ASSERT_TRUE(testing::DecodeOtlpLogs(body, &lines, &error)) << error;
  ASSERT_EQ(lines.size(), 2u);
  for (const char* want :
       {"NVRM: Xid 79", "\"event.class\":\"xid\"", "\"hpc_job\":\"4242\"", "\"gpuscope.action\":\"reboot\"",
        "\"host.name\":\"node7\"", "\"service.name\":\"gpuscope-agent\"",
        "\"log.file.path\":\"/logs/slurm-4242.out\""}) {
    EXPECT_NE(lines[0].find(want), std::string::npos) << want << " in " << lines[0];
  }
  EXPECT_NE(lines[0].find("\"severity_number\":21"), std::string::npos) << lines[0];  // FATAL for critical
  EXPECT_NE(lines[1].find("\"event.class\":\"nccl\""), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
