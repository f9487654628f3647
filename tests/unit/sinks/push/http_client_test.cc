#include "src/sinks/push/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/tools/push_receiver/test_http_server.h"
#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

using testing::MakeHttpResponse;
using testing::TestHttpReply;
using testing::TestHttpRequest;
using testing::TestHttpServer;
using testing::TestHttpServerOptions;

using Headers = std::vector<std::pair<std::string, std::string>>;

// A server whose every answer is produced by `handler`; records the requests it saw.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<TestHttpReply(const TestHttpRequest&)> handler,
                          TestHttpServerOptions options = {})
      : server_(std::move(options), [this, handler](const TestHttpRequest& request) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            requests_.push_back(request);
          }
          cv_.notify_all();
          return handler(request);
        }) {
    EXPECT_TRUE(server_.Start().ok());
  }
  std::string url(std::string_view scheme = "http", std::string_view path = "/push") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(server_.port()) + std::string(path);
  }
  std::vector<TestHttpRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  void WaitForRequests(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return requests_.size() >= n; });
  }
  TestHttpServer& server() { return server_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TestHttpRequest> requests_;
  TestHttpServer server_;
};

TestHttpReply Answer(int status, std::string body = "", Headers headers = {}) {
  return TestHttpReply{MakeHttpResponse(status, "text/plain", body, headers)};
}

std::unique_ptr<HttpClient> MakeClient(const std::string& url, HttpClientOptions options = {}) {
  std::unique_ptr<HttpClient> client;
  const Status status = HttpClient::Create(url, options, &client);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return client;
}

TEST(HttpUrl, ParsesSchemesHostsPortsAndTargets) {
  HttpUrl url;
  ASSERT_TRUE(ParseHttpUrl("http://loki:3100/loki/api/v1/push", &url).ok());
  EXPECT_FALSE(url.tls);
  EXPECT_EQ(url.host, "loki");
  EXPECT_EQ(url.port, 3100);
  EXPECT_EQ(url.target, "/loki/api/v1/push");
  EXPECT_EQ(url.authority, "loki:3100");

  ASSERT_TRUE(ParseHttpUrl("HTTPS://otel.example.com/v1/logs?x=1#frag", &url).ok());
  EXPECT_TRUE(url.tls);
  EXPECT_EQ(url.port, 443);
  EXPECT_EQ(url.target, "/v1/logs?x=1");
  EXPECT_EQ(url.authority, "otel.example.com");

  ASSERT_TRUE(ParseHttpUrl("http://[::1]:4318", &url).ok());
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 4318);
  EXPECT_EQ(url.target, "/");
  EXPECT_EQ(url.authority, "[::1]:4318");

  ASSERT_TRUE(ParseHttpUrl("http://10.0.0.7?q", &url).ok());
  EXPECT_EQ(url.host, "10.0.0.7");
  EXPECT_EQ(url.port, 80);
  EXPECT_EQ(url.target, "/?q");
}

TEST(HttpUrl, RejectsWhatItCannotSendTo) {
  HttpUrl url;
  for (const char* bad : {"", "loki:3100/push", "ftp://host/", "http://", "http://:80/", "http://host:0/",
                          "http://host:65536/", "http://host:12ab/", "http://user:pw@host/", "http://::1/",
                          "http://[::1/", "http://[nothex]/", "http://host/a b", "http://host/\n"}) {
    EXPECT_EQ(ParseHttpUrl(bad, &url).code(), Status::Code::kInvalidArgument) << bad;
  }
}

TEST(HttpResponseHead, ParsesStatusVersionAndHeaders) {
  HttpClientResponse response;
  int minor = -1;
  ASSERT_TRUE(
      ParseHttpResponseHead("HTTP/1.0 429 Too Many\r\nRetry-After:  5 \r\nX-A: b\r\n", 10, &response, &minor)
          .ok());
  EXPECT_EQ(response.status, 429);
  EXPECT_EQ(minor, 0);
  EXPECT_EQ(response.Header("retry-after"), "5");
  EXPECT_EQ(response.headers[1].first, "x-a");
  ASSERT_TRUE(ParseHttpResponseHead("HTTP/1.1 204\r\n", 10, &response, &minor).ok());
  EXPECT_EQ(response.status, 204);
  for (const char* bad : {"", "HTTP/1.1 20\r\n", "HTTP/1.1 2000\r\n", "HTTP/1.1 099 x\r\n",
                          "HTTP/1.x 200\r\n", "http/1.1 200\r\n", "HTTP/1.1 200\r\n folded: x\r\n",
                          "HTTP/1.1 200\r\n: v\r\n", "HTTP/1.1 200\r\na: 1\r\nb: 2\r\nc: 3\r\n"}) {
    EXPECT_FALSE(ParseHttpResponseHead(bad, 2, &response, &minor).ok()) << bad;
    EXPECT_EQ(response.status, 0);
  }
}

TEST(HttpResponseHead, ParsesChunkSizeLines) {
  uint64_t size = 0;
  EXPECT_TRUE(ParseChunkSizeLine("1f", &size));
  EXPECT_EQ(size, 31u);
  EXPECT_TRUE(ParseChunkSizeLine("A;name=value", &size));
  EXPECT_EQ(size, 10u);
  for (const char* bad : {"", ";x", "g", "-1", "1 2", "ffffffffffffffffff"}) {
    EXPECT_FALSE(ParseChunkSizeLine(bad, &size)) << bad;
  }
}

TEST(HttpClient, PostSendsBodyAndHeadersAndReadsTheResponse) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(201, "created", {{"X-Answer", "42"}}); });
  auto client = MakeClient(server.url("http", "/loki/api/v1/push?tenant=a"));
  HttpClientResponse response;
  const std::string body("payload\0with NUL", 16);
  ASSERT_TRUE(
      client->Post(body, {{"Content-Type", "application/x-protobuf"}, {"X-Scope-OrgID", "t1"}}, &response)
          .ok());
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.body, "created");
  EXPECT_EQ(response.Header("X-ANSWER"), "42");
  EXPECT_FALSE(response.body_truncated);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/loki/api/v1/push?tenant=a");
  EXPECT_EQ(requests[0].Header("host"), "127.0.0.1:" + std::to_string(server.server().port()));
  EXPECT_EQ(requests[0].Header("content-length"), "16");
  EXPECT_EQ(requests[0].Header("content-type"), "application/x-protobuf");
  EXPECT_EQ(requests[0].Header("x-scope-orgid"), "t1");
  EXPECT_EQ(requests[0].body, body);
}

TEST(HttpClient, KeepAliveSendsManyRequestsOverOneConnection) {
  ScriptedServer server([](const TestHttpRequest& r) { return Answer(204); });
  auto client = MakeClient(server.url());
  for (int i = 0; i < 5; ++i) {
    HttpClientResponse response;
    ASSERT_TRUE(client->Post("x", {}, &response).ok());
    EXPECT_EQ(response.status, 204);
  }
  EXPECT_EQ(client->connections_opened(), 1u);
  EXPECT_EQ(server.server().connections_accepted(), 1u);
}

TEST(HttpClient, ReconnectsWhenTheServerClosedTheConnection) {
  // The server closes after every answer, once saying so (Connection: close) and once silently.
  std::atomic<int> n{0};
  ScriptedServer server([&](const TestHttpRequest&) {
    TestHttpReply reply = n++ % 2 == 0 ? Answer(200, "", {{"Connection", "close"}}) : Answer(200);
    reply.close = true;
    return reply;
  });
  auto client = MakeClient(server.url());
  for (int i = 0; i < 4; ++i) {
    HttpClientResponse response;
    const Status status = client->Post("x", {}, &response);
    ASSERT_TRUE(status.ok()) << i << " " << status.ToString();
    EXPECT_EQ(response.status, 200);
  }
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_EQ(client->connections_opened(), 4u);
}

TEST(HttpClient, ConnectionRefusedIsUnavailable) {
  uint16_t port;
  {
    ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
    port = server.server().port();
  }
  auto client = MakeClient("http://127.0.0.1:" + std::to_string(port) + "/");
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kUnavailable);
}

TEST(HttpClient, ResolvesHostNamesAndTriesEveryAddress) {
  // "localhost" may resolve to ::1 first, where nothing listens; the client must go on to 127.0.0.1.
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
  auto client = MakeClient("http://localhost:" + std::to_string(server.server().port()) + "/");
  HttpClientResponse response;
  const Status status = client->Post("x", {}, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(server.requests()[0].Header("host"), "localhost:" + std::to_string(server.server().port()));
}

TEST(HttpClient, ServerThatNeverAnswersHitsTheTimeout) {
  ScriptedServer server([](const TestHttpRequest&) { return TestHttpReply{"", false, true}; });
  HttpClientOptions options;
  options.timeout = std::chrono::milliseconds(100);
  auto client = MakeClient(server.url(), options);
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kDeadlineExceeded);
}

TEST(HttpClient, InterruptEndsARequestBlockedOnASilentServer) {
  ScriptedServer server([](const TestHttpRequest&) { return TestHttpReply{"", false, true}; });
  HttpClientOptions options;
  options.timeout = std::chrono::hours(1);
  auto client = MakeClient(server.url(), options);
  auto result = std::async(std::launch::async, [&] {
    HttpClientResponse response;
    return client->Post("x", {}, &response);
  });
  server.WaitForRequests(1);
  client->Interrupt();
  const Status status = result.get();  // returns: that is the assertion
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kUnavailable);  // permanent
}

TEST(HttpClient, AnswersThatAreNotHttpAreErrorsAndTheClientRecovers) {
  const std::vector<std::string> bad_answers = {
      std::string("\x00\xff garbage\r\n\r\n", 14),
      "SSH-2.0-OpenSSH_9.2\r\n",
      "HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n",
      "HTTP/2 200\r\n\r\n",
      "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n",
      "HTTP/1.1 200 OK\r\n" + std::string(20000, 'a') + ": b\r\n\r\n",
      "HTTP/1.1 200 OK\r\n" +
          [] {
            std::string many;
            for (int i = 0; i < 200; ++i) many += "h" + std::to_string(i) + ": v\r\n";
            return many;
          }() +
          "\r\n",
      "HTTP/1.1 101 Switching Protocols\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Le",
  };
  std::atomic<size_t> next{0};
  ScriptedServer server([&](const TestHttpRequest&) {
    const size_t i = next++;
    if (i >= bad_answers.size()) return Answer(200, "fine");
    return TestHttpReply{bad_answers[i], true};
  });
  auto client = MakeClient(server.url());
  for (size_t i = 0; i < bad_answers.size(); ++i) {
    HttpClientResponse response;
    const Status status = client->Post("x", {}, &response);
    EXPECT_EQ(status.code(), Status::Code::kUnavailable) << "answer " << i << ": " << status.ToString();
  }
  HttpClientResponse response;
  ASSERT_TRUE(client->Post("x", {}, &response).ok());
  EXPECT_EQ(response.body, "fine");
}

TEST(HttpClient, OversizedBodyIsCutAtTheLimitAndTheConnectionDropped) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(413, std::string(4 << 20, 'z')); });
  HttpClientOptions options;
  options.max_response_body_bytes = 1000;
  auto client = MakeClient(server.url(), options);
  for (int i = 0; i < 2; ++i) {
    HttpClientResponse response;
    ASSERT_TRUE(client->Post("x", {}, &response).ok());
    EXPECT_EQ(response.status, 413);
    EXPECT_EQ(response.body, std::string(1000, 'z'));
    EXPECT_TRUE(response.body_truncated);
  }
  EXPECT_EQ(client->connections_opened(), 2u);
}

TEST(HttpClient, AnAnswerSentBeforeTheBodyWasReadIsTheOutcome) {
  // The server refuses the body from its Content-Length alone (413), answers and closes without reading
  // it, so the client's write fails: the 413 is still what the client reports, not a connection error.
  TestHttpServerOptions options;
  options.max_body_bytes = 1000;
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, options);
  auto client = MakeClient(server.url());
  HttpClientResponse response;
  const Status status = client->Post(std::string(32 << 20, 'x'), {}, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.status, 413);
  ASSERT_TRUE(client->Post("small", {}, &response).ok());
  EXPECT_EQ(response.status, 200);
}

TEST(HttpClient, ChunkedUntilCloseAndInterimResponsesAreRead) {
  std::atomic<int> n{0};
  ScriptedServer server([&](const TestHttpRequest&) {
    switch (n++) {
      case 0:
        return TestHttpReply{
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"};
      case 1:
        return TestHttpReply{"HTTP/1.0 500 Oops\r\n\r\nuntil close", true};
      default:
        return TestHttpReply{"HTTP/1.1 204 No Content\r\n\r\n"};
    }
  });
  auto client = MakeClient(server.url());
  HttpClientResponse response;
  ASSERT_TRUE(client->Post("x", {}, &response).ok());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "hello, world");
  ASSERT_TRUE(client->Post("x", {}, &response).ok());
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(response.body, "until close");
  ASSERT_TRUE(client->Post("x", {}, &response).ok());
  EXPECT_EQ(response.status, 204);
  EXPECT_EQ(client->connections_opened(), 2u);  // the chunked answer kept the connection alive
}

TEST(HttpClient, HeadersThatWouldSplitTheRequestAreRejected) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
  auto client = MakeClient(server.url());
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {{"X-A", "v\r\nInjected: 1"}}, &response).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(client->Post("x", {{"Bad Name", "v"}}, &response).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(client->Post("x", {{"Content-Length", "1"}}, &response).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(server.requests().empty());
}

class HttpClientTls : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = dir_.path() + "/cert.pem";
    key_ = dir_.path() + "/key.pem";
    ASSERT_TRUE(testing::WriteSelfSignedCertificate(cert_, key_));
  }
  TestHttpServerOptions TlsOptions() const {
    TestHttpServerOptions options;
    options.cert_file = cert_;
    options.key_file = key_;
    return options;
  }
  testing::TempDir dir_;
  std::string cert_;
  std::string key_;
};

TEST_F(HttpClientTls, HttpsTrustsTheGivenCaAndKeepsTheConnection) {
  ScriptedServer server([](const TestHttpRequest& r) { return Answer(200, std::to_string(r.body.size())); },
                        TlsOptions());
  HttpClientOptions options;
  options.ca_file = cert_;
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto client = MakeClient("https://" + host + ":" + std::to_string(server.server().port()) + "/", options);
    for (int i = 0; i < 3; ++i) {
      HttpClientResponse response;
      const std::string body(100000 + i, 'b');  // several TLS records each way
      const Status status = client->Post(body, {}, &response);
      ASSERT_TRUE(status.ok()) << host << " " << status.ToString();
      EXPECT_EQ(response.status, 200);
      EXPECT_EQ(response.body, std::to_string(body.size()));
    }
    EXPECT_EQ(client->connections_opened(), 1u);
  }
}

TEST_F(HttpClientTls, HttpsRefusesACertificateItDoesNotTrust) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  auto client = MakeClient(server.url("https"));  // system trust store: the self-signed cert is not in it
  HttpClientResponse response;
  const Status status = client->Post("x", {}, &response);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("verification"), std::string::npos) << status.message();
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTls, UnreadableCaFileIsAnInvalidArgument) {
  HttpClientOptions options;
  options.ca_file = dir_.path() + "/missing.pem";
  std::unique_ptr<HttpClient> client;
  EXPECT_EQ(HttpClient::Create("https://127.0.0.1:1/", options, &client).code(),
            Status::Code::kInvalidArgument);
}

TEST_F(HttpClientTls, PlainHttpAgainstATlsServerIsAnErrorNotAHang) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  HttpClientOptions options;
  options.timeout = std::chrono::seconds(30);
  auto client = MakeClient(server.url("http"), options);
  HttpClientResponse response;
  EXPECT_FALSE(client->Post("x", {}, &response).ok());
}

}  // namespace
}  // namespace gpuscope
