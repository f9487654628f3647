#include "src/sinks/otlp/otlp_logs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"
#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope {
namespace {

using testing::FieldsNumbered;
using testing::ParseProtoFields;
using testing::ProtoField;

std::vector<ProtoField> MustParse(std::string_view bytes) {
  auto fields = ParseProtoFields(bytes);
  EXPECT_TRUE(fields.has_value());
  return fields.value_or(std::vector<ProtoField>{});
}

// The single field numbered `number`, which must be present exactly once with `wire_type`.
ProtoField One(const std::vector<ProtoField>& fields, uint32_t number, uint8_t wire_type) {
  const auto matches = FieldsNumbered(fields, number);
  EXPECT_EQ(matches.size(), 1u) << "field " << number;
  if (matches.size() != 1) return {};
  EXPECT_EQ(matches[0].wire_type, wire_type) << "field " << number;
  return matches[0];
}

// KeyValue { key = 1; AnyValue value = 2 { string_value = 1 } } → (key, string value).
std::pair<std::string, std::string> DecodeKeyValue(std::string_view bytes) {
  const auto kv = MustParse(bytes);
  EXPECT_EQ(kv.size(), 2u);
  const auto key = One(kv, 1, 2);
  const auto any = MustParse(One(kv, 2, 2).bytes);
  EXPECT_EQ(any.size(), 1u);
  return {std::string(key.bytes), std::string(One(any, 1, 2).bytes)};
}

OtlpLogsBatch SampleBatch() {
  OtlpLogsBatch batch;
  batch.resource_attributes = {{"service.name", "gpuscope"}, {"host.name", "n1"}};
  batch.scope_version = "0.1.0";
  batch.records.push_back({1700000000123456789ull,
                           1700000000200000000ull,
                           OtlpSeverityNumberFor("critical"),
                           "critical",
                           "NVRM: Xid (PCI:0000:3b:00): 79, GPU fell off",
                           {{"class", "xid"}, {"job_id", "4242"}}});
  batch.records.push_back(
      {0, 1700000001000000000ull, OtlpSeverityNumberFor("warning"), "warning", "NCCL WARN timeout", {}});
  return batch;
}

TEST(WireOtlp, SeverityWordsMapToOtlpSeverityNumbers) {
  EXPECT_EQ(OtlpSeverityNumberFor("critical"), 21);
  EXPECT_EQ(OtlpSeverityNumberFor("error"), 17);
  EXPECT_EQ(OtlpSeverityNumberFor("warning"), 13);
  EXPECT_EQ(OtlpSeverityNumberFor("info"), 9);
  EXPECT_EQ(OtlpSeverityNumberFor("debug"), 5);
  EXPECT_EQ(OtlpSeverityNumberFor("bogus"), 0);
}

TEST(WireOtlp, WireOtlpLogsProtobufDecodedByTestReceiverHasEveryFieldAtItsNumber) {
  const auto batch = SampleBatch();
  const std::string body = EncodeOtlpLogsRequest(batch);

  const auto request = MustParse(body);  // ExportLogsServiceRequest
  ASSERT_EQ(request.size(), 1u);
  const auto resource_logs = MustParse(One(request, 1, 2).bytes);  // resource_logs = 1
  ASSERT_EQ(resource_logs.size(), 2u);

  const auto resource = MustParse(One(resource_logs, 1, 2).bytes);  // ResourceLogs.resource = 1
  const auto resource_attributes = FieldsNumbered(resource, 1);     // Resource.attributes = 1
  ASSERT_EQ(resource_attributes.size(), 2u);
  EXPECT_EQ(DecodeKeyValue(resource_attributes[0].bytes),
            (std::pair<std::string, std::string>{"service.name", "gpuscope"}));
  EXPECT_EQ(DecodeKeyValue(resource_attributes[1].bytes),
            (std::pair<std::string, std::string>{"host.name", "n1"}));

  const auto scope_logs = MustParse(One(resource_logs, 2, 2).bytes);  // ResourceLogs.scope_logs = 2
  const auto scope = MustParse(One(scope_logs, 1, 2).bytes);          // ScopeLogs.scope = 1
  EXPECT_EQ(One(scope, 1, 2).bytes, "gpuscope");                      // InstrumentationScope.name
  EXPECT_EQ(One(scope, 2, 2).bytes, "0.1.0");                         // InstrumentationScope.version
  const auto records = FieldsNumbered(scope_logs, 2);                 // ScopeLogs.log_records = 2
  ASSERT_EQ(records.size(), 2u);

  const auto first = MustParse(records[0].bytes);
  EXPECT_EQ(One(first, 1, 1).scalar, 1700000000123456789ull);  // time_unix_nano, fixed64
  EXPECT_EQ(One(first, 2, 0).scalar, 21u);                     // severity_number FATAL
  EXPECT_EQ(One(first, 3, 2).bytes, "critical");               // severity_text
  const auto body_value = MustParse(One(first, 5, 2).bytes);   // body AnyValue
  EXPECT_EQ(One(body_value, 1, 2).bytes, batch.records[0].body);
  const auto attributes = FieldsNumbered(first, 6);  // attributes = 6
  ASSERT_EQ(attributes.size(), 2u);
  EXPECT_EQ(DecodeKeyValue(attributes[0].bytes), (std::pair<std::string, std::string>{"class", "xid"}));
  EXPECT_EQ(DecodeKeyValue(attributes[1].bytes), (std::pair<std::string, std::string>{"job_id", "4242"}));
  EXPECT_EQ(One(first, 11, 1).scalar, 1700000000200000000ull);  // observed_time_unix_nano, fixed64
  EXPECT_EQ(first.size(), 7u);

  const auto second = MustParse(records[1].bytes);
  EXPECT_TRUE(FieldsNumbered(second, 1).empty());  // unknown time is omitted, not zero
  EXPECT_EQ(One(second, 2, 0).scalar, 13u);
  EXPECT_EQ(One(second, 11, 1).scalar, 1700000001000000000ull);
  EXPECT_TRUE(FieldsNumbered(second, 6).empty());
}

TEST(WireOtlp, HostileBodiesInvalidUtf8NulAndMegabyteEncodeAsValidUtf8Strings) {
  OtlpLogsBatch batch;
  std::string huge(2 * 1024 * 1024, 'y');
  huge[5] = '\x80';
  batch.records.push_back({1, 1, 9, "info\xff", std::string("a\0b\xfe", 4), {{"k", "\xc3"}}});
  batch.records.push_back({2, 2, 9, "info", huge, {}});
  const std::string body = EncodeOtlpLogsRequest(batch);
  const auto request = MustParse(body);
  const auto resource_logs = MustParse(One(request, 1, 2).bytes);
  const auto scope_logs = MustParse(One(resource_logs, 2, 2).bytes);
  const auto records = FieldsNumbered(scope_logs, 2);
  ASSERT_EQ(records.size(), 2u);
  const auto first = MustParse(records[0].bytes);
  EXPECT_EQ(One(first, 3, 2).bytes, "info\xef\xbf\xbd");
  EXPECT_EQ(One(MustParse(One(first, 5, 2).bytes), 1, 2).bytes, std::string_view("a\0b\xef\xbf\xbd", 6));
  EXPECT_EQ(DecodeKeyValue(One(first, 6, 2).bytes).second, "\xef\xbf\xbd");
  const auto second_body = One(MustParse(One(MustParse(records[1].bytes), 5, 2).bytes), 1, 2).bytes;
  EXPECT_EQ(second_body.size(), huge.size() + 2);
  EXPECT_TRUE(IsValidUtf8(second_body));
}

}  // namespace
}  // namespace gpuscope
