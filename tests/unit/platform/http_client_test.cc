#include "src/platform/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/tools/local_daemons/local_daemons.h"
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

class HttpClientTest : public ::testing::Test {
 protected:
  testing::ProxyEnvironment environment_;
};

// Whether this process has libcurl mapped.
bool LibcurlMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libcurl.so") != std::string::npos) return true;
  }
  return false;
}

TEST(HttpClientLoading, LibcurlIsMappedOnlyOnceAClientIsCreated) {
  // An agent without push sinks does not pay for libcurl and its ~25 libraries. Checked in a fresh
  // process (the "threadsafe" death-test style re-runs this test alone), since earlier tests of this
  // binary load it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const bool before = LibcurlMapped();
        std::unique_ptr<HttpClient> client;
        const bool created = HttpClient::Create("http://127.0.0.1:1/", {}, &client).ok();
        std::exit(!before && created && LibcurlMapped() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(HttpClientTest, CreateRejectsUrlsItCannotSendTo) {
  for (const char* bad : {"", "loki:3100/push", "ftp://host/", "http://", "http://:80/", "http://host:0/",
                          "http://host:65536/", "http://host:12ab/", "http://user:pw@host/", "http://::1/",
                          "http://[::1/", "http://[nothex]/", "http://host/a b", "http://host/\n"}) {
    std::unique_ptr<HttpClient> client;
    EXPECT_EQ(HttpClient::Create(bad, {}, &client).code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_EQ(client, nullptr);
  }
  for (const char* good : {"http://loki:3100/loki/api/v1/push", "HTTPS://otel.example.com/v1/logs?x=1#frag",
                           "http://[::1]:4318", "http://10.0.0.7?q"}) {
    std::unique_ptr<HttpClient> client;
    EXPECT_TRUE(HttpClient::Create(good, {}, &client).ok()) << good;
  }
}

TEST_F(HttpClientTest, PostSendsBodyAndHeadersAndReadsTheResponse) {
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
  EXPECT_EQ(response.protocol, "HTTP/1.1");  // plain http: no h2c upgrade

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/loki/api/v1/push?tenant=a");
  EXPECT_EQ(requests[0].Header("host"), "127.0.0.1:" + std::to_string(server.server().port()));
  EXPECT_EQ(requests[0].Header("content-length"), "16");
  EXPECT_EQ(requests[0].Header("content-type"), "application/x-protobuf");
  EXPECT_EQ(requests[0].Header("x-scope-orgid"), "t1");
  EXPECT_EQ(requests[0].body, body);
  EXPECT_EQ(requests[0].Header("user-agent").substr(0, 15), "gpuscope-agent/");
}

TEST_F(HttpClientTest, GetAsksForATargetBelowTheUrlAndAPostAfterItIsAPostAgain) {
  ScriptedServer server([](const TestHttpRequest& r) { return Answer(200, r.method + " " + r.target); });
  auto client = MakeClient(server.url("http", "/prefix/"));  // an API server behind a path-routing proxy
  HttpClientResponse response;
  ASSERT_TRUE(
      client->Get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", {{"Authorization", "Bearer t"}}, &response)
          .ok());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "GET /prefix/api/v1/pods?fieldSelector=spec.nodeName%3Dn1");
  ASSERT_TRUE(client->Post("x", {}, &response).ok());
  EXPECT_EQ(response.body, "POST /prefix/");
  ASSERT_TRUE(client->Get("/b", {}, &response).ok());
  EXPECT_EQ(response.body, "GET /prefix/b");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].Header("authorization"), "Bearer t");
  EXPECT_EQ(requests[0].body, "");
  EXPECT_EQ(requests[0].Header("content-length"), "");
  EXPECT_EQ(requests[1].body, "x");
  EXPECT_EQ(client->connections_opened(), 1u);  // one kept connection for both methods
  // A target that is not a path, or would split the request line, is refused before anything is sent.
  for (const char* bad : {"", "api/v1/pods", "/a b", "/a\r\nX: y"}) {
    EXPECT_EQ(client->Get(bad, {}, &response).code(), Status::Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(server.requests().size(), 3u);
  // Without a path in the URL the target is the whole path.
  auto bare = MakeClient("http://127.0.0.1:" + std::to_string(server.server().port()));
  ASSERT_TRUE(bare->Get("/api/v1/namespaces/a/pods/b", {}, &response).ok());
  EXPECT_EQ(response.body, "GET /api/v1/namespaces/a/pods/b");
}

TEST_F(HttpClientTest, SendsNoContentTypeOfItsOwnNorExpectWithAPushSizedBody) {
  // libcurl would add a form content type to a POST; "Expect: 100-continue" (and a wait for it) comes
  // only with bodies over 1 MiB, larger than a push batch.
  ScriptedServer server([](const TestHttpRequest&) { return Answer(204); });
  auto client = MakeClient(server.url());
  HttpClientResponse response;
  ASSERT_TRUE(client->Post(std::string(200000, 'x'), {{"X-Empty", ""}}, &response).ok());
  EXPECT_EQ(response.status, 204);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].Header("content-type"), "");
  EXPECT_EQ(requests[0].Header("expect"), "");
  EXPECT_EQ(requests[0].body.size(), 200000u);
  bool has_empty_header = false;
  for (const auto& [name, value] : requests[0].headers)
    has_empty_header |= name == "x-empty" && value.empty();
  EXPECT_TRUE(has_empty_header);
}

TEST_F(HttpClientTest, KeepAliveSendsManyRequestsOverOneConnection) {
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

TEST_F(HttpClientTest, ReconnectsWhenTheServerClosedTheConnection) {
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

TEST_F(HttpClientTest, ConnectionRefusedIsUnavailable) {
  uint16_t port;
  {
    ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
    port = server.server().port();
  }
  auto client = MakeClient("http://127.0.0.1:" + std::to_string(port) + "/");
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kUnavailable);
}

TEST_F(HttpClientTest, ResolvesHostNamesAndTriesEveryAddress) {
  // "localhost" may resolve to ::1 first, where nothing listens; the client must go on to 127.0.0.1.
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
  auto client = MakeClient("http://localhost:" + std::to_string(server.server().port()) + "/");
  HttpClientResponse response;
  const Status status = client->Post("x", {}, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(server.requests()[0].Header("host"), "localhost:" + std::to_string(server.server().port()));
}

TEST_F(HttpClientTest, ServerThatNeverAnswersHitsTheTimeout) {
  ScriptedServer server([](const TestHttpRequest&) { return TestHttpReply{"", false, true}; });
  HttpClientOptions options;
  options.timeout = std::chrono::milliseconds(100);
  auto client = MakeClient(server.url(), options);
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kDeadlineExceeded);
}

TEST_F(HttpClientTest, InterruptEndsARequestBlockedOnASilentServer) {
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

TEST_F(HttpClientTest, AnswersThatAreNotHttpAreErrorsAndTheClientRecovers) {
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

TEST_F(HttpClientTest, OversizedBodyIsCutAtTheLimitAndTheConnectionDropped) {
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

TEST_F(HttpClientTest, AnAnswerSentBeforeTheBodyWasReadIsTheOutcome) {
  // The server refuses the body from its Content-Length alone (413), answers and closes without reading
  // it: the 413 is what the client reports, not a connection error. (libcurl announces a body this
  // large with "Expect: 100-continue" and sends it only after "100 Continue", so it never writes into
  // the closed connection.)
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

TEST_F(HttpClientTest, ChunkedUntilCloseAndInterimResponsesAreRead) {
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

TEST_F(HttpClientTest, HeadersThatWouldSplitTheRequestAreRejected) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); });
  auto client = MakeClient(server.url());
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {{"X-A", "v\r\nInjected: 1"}}, &response).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(client->Post("x", {{"Bad Name", "v"}}, &response).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(client->Post("x", {{"Content-Length", "1"}}, &response).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(server.requests().empty());
}

// TLS against a CA the test makes with openssl, which signed the server's certificate for localhost and
// 127.0.0.1.
class HttpClientTls : public HttpClientTest {
 protected:
  void SetUp() override {
    const Status made = testing::MakeTestCertificates(dir_.path(), &certificates_);
    ASSERT_TRUE(made.ok()) << made.ToString();
  }
  TestHttpServerOptions TlsOptions() const {
    TestHttpServerOptions options;
    options.cert_file = certificates_.cert_file;
    options.key_file = certificates_.key_file;
    return options;
  }
  HttpClientOptions TrustingTheCa() const {
    HttpClientOptions options;
    options.ca_file = certificates_.ca_file;
    return options;
  }
  testing::TempDir dir_;
  testing::TestCertificates certificates_;
};

TEST_F(HttpClientTls, HttpsTrustsTheGivenCaAndKeepsTheConnection) {
  ScriptedServer server([](const TestHttpRequest& r) { return Answer(200, std::to_string(r.body.size())); },
                        TlsOptions());
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto client =
        MakeClient("https://" + host + ":" + std::to_string(server.server().port()) + "/", TrustingTheCa());
    for (int i = 0; i < 3; ++i) {
      HttpClientResponse response;
      const std::string body(100000 + i, 'b');  // several TLS records each way
      const Status status = client->Post(body, {}, &response);
      ASSERT_TRUE(status.ok()) << host << " " << status.ToString();
      EXPECT_EQ(response.status, 200);
      EXPECT_EQ(response.body, std::to_string(body.size()));
      EXPECT_EQ(response.protocol, "HTTP/1.1");  // the test server offers no ALPN h2
    }
    EXPECT_EQ(client->connections_opened(), 1u);
  }
}

TEST_F(HttpClientTls, HttpsRefusesACertificateItDoesNotTrust) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  auto client = MakeClient(server.url("https"));  // system trust store: the test CA is not in it
  HttpClientResponse response;
  const Status status = client->Post("x", {}, &response);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("certificate"), std::string::npos) << status.message();
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTls, HttpsRefusesACertificateForAnotherName) {
  // Signed by the trusted CA, but for another host than the URL's.
  testing::TempDir other_dir;
  testing::TestCertificates other;
  ASSERT_TRUE(testing::MakeTestCertificates(other_dir.path(), &other, "DNS:receiver.example").ok());
  TestHttpServerOptions tls;
  tls.cert_file = other.cert_file;
  tls.key_file = other.key_file;
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, tls);
  HttpClientOptions options;
  options.ca_file = other.ca_file;
  auto client = MakeClient(server.url("https"), options);
  HttpClientResponse response;
  const Status status = client->Post("x", {}, &response);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("127.0.0.1"), std::string::npos) << status.message();
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTls, UnreadableOrNonPemCaFileIsAnInvalidArgument) {
  HttpClientOptions options;
  std::unique_ptr<HttpClient> client;
  options.ca_file = dir_.path() + "/missing.pem";
  EXPECT_EQ(HttpClient::Create("https://127.0.0.1:1/", options, &client).code(),
            Status::Code::kInvalidArgument);
  options.ca_file = certificates_.key_file;  // a PEM file, but a key
  const Status status = HttpClient::Create("https://127.0.0.1:1/", options, &client);
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(status.message().find("no PEM certificate"), std::string::npos) << status.message();
}

TEST_F(HttpClientTls, PlainHttpAgainstATlsServerIsAnErrorNotAHang) {
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  HttpClientOptions options;
  options.timeout = std::chrono::seconds(30);
  auto client = MakeClient(server.url("http"), options);
  HttpClientResponse response;
  EXPECT_FALSE(client->Post("x", {}, &response).ok());
}

TEST_F(HttpClientTls, InterruptEndsAHandshakeTheServerNeverAnswers) {
  // A server that accepts the connection and never says a word: the client waits in the TLS handshake.
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  HttpClientOptions options = TrustingTheCa();
  options.timeout = std::chrono::hours(1);
  auto client = MakeClient("https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/", options);
  auto result = std::async(std::launch::async, [&] {
    HttpClientResponse response;
    return client->Post("x", {}, &response);
  });
  const int accepted = accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  char hello[1];
  ASSERT_EQ(recv(accepted, hello, 1, MSG_PEEK), 1);  // the ClientHello is on its way: the client waits
  client->Interrupt();
  const Status status = result.get();  // returns although the timeout is an hour: that is the assertion
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message(), "interrupted");
  close(accepted);
  close(listener);
}

// HTTP/2 against a real HTTP/2 server (nghttpd from Debian's nghttp2-server), negotiated by ALPN.
TEST_F(HttpClientTls, Http2IsSpokenWhenTheServerOffersItAndOneConnectionCarriesEveryRequest) {
  testing::Nghttpd server(dir_.path());
  const Status started = server.Start(certificates_);
  ASSERT_TRUE(started.ok()) << started.ToString();
  auto client =
      MakeClient("https://localhost:" + std::to_string(server.port()) + "/loki/api/v1/push", TrustingTheCa());
  for (int i = 0; i < 3; ++i) {
    HttpClientResponse response;
    const std::string body = "push " + std::to_string(i) + std::string(30000 * i, 'z');  // over one frame
    const Status status = client->Post(body, {{"Content-Type", "application/x-protobuf"}}, &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.protocol, "HTTP/2");
    EXPECT_TRUE(response.body == body) << response.body.size();  // echoed: the server got the whole body
  }
  EXPECT_EQ(client->connections_opened(), 1u);
}

// Proxies from the environment, through a real HTTP proxy (tinyproxy from Debian) on loopback.
class HttpClientProxy : public HttpClientTls {
 protected:
  void SetUp() override {
    HttpClientTls::SetUp();
    const Status started = proxy_.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  // Whether any request went through the proxy.
  bool ProxyUsed() const { return !proxy_.Requests().empty(); }
  testing::TinyProxy proxy_{dir_.path()};
};

TEST_F(HttpClientProxy, HttpsGoesThroughTheProxyNamedByHttpsProxyInATunnel) {
  for (const char* variable : {"HTTPS_PROXY", "https_proxy"}) {
    SCOPED_TRACE(variable);
    testing::ProxyEnvironment environment;
    environment.Set(variable, proxy_.url());
    ScriptedServer server([](const TestHttpRequest& r) { return Answer(200, r.body); }, TlsOptions());
    // 127.0.0.1, not localhost: the proxy resolves the name itself, and a root without /etc/hosts (a
    // fresh container) has no "localhost". The certificate names both.
    const std::string authority = "127.0.0.1:" + std::to_string(server.server().port());
    auto client = MakeClient("https://" + authority + "/v1/logs", TrustingTheCa());
    for (int i = 0; i < 3; ++i) {
      HttpClientResponse response;
      const Status status = client->Post("tunnelled", {{"X-Scope-OrgID", "t1"}}, &response);
      ASSERT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(response.status, 200);
      EXPECT_EQ(response.body, "tunnelled");
    }
    // One tunnel, kept for every request; TLS ran end to end (the server verified as 127.0.0.1).
    EXPECT_EQ(client->connections_opened(), 1u);
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 3u);
    EXPECT_EQ(requests[0].Header("x-scope-orgid"), "t1");
    EXPECT_EQ(requests[0].Header("via"), "");  // the proxy saw only ciphertext
    const auto proxied = proxy_.Requests();
    ASSERT_FALSE(proxied.empty());
    EXPECT_EQ(proxied.back(), "CONNECT " + authority + " HTTP/1.1");
  }
}

TEST_F(HttpClientProxy, HttpGoesThroughTheProxyNamedByLowerCaseHttpProxy) {
  environment_.Set("http_proxy", proxy_.url());
  ScriptedServer server([](const TestHttpRequest&) { return Answer(204); });
  auto client = MakeClient(server.url("http", "/loki/api/v1/push"));
  HttpClientResponse response;
  const Status status = client->Post("plain", {{"Content-Type", "text/plain"}}, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.status, 204);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].Header("via").find("tinyproxy"), std::string_view::npos);
  EXPECT_EQ(requests[0].body, "plain");
  EXPECT_EQ(proxy_.Requests(),
            std::vector<std::string>{"POST " + server.url("http", "/loki/api/v1/push") + " HTTP/1.1"});
}

TEST_F(HttpClientProxy, UpperCaseHttpProxyIsIgnoredForHttpButAllProxyIsUsed) {
  // libcurl reads HTTP_PROXY only in lower case (CGI servers set HTTP_PROXY from a request's Proxy
  // header); ALL_PROXY is the upper-case way to proxy plain http.
  ScriptedServer server([](const TestHttpRequest&) { return Answer(204); });
  environment_.Set("HTTP_PROXY", proxy_.url());
  HttpClientResponse response;
  ASSERT_TRUE(MakeClient(server.url())->Post("direct", {}, &response).ok());
  EXPECT_EQ(response.status, 204);
  EXPECT_FALSE(ProxyUsed());
  EXPECT_EQ(server.requests()[0].Header("via"), "");

  environment_.Set("ALL_PROXY", proxy_.url());
  ASSERT_TRUE(MakeClient(server.url())->Post("proxied", {}, &response).ok());
  EXPECT_EQ(response.status, 204);
  EXPECT_TRUE(ProxyUsed());
  EXPECT_NE(server.requests()[1].Header("via").find("tinyproxy"), std::string_view::npos);
}

TEST_F(HttpClientProxy, NoProxyBypassesTheProxyForTheHostsItNames) {
  struct Case {
    const char* variable;
    std::string hosts;
    std::string url_host;
  };
  ScriptedServer https_server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  ScriptedServer http_server([](const TestHttpRequest&) { return Answer(204); });
  for (const Case& c :
       {Case{"NO_PROXY", "example.org,127.0.0.1", "127.0.0.1"}, Case{"no_proxy", "localhost", "localhost"},
        Case{"NO_PROXY", "127.0.0.0/8", "127.0.0.1"}, Case{"no_proxy", "*", "localhost"}}) {
    SCOPED_TRACE(std::string(c.variable) + "=" + c.hosts);
    testing::ProxyEnvironment environment;
    environment.Set("https_proxy", proxy_.url());
    environment.Set("http_proxy", proxy_.url());
    environment.Set(c.variable, c.hosts);
    HttpClientResponse response;
    const std::string https_url =
        "https://" + c.url_host + ":" + std::to_string(https_server.server().port());
    Status status = MakeClient(https_url + "/", TrustingTheCa())->Post("x", {}, &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.status, 200);
    const std::string http_url = "http://" + c.url_host + ":" + std::to_string(http_server.server().port());
    status = MakeClient(http_url + "/")->Post("x", {}, &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.status, 204);
    EXPECT_FALSE(ProxyUsed());
  }
  // The same requests without NO_PROXY do go through the proxy: the bypass above is what NO_PROXY did.
  environment_.Set("https_proxy", proxy_.url());
  HttpClientResponse response;
  const std::string https_url = "https://127.0.0.1:" + std::to_string(https_server.server().port()) + "/";
  ASSERT_TRUE(MakeClient(https_url, TrustingTheCa())->Post("x", {}, &response).ok());
  EXPECT_TRUE(ProxyUsed());
}

TEST_F(HttpClientProxy, Http2IsNegotiatedThroughTheTunnel) {
  testing::Nghttpd server(dir_.path());
  const Status started = server.Start(certificates_);
  ASSERT_TRUE(started.ok()) << started.ToString();
  environment_.Set("HTTPS_PROXY", proxy_.url());
  auto client =  // an address, not a name the proxy would have to resolve (see above)
      MakeClient("https://127.0.0.1:" + std::to_string(server.port()) + "/v1/logs", TrustingTheCa());
  HttpClientResponse response;
  const Status status = client->Post("over h2 in a tunnel", {}, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.protocol, "HTTP/2");
  EXPECT_EQ(response.body, "over h2 in a tunnel");
  EXPECT_EQ(proxy_.Requests(),
            std::vector<std::string>{"CONNECT 127.0.0.1:" + std::to_string(server.port()) + " HTTP/1.1"});
}

TEST_F(HttpClientProxy, AProxyThatIsDownIsAnError) {
  const std::string url = proxy_.url();
  proxy_.Stop();  // nothing listens on its port any more
  environment_.Set("https_proxy", url);
  ScriptedServer server([](const TestHttpRequest&) { return Answer(200); }, TlsOptions());
  auto client = MakeClient(server.url("https"), TrustingTheCa());
  HttpClientResponse response;
  EXPECT_EQ(client->Post("x", {}, &response).code(), Status::Code::kUnavailable);
  EXPECT_TRUE(server.requests().empty());
}

}  // namespace
}  // namespace gpuscope
