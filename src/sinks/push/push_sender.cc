#include "src/sinks/push/push_sender.h"

#include <algorithm>
#include <charconv>

#include "src/core/log.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

bool IsRetryable(int code) { return code == 429 || code >= 500 || code < 400; }

// Retry-After as delay-seconds (RFC 9110 section 10.2.3); 0 when absent or an HTTP-date (which push
// receivers do not send).
std::chrono::milliseconds RetryAfter(const HttpClientResponse& response) {
  if (response.status != 429 && response.status != 503) return std::chrono::milliseconds(0);
  const std::string_view value = response.Header("retry-after");
  uint32_t seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size())
    return std::chrono::milliseconds(0);
  return std::chrono::seconds(std::min<uint32_t>(seconds, 24 * 3600));
}

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The first bytes of a rejection's body, for the log: receivers say there what they did not like.
std::string Excerpt(std::string_view body) {
  constexpr size_t kMax = 200;
  std::string out(body.substr(0, kMax));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// A password or token file's content without its trailing line break (editors and `echo` add one);
// false when it cannot be read. Secrets are short: more than 64 KiB is not one.
bool ReadSecretFile(const std::string& path, std::string* secret) {
  secret->clear();
  if (ReadFileInto(path, secret, 64 << 10) != 0) return false;
  while (!secret->empty() && (secret->back() == '\n' || secret->back() == '\r')) secret->pop_back();
  return true;
}

}  // namespace

PushSender::PushSender(DurableQueue* queue, PushSinkOptions options)
    : queue_(queue), options_(std::move(options)), rng_(std::random_device{}()) {}

PushSender::~PushSender() { Stop(); }

Status PushSender::Start() {
  {
    MutexLock lock(&mu_);
    if (running_) return Status::Internal("PushSender " + options_.name + " already running");
  }
  if (!options_.encode) return Status::InvalidArgument("push sink " + options_.name + " has no encoder");
  if (!queue_->HasConsumer(options_.name)) {
    return Status::InvalidArgument("push sink " + options_.name + " is not a consumer of the queue");
  }
  HttpClientOptions client_options;
  client_options.timeout = options_.timeout;
  client_options.ca_file = options_.ca_file;
  client_options.cert_file = options_.cert_file;
  client_options.key_file = options_.key_file;
  if (!options_.username.empty() && !options_.bearer_token_file.empty()) {
    return Status::InvalidArgument("push sink " + options_.name +
                                   ": basic auth and a bearer token are exclusive");
  }
  client_options.username = options_.username;
  if (!options_.password_file.empty() && !ReadSecretFile(options_.password_file, &client_options.password)) {
    return Status::InvalidArgument("push sink " + options_.name + ": cannot read the password file " +
                                   options_.password_file);
  }
  std::string token;  // read for every request; unreadable now is a configuration error
  if (!options_.bearer_token_file.empty() && !ReadSecretFile(options_.bearer_token_file, &token)) {
    return Status::InvalidArgument("push sink " + options_.name + ": cannot read the bearer token file " +
                                   options_.bearer_token_file);
  }
  std::unique_ptr<HttpClient> client;
  Status status = HttpClient::Create(options_.url, client_options, &client);
  if (!status.ok()) {
    return Status::InvalidArgument("push sink " + options_.name + ": " + status.message());
  }
  client_ = std::move(client);
  backoff_ = std::chrono::milliseconds(0);
  healthy_ = true;
  {
    MutexLock lock(&mu_);
    running_ = true;
    stopping_ = false;
    woken_ = false;
    backoff_seconds_ = 0;
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void PushSender::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stopping_ = true;
  }
  cv_.NotifyAll();
  client_->Interrupt();
  thread_.join();
  client_.reset();
  MutexLock lock(&mu_);
  running_ = false;
}

void PushSender::Wake() {
  {
    MutexLock lock(&mu_);
    woken_ = true;
  }
  cv_.NotifyAll();
}

bool PushSender::Sleep(std::chrono::milliseconds duration, bool wakeable) {
  const auto deadline = std::chrono::steady_clock::now() + duration;
  MutexLock lock(&mu_);
  while (!stopping_ && !(wakeable && woken_) && std::chrono::steady_clock::now() < deadline) {
    cv_.WaitUntil(&mu_, deadline);
  }
  if (wakeable) woken_ = false;
  return !stopping_;
}

std::chrono::milliseconds PushSender::NextBackoff(std::chrono::milliseconds retry_after) {
  const auto min_backoff = std::max(options_.min_backoff, std::chrono::milliseconds(1));
  const auto max_backoff = std::max(options_.max_backoff, min_backoff);
  backoff_ = backoff_.count() == 0 ? min_backoff : std::min(max_backoff, backoff_ * 2);
  // Equal jitter: somewhere in [backoff/2, backoff], so senders on many nodes do not retry in step.
  std::uniform_int_distribution<int64_t> jitter(backoff_.count() / 2, backoff_.count());
  auto wait = std::chrono::milliseconds(jitter(rng_));
  wait = std::min(max_backoff, std::max(wait, retry_after));
  return wait;
}

void PushSender::SetBackoff(std::chrono::milliseconds backoff) {
  if (backoff.count() == 0) backoff_ = backoff;
  MutexLock lock(&mu_);
  backoff_seconds_ = std::chrono::duration<double>(backoff).count();
}

PushSender::Outcome PushSender::Attempt(const QueueBatch& batch, std::chrono::milliseconds* retry_after) {
  *retry_after = std::chrono::milliseconds(0);
  std::string token;
  if (!options_.bearer_token_file.empty() && !ReadSecretFile(options_.bearer_token_file, &token)) {
    {
      MutexLock lock(&mu_);
      ++requests_by_code_["error"];
      ++failed_requests_;
    }
    if (healthy_) {
      Log(LogLevel::kWarn, "push sink cannot read its bearer token file, will retry",
          {{"sink", options_.name}, {"file", options_.bearer_token_file}});
    }
    healthy_ = false;
    return Outcome::kRetry;
  }
  const EncodedBody encoded = options_.encode(batch.records);
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(options_.headers.size() + encoded.headers.size() + 3);
  if (!options_.bearer_token_file.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  if (!encoded.content_type.empty()) headers.emplace_back("Content-Type", encoded.content_type);
  if (!encoded.content_encoding.empty()) headers.emplace_back("Content-Encoding", encoded.content_encoding);
  headers.insert(headers.end(), options_.headers.begin(), options_.headers.end());
  headers.insert(headers.end(), encoded.headers.begin(), encoded.headers.end());

  HttpClientResponse response;
  const Status status = client_->Post(encoded.body, headers, &response);
  const bool negotiable =
      status.ok() && ((response.status >= 200 && response.status < 300) || response.status == 415);
  if (negotiable && options_.accept && !options_.accept(response)) {
    MutexLock lock(&mu_);
    ++requests_by_code_[std::to_string(response.status)];
    return Outcome::kResend;
  }
  {
    MutexLock lock(&mu_);
    // Interrupted by Stop(): not the receiver's failure, and the batch stays queued.
    if (!status.ok() && stopping_) return Outcome::kStopped;
    if (!status.ok()) {
      ++requests_by_code_["error"];
      ++failed_requests_;
    } else {
      ++requests_by_code_[std::to_string(response.status)];
      if (response.status >= 200 && response.status < 300) {
        sent_records_ += batch.records.size();
        sent_bytes_ += encoded.body.size();
        last_success_unix_seconds_ = NowUnixSeconds();
      } else {
        ++failed_requests_;
        if (!IsRetryable(response.status)) dropped_rejected_ += batch.records.size();
      }
    }
  }
  const std::string sink = options_.name;
  if (!status.ok()) {
    if (healthy_)
      Log(LogLevel::kWarn, "push failed, will retry", {{"sink", sink}, {"error", status.message()}});
    healthy_ = false;
    return Outcome::kRetry;
  }
  if (response.status >= 200 && response.status < 300) {
    if (!healthy_) Log(LogLevel::kInfo, "push recovered", {{"sink", sink}});
    healthy_ = true;
    return Outcome::kDelivered;
  }
  const std::string code = std::to_string(response.status);
  if (IsRetryable(response.status)) {
    if (healthy_) {
      Log(LogLevel::kWarn, "push refused, will retry",
          {{"sink", sink}, {"status", code}, {"body", Excerpt(response.body)}});
    }
    healthy_ = false;
    *retry_after = RetryAfter(response);
    return Outcome::kRetry;
  }
  const std::string records = std::to_string(batch.records.size());
  Log(LogLevel::kWarn, "push rejected, records dropped",
      {{"sink", sink}, {"status", code}, {"records", records}, {"body", Excerpt(response.body)}});
  return Outcome::kRejected;
}

void PushSender::Run() {
  const std::string sink = options_.name;
  bool queue_readable = true;
  while (true) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    QueueBatch batch;
    const Status peeked = queue_->Peek(sink, options_.max_batch_records, options_.max_batch_bytes, &batch);
    if (!peeked.ok()) {
      // A local disk problem, not the receiver's: logged once, retried at the idle pace.
      if (queue_readable) {
        Log(LogLevel::kWarn, "push sink cannot read the queue",
            {{"sink", sink}, {"error", peeked.message()}});
      }
      queue_readable = false;
      if (!Sleep(std::max(options_.idle_poll, options_.min_backoff), false)) return;
      continue;
    }
    queue_readable = true;
    if (batch.id == 0) {
      if (!Sleep(options_.idle_poll, true)) return;
      continue;
    }
    std::chrono::milliseconds retry_after;
    const Outcome outcome = Attempt(batch, &retry_after);
    if (outcome == Outcome::kStopped) return;
    if (outcome == Outcome::kResend) continue;
    if (options_.on_result) {
      options_.on_result(batch.records, outcome == Outcome::kDelivered  ? BatchFate::kDelivered
                                        : outcome == Outcome::kRejected ? BatchFate::kRejected
                                                                        : BatchFate::kRetry);
    }
    if (outcome == Outcome::kRetry) {
      // The batch stays queued; the next Peek returns it again (or what is oldest after drops).
      const auto wait = NextBackoff(retry_after);
      SetBackoff(wait);
      if (!Sleep(wait, false)) return;
      continue;
    }
    SetBackoff(std::chrono::milliseconds(0));
    const Status acked = queue_->Ack(sink, batch.id);
    if (!acked.ok()) {
      Log(LogLevel::kWarn, "push sink cannot acknowledge a batch",
          {{"sink", sink}, {"error", acked.message()}});
    }
  }
}

std::vector<MetricDescription> PushSender::Describe() {
  return {
      {"gpuscope_sink_requests_total",
       MetricType::kCounter,
       "Push requests by outcome: the HTTP status code, or error when no response came (connection, "
       "timeout, not HTTP).",
       "",
       {"sink", "code"},
       "push sender"},
      {"gpuscope_sink_sent_records_total",
       MetricType::kCounter,
       "Records delivered (acknowledged by a 2xx response).",
       "",
       {"sink"},
       "push sender"},
      {"gpuscope_sink_sent_bytes_total",
       MetricType::kCounter,
       "Request body bytes delivered (as sent, after compression).",
       "bytes",
       {"sink"},
       "push sender"},
      {"gpuscope_sink_failed_requests_total",
       MetricType::kCounter,
       "Push requests that did not deliver: non-2xx responses and errors.",
       "",
       {"sink"},
       "push sender"},
      {"gpuscope_sink_dropped_records_total",
       MetricType::kCounter,
       "Records given up on: reason=rejected when the receiver answered a 4xx other than 429.",
       "",
       {"sink", "reason"},
       "push sender"},
      {"gpuscope_sink_last_success_timestamp_seconds",
       MetricType::kGauge,
       "Unix time of the last delivered batch; 0 before the first.",
       "seconds",
       {"sink"},
       "push sender"},
      {"gpuscope_sink_retry_backoff_seconds",
       MetricType::kGauge,
       "Current wait before the next retry; 0 when the receiver is healthy.",
       "seconds",
       {"sink"},
       "push sender"},
  };
}

std::vector<MetricFamily> PushSender::Metrics() const {
  const auto descriptions = Describe();
  std::vector<MetricFamily> out;
  out.reserve(descriptions.size());
  for (const auto& d : descriptions) {
    MetricFamily family;
    family.name = d.name;
    family.help = d.help;
    family.type = d.type;
    family.unit = d.unit;
    out.push_back(std::move(family));
  }
  const std::string& sink = options_.name;
  MutexLock lock(&mu_);
  for (const auto& [code, count] : requests_by_code_) {
    out[0].samples.push_back({{{"sink", sink}, {"code", code}}, static_cast<double>(count)});
  }
  out[1].samples.push_back({{{"sink", sink}}, static_cast<double>(sent_records_)});
  out[2].samples.push_back({{{"sink", sink}}, static_cast<double>(sent_bytes_)});
  out[3].samples.push_back({{{"sink", sink}}, static_cast<double>(failed_requests_)});
  out[4].samples.push_back(
      {{{"sink", sink}, {"reason", "rejected"}}, static_cast<double>(dropped_rejected_)});
  out[5].samples.push_back({{{"sink", sink}}, last_success_unix_seconds_});
  out[6].samples.push_back({{{"sink", sink}}, backoff_seconds_});
  return out;
}

}  // namespace gpuscope
