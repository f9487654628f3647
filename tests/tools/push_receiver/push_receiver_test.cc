// The test receiver is itself tested: other tests trust what it says arrived.
#include "tests/tools/push_receiver/push_receiver.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/platform/http_client.h"
#include "src/sinks/loki/loki_push.h"
#include "src/sinks/otlp/otlp_logs.h"
#include "tests/tools/push_receiver/push_decoder.h"
#include "tests/unit/sinks/prometheus/test_client.h"

extern char** environ;

namespace gpuscope {
namespace {

using testing::DecodeLokiPush;
using testing::DecodeOtlpLogs;
using testing::PushReceiver;
using testing::PushReceiverOptions;
using testing::ReceiverMode;

std::vector<LokiEntry> SampleLoki() {
  return {{{{"source", "kmsg"}, {"host", "n1"}, {"class", "xid"}},
           1700000000123456789,
           "NVRM: Xid (PCI:0000:3b:00): 79, \"quoted\"\ttab",
           {{"job_id", "4242"}, {"gpu", "3"}}},
          {{{"host", "n1"}, {"source", "file"}}, 1700000001000000000, std::string("nul\0byte", 8), {}},
          {{{"source", "kmsg"}, {"host", "n1"}, {"class", "xid"}}, 1700000002000000007, "second xid", {}}};
}

const std::vector<std::string> kExpectedLokiLines = {
    R"({"sink":"loki","format":"FORMAT","stream":{"class":"xid","host":"n1","source":"kmsg"},)"
    R"("timestamp_ns":"1700000000123456789","line":"NVRM: Xid (PCI:0000:3b:00): 79, \"quoted\"\ttab",)"
    R"("metadata":{"job_id":"4242","gpu":"3"}})",
    R"({"sink":"loki","format":"FORMAT","stream":{"class":"xid","host":"n1","source":"kmsg"},)"
    R"("timestamp_ns":"1700000002000000007","line":"second xid","metadata":{}})",
    R"({"sink":"loki","format":"FORMAT","stream":{"host":"n1","source":"file"},)"
    R"("timestamp_ns":"1700000001000000000","line":"nul\u0000byte","metadata":{}})",
};

std::vector<std::string> Expected(const std::string& format) {
  std::vector<std::string> out;
  for (std::string line : kExpectedLokiLines) out.push_back(line.replace(line.find("FORMAT"), 6, format));
  return out;
}

TEST(PushDecoder, LokiProtobufAndJsonDecodeToTheSameEntriesGroupedByStream) {
  const auto entries = SampleLoki();
  std::vector<std::string> lines;
  std::string error;
  ASSERT_TRUE(DecodeLokiPush(EncodeLokiPushSnappy(entries), false, &lines, &error)) << error;
  EXPECT_EQ(lines, Expected("protobuf"));
  lines.clear();
  ASSERT_TRUE(DecodeLokiPush(EncodeLokiPushJson(entries), true, &lines, &error)) << error;
  EXPECT_EQ(lines, Expected("json"));
}

TEST(PushDecoder, OtlpLogsDecodeEveryField) {
  OtlpLogsBatch batch;
  batch.resource_attributes = {{"service.name", "gpuscope"}, {"host.name", "n1"}};
  batch.scope_version = "0.1.0";
  batch.records = {
      {1700000000000000001, 1700000000000000002, 17, "ERROR", "Xid 79", {{"gpu", "3"}, {"xid", "79"}}},
      {0, 0, 0, "", "bare", {}}};
  std::vector<std::string> lines;
  std::string error;
  ASSERT_TRUE(DecodeOtlpLogs(EncodeOtlpLogsRequest(batch), &lines, &error)) << error;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            R"({"sink":"otlp","resource":{"service.name":"gpuscope","host.name":"n1"},)"
            R"("scope":{"name":"gpuscope","version":"0.1.0"},"time_unix_nano":"1700000000000000001",)"
            R"("observed_time_unix_nano":"1700000000000000002","severity_number":17,"severity_text":"ERROR",)"
            R"("body":"Xid 79","attributes":{"gpu":"3","xid":"79"}})");
  EXPECT_EQ(lines[1], R"({"sink":"otlp","resource":{"service.name":"gpuscope","host.name":"n1"},)"
                      R"("scope":{"name":"gpuscope","version":"0.1.0"},"time_unix_nano":"0",)"
                      R"("observed_time_unix_nano":"0","severity_number":0,"severity_text":"",)"
                      R"("body":"bare","attributes":{}})");
}

TEST(PushDecoder, InvalidUtf8OnTheWireIsRejectedAsAGoReceiverWould) {
  // Our encoders never send it; a hand-made body proves the decoder would notice if they did.
  std::vector<std::string> lines;
  std::string error;
  EXPECT_FALSE(DecodeLokiPush("{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"x\xff\"]]}]}",
                              true, &lines, &error));
  EXPECT_NE(error.find("UTF-8"), std::string::npos) << error;
  OtlpLogsBatch batch;
  OtlpLogRecord record;
  record.body = "ZZZZ-marker";
  batch.records.push_back(record);
  std::string body = EncodeOtlpLogsRequest(batch);
  ASSERT_TRUE(DecodeOtlpLogs(body, &lines, &error)) << error;
  body.replace(body.find("ZZZZ"), 4, "\xff\xfe\xc3(");
  lines.clear();
  EXPECT_FALSE(DecodeOtlpLogs(body, &lines, &error));
  EXPECT_TRUE(lines.empty());
}

TEST(PushDecoder, MalformedBodiesAreErrorsNotCrashes) {
  std::vector<std::string> lines;
  std::string error;
  const std::string valid_snappy = EncodeLokiPushSnappy(SampleLoki());
  for (const std::string& body : {std::string("not snappy"), valid_snappy.substr(0, valid_snappy.size() / 2),
                                  std::string("\xff\xff\xff\xff\x0f", 5)}) {
    EXPECT_FALSE(DecodeLokiPush(body, false, &lines, &error));
  }
  for (const std::string& body : {std::string("{"), std::string("{\"streams\":{}}"),
                                  std::string("{\"streams\":[{\"stream\":{},\"values\":[[1,\"x\"]]}]}"),
                                  std::string("{\"streams\":[{\"stream\":{\"a\":1},\"values\":[]}]}"),
                                  std::string("[") + std::string(10000, '[')}) {
    EXPECT_FALSE(DecodeLokiPush(body, true, &lines, &error)) << body.substr(0, 40);
  }
  EXPECT_FALSE(DecodeOtlpLogs(std::string("\x0a\x10short", 7), &lines, &error));
  EXPECT_TRUE(lines.empty());
}

class PushReceiverTest : public ::testing::Test {
 protected:
  void Start(ReceiverMode mode = ReceiverMode::kOk) {
    PushReceiverOptions options;
    options.output_path = dir_.path() + "/out.jsonl";
    options.mode = mode;
    receiver_ = std::make_unique<PushReceiver>(options);
    ASSERT_TRUE(receiver_->Start().ok());
  }
  HttpClientResponse Post(const std::string& path, const std::string& body, const std::string& content_type,
                          const std::string& encoding = "") {
    std::unique_ptr<HttpClient> client;
    HttpClientOptions options;
    options.timeout = std::chrono::milliseconds(500);
    EXPECT_TRUE(
        HttpClient::Create("http://127.0.0.1:" + std::to_string(receiver_->port()) + path, options, &client)
            .ok());
    std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", content_type}};
    if (!encoding.empty()) headers.emplace_back("Content-Encoding", encoding);
    HttpClientResponse response;
    if (!client->Post(body, headers, &response).ok()) response.status = -1;
    return response;
  }
  std::string OutputFile() const {
    std::ifstream in(dir_.path() + "/out.jsonl");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  testing::TempDir dir_;
  std::unique_ptr<PushReceiver> receiver_;
};

std::string Gzip(const std::string& data) {
  z_stream stream{};
  deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

TEST_F(PushReceiverTest, AcceptsLokiAndOtlpAndAppendsOneJsonLinePerEntry) {
  Start();
  EXPECT_EQ(Post("/loki/api/v1/push", EncodeLokiPushSnappy(SampleLoki()), "application/x-protobuf").status,
            204);
  EXPECT_EQ(
      Post("/loki/api/v1/push", Gzip(EncodeLokiPushJson(SampleLoki())), "application/json", "gzip").status,
      204);
  OtlpLogsBatch batch;
  batch.records = {{1, 2, 9, "INFO", "otlp line", {}}};
  const auto otlp = Post("/v1/logs", EncodeOtlpLogsRequest(batch), "application/x-protobuf");
  EXPECT_EQ(otlp.status, 200);
  EXPECT_EQ(otlp.Header("content-type"), "application/x-protobuf");

  std::vector<std::string> expected = Expected("protobuf");
  for (const auto& line : Expected("json")) expected.push_back(line);
  const auto lines = receiver_->lines();
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(std::vector<std::string>(lines.begin(), lines.begin() + 6), expected);
  EXPECT_NE(lines[6].find(R"("body":"otlp line")"), std::string::npos);
  std::string file;
  for (const auto& line : lines) file += line + "\n";
  EXPECT_EQ(OutputFile(), file);
  EXPECT_EQ(receiver_->accepted_requests(), 3u);
}

TEST_F(PushReceiverTest, UndecodableBodiesAreAnswered400AndRecordedAsErrors) {
  Start();
  EXPECT_EQ(Post("/loki/api/v1/push", "garbage", "application/x-protobuf").status, 400);
  EXPECT_EQ(Post("/v1/logs", "\x0a\x10short", "application/x-protobuf").status, 400);
  EXPECT_EQ(Post("/loki/api/v1/push", "{}", "text/plain").status, 415);
  EXPECT_EQ(Post("/nowhere", "", "text/plain").status, 404);
  EXPECT_EQ(receiver_->decode_errors(), 2u);
  const auto lines = receiver_->lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"error":"body is not snappy block-compressed","path":"/loki/api/v1/push"})");
}

TEST_F(PushReceiverTest, ControlSwitchesTheAnswerWithoutARestart) {
  Start();
  const std::string body = EncodeLokiPushSnappy(SampleLoki());
  struct Case {
    std::string mode;
    int status;  // -1: no HTTP answer
  };
  for (const Case& c : {Case{"503", 503}, Case{"429", 429}, Case{"400", 400}, Case{"garbage", -1},
                        Case{"hang", -1}, Case{"ok", 204}}) {
    EXPECT_EQ(Post("/control?mode=" + c.mode + "&retry_after=7", "", "text/plain").status, 200);
    const auto response = Post("/loki/api/v1/push", body, "application/x-protobuf");
    EXPECT_EQ(response.status, c.status) << c.mode;
    if (c.status == 503 || c.status == 429) {
      EXPECT_EQ(response.Header("retry-after"), "7");
    }
  }
  EXPECT_EQ(Post("/control?mode=bogus", "", "text/plain").status, 400);
  EXPECT_EQ(receiver_->push_requests(), 6u);
  EXPECT_EQ(receiver_->lines().size(), 3u);  // only the ok push was recorded
}

#ifdef GPUSCOPE_PUSH_RECEIVER_BINARY
TEST(PushReceiverBinary, PrintsItsPortRecordsPushesAndStopsOnSigterm) {
  testing::TempDir dir;
  const std::string output = dir.path() + "/out.jsonl";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<std::string> args = {GPUSCOPE_PUSH_RECEIVER_BINARY, "--port", "0", "--output", output};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  FILE* out = fdopen(pipe_fds[0], "r");
  char line[128] = {};
  ASSERT_NE(fgets(line, sizeof(line), out), nullptr);
  unsigned port = 0;
  ASSERT_EQ(std::sscanf(line, "listening on 127.0.0.1:%u", &port), 1) << line;

  std::unique_ptr<HttpClient> client;
  ASSERT_TRUE(
      HttpClient::Create("http://127.0.0.1:" + std::to_string(port) + "/loki/api/v1/push", {}, &client).ok());
  HttpClientResponse response;
  ASSERT_TRUE(
      client
          ->Post(EncodeLokiPushSnappy(SampleLoki()), {{"Content-Type", "application/x-protobuf"}}, &response)
          .ok());
  EXPECT_EQ(response.status, 204);

  kill(pid, SIGTERM);
  int wait_status = 0;
  ASSERT_EQ(waitpid(pid, &wait_status, 0), pid);
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  fclose(out);
  std::ifstream in(output);
  std::string text;
  int count = 0;
  while (std::getline(in, text)) ++count;
  EXPECT_EQ(count, 3);
}
#endif

}  // namespace
}  // namespace gpuscope
