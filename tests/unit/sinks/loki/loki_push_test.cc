#include "src/sinks/loki/loki_push.h"

#include <gtest/gtest.h>
#include <snappy.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
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

// What a Loki receiver sees after decoding: the test's own model of logproto.PushRequest.
struct DecodedEntry {
  int64_t seconds = 0;
  int64_t nanos = 0;
  std::string line;
  std::vector<std::pair<std::string, std::string>> metadata;
};
struct DecodedStream {
  std::string labels;
  std::vector<DecodedEntry> entries;
};

std::vector<ProtoField> MustParse(std::string_view bytes) {
  auto fields = ParseProtoFields(bytes);
  EXPECT_TRUE(fields.has_value());
  return fields.value_or(std::vector<ProtoField>{});
}

// Decodes a push body the way Loki does: snappy block decompression, then PushRequest by field number.
// Fails the test on any unexpected field number or wire type.
std::vector<DecodedStream> DecodeLokiPushBody(const std::string& body) {
  std::string raw;
  EXPECT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
  std::vector<DecodedStream> streams;
  for (const auto& stream_field : MustParse(raw)) {
    EXPECT_EQ(stream_field.number, 1u);  // PushRequest.streams
    EXPECT_EQ(stream_field.wire_type, 2);
    DecodedStream stream;
    for (const auto& f : MustParse(stream_field.bytes)) {
      EXPECT_EQ(f.wire_type, 2);
      if (f.number == 1) {  // StreamAdapter.labels
        stream.labels = std::string(f.bytes);
      } else if (f.number == 2) {  // StreamAdapter.entries
        DecodedEntry entry;
        for (const auto& e : MustParse(f.bytes)) {
          EXPECT_EQ(e.wire_type, 2);
          if (e.number == 1) {  // EntryAdapter.timestamp
            for (const auto& t : MustParse(e.bytes)) {
              EXPECT_EQ(t.wire_type, 0);
              if (t.number == 1)
                entry.seconds = static_cast<int64_t>(t.scalar);
              else if (t.number == 2)
                entry.nanos = static_cast<int64_t>(t.scalar);
              else
                ADD_FAILURE() << "Timestamp field " << t.number;
            }
          } else if (e.number == 2) {  // EntryAdapter.line
            entry.line = std::string(e.bytes);
          } else if (e.number == 3) {  // EntryAdapter.structuredMetadata
            const auto pair = MustParse(e.bytes);
            const auto name = FieldsNumbered(pair, 1);
            const auto value = FieldsNumbered(pair, 2);
            EXPECT_EQ(pair.size(), 2u);
            if (name.size() == 1 && value.size() == 1) {
              entry.metadata.emplace_back(std::string(name[0].bytes), std::string(value[0].bytes));
            }
          } else {
            ADD_FAILURE() << "EntryAdapter field " << e.number;
          }
        }
        stream.entries.push_back(std::move(entry));
      } else {
        ADD_FAILURE() << "StreamAdapter field " << f.number;
      }
    }
    streams.push_back(std::move(stream));
  }
  return streams;
}

std::vector<LokiLabel> Labels(std::string cls, std::string severity) {
  return {{"source", "kmsg"}, {"host", "n1"}, {"severity", std::move(severity)}, {"class", std::move(cls)}};
}

std::vector<LokiEntry> SampleBatch() {
  return {
      {Labels("xid", "critical"),
       1700000000123456789,
       "NVRM: Xid (PCI:0000:3b:00): 79, GPU fell off",
       {{"job_id", "4242"}, {"gpu", "3"}}},
      {Labels("oom", "error"), 1700000001000000000, "Out of memory: Killed process 77", {}},
      {{{"class", "xid"}, {"host", "n1"}, {"severity", "critical"}, {"source", "kmsg"}},
       1700000002000000007,
       "NVRM: Xid (PCI:0000:3b:00): 48, DBE",
       {{"job_id", "4243"}}},
  };
}

TEST(WireLoki, LabelsFormattedSortedAndEscapedLikeAPrometheusSelector) {
  EXPECT_EQ(FormatLokiLabels(Labels("xid", "critical")),
            "{class=\"xid\", host=\"n1\", severity=\"critical\", source=\"kmsg\"}");
  EXPECT_EQ(FormatLokiLabels({{"a", "q\"b\\s\nn"}}), "{a=\"q\\\"b\\\\s\\nn\"}");
  EXPECT_EQ(FormatLokiLabels({}), "{}");
}

TEST(WireLoki, WireLokiPushProtobufDecodedByTestReceiverHasEveryFieldGroupedByStreamInOrder) {
  const auto batch = SampleBatch();
  const auto streams = DecodeLokiPushBody(EncodeLokiPushSnappy(batch));
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(streams[0].labels, "{class=\"xid\", host=\"n1\", severity=\"critical\", source=\"kmsg\"}");
  ASSERT_EQ(streams[0].entries.size(), 2u);
  EXPECT_EQ(streams[0].entries[0].seconds, 1700000000);
  EXPECT_EQ(streams[0].entries[0].nanos, 123456789);
  EXPECT_EQ(streams[0].entries[0].line, batch[0].line);
  ASSERT_EQ(streams[0].entries[0].metadata.size(), 2u);
  EXPECT_EQ(streams[0].entries[0].metadata[0], (std::pair<std::string, std::string>{"job_id", "4242"}));
  EXPECT_EQ(streams[0].entries[0].metadata[1], (std::pair<std::string, std::string>{"gpu", "3"}));
  EXPECT_EQ(streams[0].entries[1].seconds, 1700000002);
  EXPECT_EQ(streams[0].entries[1].nanos, 7);
  EXPECT_EQ(streams[0].entries[1].line, batch[2].line);
  ASSERT_EQ(streams[0].entries[1].metadata.size(), 1u);
  EXPECT_EQ(streams[0].entries[1].metadata[0].second, "4243");

  EXPECT_EQ(streams[1].labels, "{class=\"oom\", host=\"n1\", severity=\"error\", source=\"kmsg\"}");
  ASSERT_EQ(streams[1].entries.size(), 1u);
  EXPECT_EQ(streams[1].entries[0].seconds, 1700000001);
  EXPECT_EQ(streams[1].entries[0].nanos, 0);
  EXPECT_EQ(streams[1].entries[0].line, batch[1].line);
  EXPECT_TRUE(streams[1].entries[0].metadata.empty());
}

TEST(WireLoki, EmptyBatchEncodesAnEmptyPushRequest) {
  EXPECT_TRUE(EncodeLokiPushProtobuf({}).empty());
  EXPECT_TRUE(DecodeLokiPushBody(EncodeLokiPushSnappy({})).empty());
  EXPECT_EQ(EncodeLokiPushJson({}), "{\"streams\":[]}");
}

TEST(WireLoki, HostileLinesInvalidUtf8NulAndMegabyteEncodeToValidUtf8WithoutLoss) {
  std::string huge(3 * 1024 * 1024, 'x');
  huge[1000] = '\xff';
  std::vector<LokiEntry> batch = {
      {Labels("xid", "critical"),
       1,
       std::string("nul\0inside\xc3(bad", 15),
       {{"k\xfe", std::string("v\0w", 3)}}},
      {Labels("xid", "critical"), 2, huge, {}},
  };
  const auto streams = DecodeLokiPushBody(EncodeLokiPushSnappy(batch));
  ASSERT_EQ(streams.size(), 1u);
  ASSERT_EQ(streams[0].entries.size(), 2u);
  EXPECT_EQ(streams[0].entries[0].line, std::string("nul\0inside\xef\xbf\xbd(bad", 17));
  EXPECT_EQ(streams[0].entries[0].metadata[0].first, "k\xef\xbf\xbd");
  EXPECT_EQ(streams[0].entries[0].metadata[0].second, std::string("v\0w", 3));
  EXPECT_EQ(streams[0].entries[1].line.size(), huge.size() + 2);
  EXPECT_TRUE(IsValidUtf8(streams[0].entries[1].line));
  EXPECT_TRUE(IsValidUtf8(EncodeLokiPushJson(batch)));
}

// Parses `json` with Python's strict json module (a real, independent parser) and returns its
// canonical re-serialization, or "ERROR" when it does not parse as UTF-8 JSON.
std::string CanonicalJsonViaPython(const std::string& json) {
  const auto path =
      std::filesystem::temp_directory_path() / ("wire_loki_json_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path, std::ios::binary);
    out << json;
  }
  const std::string command =
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding=\"utf-8\", "
      "errors=\"strict\")); print(json.dumps(d, ensure_ascii=True, separators=(\",\", \":\")))' " +
      path.string() + " 2>/dev/null || echo ERROR";
  std::string result;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.append(buffer, n);
    ::pclose(pipe);
  }
  std::filesystem::remove(path);
  while (!result.empty() && result.back() == '\n') result.pop_back();
  return result;
}

TEST(WireLoki, JsonFormParsedBackByPythonMatchesLokiJsonSchemaWithEscapes) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  std::vector<LokiEntry> batch = SampleBatch();
  batch.push_back({Labels("oom", "error"), 5, std::string("q\"\\\t\n\x01\0\xff\xc3\xa9", 10), {}});
  EXPECT_EQ(CanonicalJsonViaPython(EncodeLokiPushJson(batch)),
            "{\"streams\":["
            "{\"stream\":{\"class\":\"xid\",\"host\":\"n1\",\"severity\":\"critical\",\"source\":\"kmsg\"},"
            "\"values\":[[\"1700000000123456789\",\"NVRM: Xid (PCI:0000:3b:00): 79, GPU fell off\","
            "{\"job_id\":\"4242\",\"gpu\":\"3\"}],"
            "[\"1700000002000000007\",\"NVRM: Xid (PCI:0000:3b:00): 48, DBE\",{\"job_id\":\"4243\"}]]},"
            "{\"stream\":{\"class\":\"oom\",\"host\":\"n1\",\"severity\":\"error\",\"source\":\"kmsg\"},"
            "\"values\":[[\"1700000001000000000\",\"Out of memory: Killed process 77\"],"
            "[\"5\",\"q\\\"\\\\\\t\\n\\u0001\\u0000\\ufffd\\u00e9\"]]}]}");
}

}  // namespace
}  // namespace gpuscope
