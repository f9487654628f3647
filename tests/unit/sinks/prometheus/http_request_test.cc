#include "src/sinks/prometheus/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscope {
namespace {

TEST(PrometheusHttpRequest, ParsesRequestLineHeadersAndQuery) {
  std::string raw = "GET /metrics?collect=gpu HTTP/1.1\r\nHost: x\r\nAccept:  text/plain \r\n\r\nNEXT";
  HttpRequestHead head;
  ParseResult result = ParseRequestHead(raw, head);
  ASSERT_EQ(result.outcome, ParseOutcome::kComplete);
  EXPECT_EQ(result.consumed, raw.size() - 4);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/metrics");
  EXPECT_EQ(head.query, "collect=gpu");
  EXPECT_EQ(head.Header("accept"), "text/plain");
  EXPECT_TRUE(head.keep_alive);
}

TEST(PrometheusHttpRequest, ReportsIncompleteUntilTheEmptyLine) {
  HttpRequestHead head;
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: x\r\n", head).outcome, ParseOutcome::kIncomplete);
  EXPECT_EQ(ParseRequestHead("", head).outcome, ParseOutcome::kIncomplete);
  // Bare LF line endings are accepted.
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\nHost: x\n\n", head).outcome, ParseOutcome::kComplete);
}

TEST(PrometheusHttpRequest, KeepAliveFollowsVersionAndConnectionHeader) {
  HttpRequestHead head;
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", head).outcome,
            ParseOutcome::kComplete);
  EXPECT_FALSE(head.keep_alive);
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.0\r\n\r\n", head).outcome, ParseOutcome::kComplete);
  EXPECT_FALSE(head.keep_alive);
  EXPECT_EQ(head.version_minor, 0);
  ASSERT_EQ(ParseRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", head).outcome,
            ParseOutcome::kComplete);
  EXPECT_TRUE(head.keep_alive);
}

int ErrorStatus(const std::string& raw) {
  HttpRequestHead head;
  ParseResult result = ParseRequestHead(raw, head);
  return result.outcome == ParseOutcome::kError ? result.error_status : 0;
}

TEST(PrometheusHttpRequest, RejectsMalformedRequestsWith400) {
  EXPECT_EQ(ErrorStatus("GET /\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\nHost x\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\n\r\n"), 400);  // HTTP/1.1 requires Host
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n"), 400);
}

TEST(PrometheusHttpRequest, RejectsBodiesWith413AndOtherVersionsWith505) {
  EXPECT_EQ(ErrorStatus("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"), 413);
  EXPECT_EQ(ErrorStatus("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), 413);
  EXPECT_EQ(ErrorStatus("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), 0);
  EXPECT_EQ(ErrorStatus("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
}

TEST(PrometheusHttpRequest, RejectsHeadsBeyondTheSizeLimitWith431) {
  std::string raw = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(kMaxRequestHeadBytes, 'a');
  EXPECT_EQ(ErrorStatus(raw), 431);
  EXPECT_EQ(ErrorStatus(raw + "\r\n\r\n"), 431);
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (size_t i = 0; i < kMaxRequestHeaders + 1; ++i) many += "A: b\r\n";
  EXPECT_EQ(ErrorStatus(many + "\r\n"), 431);
}

// A route that takes POST bodies of at most 10 bytes on /in, as HttpServer::HandlePost sets up.
size_t TenBytesOnIn(const HttpRequestHead& head) {
  return head.method == "POST" && head.path == "/in" ? 10 : 0;
}

ParseResult ParseWithBodies(std::string_view raw, HttpRequestHead& head) {
  return ParseRequestHead(raw, head, TenBytesOnIn);
}

TEST(PrometheusHttpRequest, TakesABodyOfExactlyTheLimitWhereTheRouteTakesOne) {
  std::string raw = "POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789";
  HttpRequestHead head;
  ParseResult result = ParseWithBodies(raw, head);
  ASSERT_EQ(result.outcome, ParseOutcome::kComplete);
  EXPECT_EQ(result.consumed, raw.size() - 10) << "the body follows the head";
  EXPECT_EQ(head.content_length, 10u);
  // The head is complete before any of the body arrived: the caller waits for the rest.
  ASSERT_EQ(ParseWithBodies(raw.substr(0, raw.size() - 10), head).outcome, ParseOutcome::kComplete);
  EXPECT_EQ(head.content_length, 10u);
  ASSERT_EQ(ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", head).outcome,
            ParseOutcome::kComplete);
  EXPECT_EQ(head.content_length, 0u);
}

TEST(PrometheusHttpRequest, RejectsABodyBeyondTheLimitWith413) {
  HttpRequestHead head;
  ParseResult result = ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", head);
  EXPECT_EQ(result.outcome, ParseOutcome::kError);
  EXPECT_EQ(result.error_status, 413);
  result =
      ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999999999\r\n\r\n", head);
  EXPECT_EQ(result.error_status, 413);
  // Elsewhere (another path, another method) bodies are refused as without routes.
  EXPECT_EQ(
      ParseWithBodies("POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", head).error_status,
      413);
  EXPECT_EQ(ParseWithBodies("PUT /in HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", head).error_status,
            413);
  EXPECT_EQ(ParseWithBodies("GET /in HTTP/1.1\r\nHost: x\r\n\r\n", head).outcome, ParseOutcome::kComplete);
  EXPECT_EQ(head.content_length, 0u);
}

TEST(PrometheusHttpRequest, RequiresAContentLengthWith411WhereTheRouteTakesABody) {
  HttpRequestHead head;
  ParseResult result = ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\n\r\n", head);
  EXPECT_EQ(result.outcome, ParseOutcome::kError);
  EXPECT_EQ(result.error_status, 411);
  EXPECT_EQ(result.error, "Content-Length required");
  result = ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", head);
  EXPECT_EQ(result.error_status, 411) << "chunked bodies are not read";
  result = ParseWithBodies(
      "POST /in HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", head);
  EXPECT_EQ(result.error_status, 411);
  result =
      ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", head);
  EXPECT_EQ(result.error_status, 400);
  EXPECT_EQ(ParseWithBodies("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", head).error_status,
            400);
}

}  // namespace
}  // namespace gpuscope
