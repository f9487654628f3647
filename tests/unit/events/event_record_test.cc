#include "src/events/event_record.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscope {
namespace {

EventRecord SampleRecord() {
  EventRecord r;
  r.time_unix_ns = 1795958583913263300;
  r.host = "gpu-node-07";
  r.source = "file";
  r.origin = "/var/log/slurm/slurm-4242.out";
  static constexpr char kLine[] = "NCCL WARN NET/IB : Got completion from peer\0with status=12";
  r.line = std::string(kLine, sizeof(kLine) - 1);
  r.event.event_class = "ib_completion";
  r.event.severity = EventSeverity::kError;
  r.event.summary = "IB completion error";
  r.event.fields = {{"status", "12"}, {"message", "long text"}, {"job_id", "4242"}, {"empty", ""}};
  r.job_id = "4242";
  r.user = "alice";
  r.account = "ml";
  r.gpu = "3";
  r.uuid = "GPU-abc";
  return r;
}

TEST(EventRecordTest, RoundTripsEveryField) {
  const EventRecord in = SampleRecord();
  std::optional<EventRecord> out = DecodeEventRecord(EncodeEventRecord(in));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->time_unix_ns, in.time_unix_ns);
  EXPECT_EQ(out->host, in.host);
  EXPECT_EQ(out->source, in.source);
  EXPECT_EQ(out->origin, in.origin);
  EXPECT_EQ(out->line, in.line);  // NUL byte included
  EXPECT_EQ(out->event.event_class, in.event.event_class);
  EXPECT_EQ(out->event.severity, in.event.severity);
  EXPECT_EQ(out->event.summary, in.event.summary);
  EXPECT_EQ(out->event.fields, in.event.fields);
  EXPECT_EQ(out->job_id, in.job_id);
  EXPECT_EQ(out->user, in.user);
  EXPECT_EQ(out->account, in.account);
  EXPECT_EQ(out->gpu, in.gpu);
  EXPECT_EQ(out->uuid, in.uuid);
}

TEST(EventRecordTest, RejectsEveryTruncationAndTrailingBytes) {
  const std::string bytes = EncodeEventRecord(SampleRecord());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeEventRecord(bytes.substr(0, n)).has_value()) << "prefix of " << n << " bytes";
  }
  EXPECT_FALSE(DecodeEventRecord(bytes + "x").has_value());
}

TEST(EventRecordTest, RejectsBadMagicAndSeverity) {
  std::string bytes = EncodeEventRecord(SampleRecord());
  std::string bad_magic = bytes;
  bad_magic[3] = '2';
  EXPECT_FALSE(DecodeEventRecord(bad_magic).has_value());
  EventRecord r = SampleRecord();
  r.event.severity = static_cast<EventSeverity>(9);
  EXPECT_FALSE(DecodeEventRecord(EncodeEventRecord(r)).has_value());
}

TEST(EventRecordTest, MetadataPutsAttributionFirstAndLeavesOutTheMessage) {
  auto metadata = EventRecordMetadata(SampleRecord());
  std::vector<std::pair<std::string, std::string>> expected = {{"hpc_job", "4242"}, {"user", "alice"},
                                                               {"account", "ml"},   {"gpu", "3"},
                                                               {"UUID", "GPU-abc"}, {"status", "12"}};
  EXPECT_EQ(metadata, expected);
}

}  // namespace
}  // namespace gpuscope
