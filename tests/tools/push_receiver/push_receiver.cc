#include "tests/tools/push_receiver/push_receiver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "src/core/json_string.h"
#include "tests/tools/push_receiver/push_decoder.h"

namespace gpuscope::testing {
namespace {

constexpr size_t kMaxInflatedBytes = 256 << 20;
// What mode=garbage answers: not HTTP, with a NUL and bytes that are not UTF-8.
constexpr char kGarbage[] = "\x00\xff garbage, not HTTP \x01\x02\r\n\r\n";

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

TestHttpReply Reply(int status, std::string_view content_type, std::string_view body,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return TestHttpReply{MakeHttpResponse(status, content_type, body, headers)};
}

}  // namespace

bool ParseReceiverMode(std::string_view name, ReceiverMode* mode) {
  for (ReceiverMode m : {ReceiverMode::kOk, ReceiverMode::kUnavailable, ReceiverMode::kTooManyRequests,
                         ReceiverMode::kBadRequest, ReceiverMode::kGarbage, ReceiverMode::kHang}) {
    if (ReceiverModeName(m) == name) {
      *mode = m;
      return true;
    }
  }
  return false;
}

std::string_view ReceiverModeName(ReceiverMode mode) {
  switch (mode) {
    case ReceiverMode::kOk:
      return "ok";
    case ReceiverMode::kUnavailable:
      return "503";
    case ReceiverMode::kTooManyRequests:
      return "429";
    case ReceiverMode::kBadRequest:
      return "400";
    case ReceiverMode::kGarbage:
      return "garbage";
    case ReceiverMode::kHang:
      return "hang";
  }
  return "ok";
}

PushReceiver::PushReceiver(PushReceiverOptions options)
    : options_(std::move(options)),
      mode_(options_.mode),
      retry_after_seconds_(options_.retry_after_seconds) {}

PushReceiver::~PushReceiver() { Stop(); }

Status PushReceiver::Start() {
  if (!options_.output_path.empty()) {
    output_fd_ = open(options_.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (output_fd_ < 0) {
      return Status::Unavailable("cannot open " + options_.output_path + ": " + std::strerror(errno));
    }
  }
  TestHttpServerOptions server_options;
  server_options.port = options_.port;
  server_options.cert_file = options_.cert_file;
  server_options.key_file = options_.key_file;
  server_ = std::make_unique<TestHttpServer>(
      server_options, [this](const TestHttpRequest& request) { return Handle(request); });
  return server_->Start();
}

void PushReceiver::Stop() {
  if (server_) server_->Stop();
  server_.reset();
  if (output_fd_ >= 0) close(output_fd_);
  output_fd_ = -1;
}

uint16_t PushReceiver::port() const { return server_ ? server_->port() : 0; }

uint64_t PushReceiver::connections_accepted() const { return server_ ? server_->connections_accepted() : 0; }

void PushReceiver::SetMode(ReceiverMode mode, int retry_after_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  mode_ = mode;
  retry_after_seconds_ = retry_after_seconds;
}

ReceiverMode PushReceiver::mode() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mode_;
}

std::vector<std::string> PushReceiver::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

void PushReceiver::Record(std::vector<std::string> lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (output_fd_ >= 0) {
    // One append per request: a reader of the file never sees half a request.
    std::string_view rest = text;
    while (!rest.empty()) {
      const ssize_t n = write(output_fd_, rest.data(), rest.size());
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) rest.remove_prefix(static_cast<size_t>(n));
    }
  }
  for (auto& line : lines) lines_.push_back(std::move(line));
}

TestHttpReply PushReceiver::Handle(const TestHttpRequest& request) {
  if (request.path == "/control") {
    if (request.method == "POST") {
      ReceiverMode mode;
      if (!ParseReceiverMode(request.QueryParam("mode"), &mode)) {
        return Reply(400, "text/plain", "mode must be ok|503|429|400|garbage|hang\n");
      }
      const std::string retry_after = request.QueryParam("retry_after");
      SetMode(mode, retry_after.empty() ? -1 : std::atoi(retry_after.c_str()));
    }
    return Reply(200, "text/plain", "mode " + std::string(ReceiverModeName(mode())) + "\n");
  }
  if (request.path == "/stats" && request.method == "GET") {
    size_t entries;
    {
      std::lock_guard<std::mutex> lock(mu_);
      entries = lines_.size();
    }
    const std::string body = "{\"push_requests\":" + std::to_string(push_requests()) +
                             ",\"accepted_requests\":" + std::to_string(accepted_requests()) +
                             ",\"decode_errors\":" + std::to_string(decode_errors()) +
                             ",\"lines\":" + std::to_string(entries) + ",\"mode\":\"" +
                             std::string(ReceiverModeName(mode())) + "\"}\n";
    return Reply(200, "application/json", body);
  }
  const bool loki = request.path == "/loki/api/v1/push";
  const bool otlp = request.path == "/v1/logs";
  const bool metrics = request.path == "/v1/metrics" || request.path == "/api/v1/write";
  if (!loki && !otlp && !metrics) return Reply(404, "text/plain", "not found\n");
  if (request.method != "POST") return Reply(405, "text/plain", "POST only\n");
  if (metrics) return HandleMetricsPush(request);
  return HandlePush(request, otlp);
}

std::optional<TestHttpReply> PushReceiver::FaultReply() {
  push_requests_.fetch_add(1);
  ReceiverMode mode;
  int retry_after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mode = mode_;
    retry_after = retry_after_seconds_;
  }
  std::vector<std::pair<std::string, std::string>> retry_header;
  if (retry_after >= 0) retry_header.emplace_back("Retry-After", std::to_string(retry_after));
  switch (mode) {
    case ReceiverMode::kOk:
      break;
    case ReceiverMode::kUnavailable:
      return Reply(503, "text/plain", "test receiver in mode 503\n", retry_header);
    case ReceiverMode::kTooManyRequests:
      return Reply(429, "text/plain", "test receiver in mode 429\n", retry_header);
    case ReceiverMode::kBadRequest:
      return Reply(400, "text/plain", "test receiver in mode 400\n");
    case ReceiverMode::kGarbage:
      return TestHttpReply{std::string(kGarbage, sizeof(kGarbage) - 1), /*close=*/true};
    case ReceiverMode::kHang:
      return TestHttpReply{"", false, /*hang=*/true};
  }
  return std::nullopt;
}

TestHttpReply PushReceiver::HandleMetricsPush(const TestHttpRequest& request) {
  if (std::optional<TestHttpReply> fault = FaultReply()) return *fault;
  std::string line = "{\"target\":";
  AppendJsonString(line, request.target);
  line += ",\"bytes\":" + std::to_string(request.body.size()) + ",\"headers\":{";
  for (size_t i = 0; i < request.headers.size(); ++i) {
    if (i > 0) line += ",";
    AppendJsonString(line, request.headers[i].first);
    line += ":";
    AppendJsonString(line, request.headers[i].second);
  }
  line += "}}";
  Record({std::move(line)});
  accepted_requests_.fetch_add(1);
  if (request.path == "/v1/metrics") return Reply(200, "application/x-protobuf", "");
  return Reply(204, "", "");
}

TestHttpReply PushReceiver::HandlePush(const TestHttpRequest& request, bool otlp) {
  if (std::optional<TestHttpReply> fault = FaultReply()) return *fault;
  std::string inflated;
  std::string_view body = request.body;
  const std::string_view encoding = request.Header("content-encoding");
  if (encoding == "gzip") {
    if (!Gunzip(body, kMaxInflatedBytes, &inflated)) return Reply(400, "text/plain", "bad gzip body\n");
    body = inflated;
  } else if (!encoding.empty() && encoding != "identity") {
    return Reply(415, "text/plain", "unsupported Content-Encoding\n");
  }
  const std::string_view content_type = request.Header("content-type");
  const bool protobuf = StartsWithNoCase(content_type, "application/x-protobuf");
  const bool json = StartsWithNoCase(content_type, "application/json");
  if (!protobuf && !(json && !otlp)) return Reply(415, "text/plain", "unsupported Content-Type\n");

  std::vector<std::string> lines;
  std::string error;
  const bool ok = otlp ? DecodeOtlpLogs(body, &lines, &error) : DecodeLokiPush(body, json, &lines, &error);
  if (!ok) {
    decode_errors_.fetch_add(1);
    std::string line = "{\"error\":";
    AppendJsonString(line, error);
    line += ",\"path\":";
    AppendJsonString(line, request.path);
    line += "}";
    Record({std::move(line)});
    return Reply(400, "text/plain", "cannot decode: " + error + "\n");
  }
  Record(std::move(lines));
  accepted_requests_.fetch_add(1);
  if (otlp) return Reply(200, "application/x-protobuf", "");  // an empty ExportLogsServiceResponse
  return Reply(204, "", "");
}

}  // namespace gpuscope::testing
