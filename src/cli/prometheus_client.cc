#include "src/cli/prometheus_client.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

// A sample value as the API writes it: a string ("1.5", "NaN", "+Inf").
bool ParseSampleValue(const nlohmann::json& point, std::pair<double, double>* out) {
  if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_string()) return false;
  const std::string text = point[1].get<std::string>();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return false;
  *out = {point[0].get<double>(), value};
  return true;
}

}  // namespace

std::string PromSeries::Label(const std::string& name) const {
  auto it = labels.find(name);
  return it == labels.end() ? std::string() : it->second;
}

std::string PromSeries::Host() const {
  std::string host = Label("Hostname");
  return host.empty() ? Label("hostname") : host;
}

std::string EncodeQueryValue(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

Status ParsePrometheusResponse(std::string_view body, std::vector<PromSeries>* series) {
  series->clear();
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("status") || !doc["status"].is_string()) {
    return Status::InvalidArgument("the answer is not Prometheus API JSON");
  }
  if (doc["status"] != "success") {
    std::string type = doc.value("errorType", std::string("unknown"));
    std::string error = doc.value("error", std::string("(no message)"));
    return Status::Unavailable("Prometheus answered " + type + ": " + error);
  }
  const nlohmann::json& data = doc.contains("data") ? doc["data"] : nlohmann::json();
  if (!data.is_object() || !data.contains("resultType") || !data.contains("result")) {
    return Status::InvalidArgument("the answer has no data.resultType and data.result");
  }
  const std::string type = data["resultType"].is_string() ? data["resultType"].get<std::string>() : "";
  const nlohmann::json& result = data["result"];
  if (type == "scalar") {
    PromSeries one;
    std::pair<double, double> point;
    if (!ParseSampleValue(result, &point)) return Status::InvalidArgument("a scalar result is malformed");
    one.points.push_back(point);
    series->push_back(std::move(one));
    return Status::Ok();
  }
  if ((type != "vector" && type != "matrix") || !result.is_array()) {
    return Status::InvalidArgument("unexpected resultType '" + type + "'");
  }
  for (const nlohmann::json& item : result) {
    if (!item.is_object() || !item.contains("metric") || !item["metric"].is_object()) {
      return Status::InvalidArgument("a series has no metric object");
    }
    PromSeries one;
    for (auto it = item["metric"].begin(); it != item["metric"].end(); ++it) {
      if (!it.value().is_string()) return Status::InvalidArgument("label " + it.key() + " is not a string");
      one.labels[it.key()] = it.value().get<std::string>();
    }
    std::pair<double, double> point;
    if (type == "vector") {
      if (!item.contains("value") || !ParseSampleValue(item["value"], &point)) {
        return Status::InvalidArgument("a vector sample is malformed");
      }
      one.points.push_back(point);
    } else {
      if (!item.contains("values") || !item["values"].is_array()) {
        return Status::InvalidArgument("a matrix series has no values");
      }
      for (const nlohmann::json& value : item["values"]) {
        if (!ParseSampleValue(value, &point)) return Status::InvalidArgument("a matrix sample is malformed");
        one.points.push_back(point);
      }
    }
    series->push_back(std::move(one));
  }
  return Status::Ok();
}

PrometheusClient::PrometheusClient(PrometheusClientOptions options, std::unique_ptr<HttpClient> http)
    : options_(std::move(options)), http_(std::move(http)) {}

Status PrometheusClient::Create(PrometheusClientOptions options, std::unique_ptr<PrometheusClient>* client) {
  HttpClientOptions http_options;
  http_options.timeout = options.timeout;
  http_options.ca_file = options.ca_file;
  http_options.username = options.username;
  http_options.password = options.password;
  http_options.max_response_body_bytes = size_t{256} << 20;
  std::unique_ptr<HttpClient> http;
  Status status = HttpClient::Create(options.url, http_options, &http);
  if (!status.ok())
    return Status::InvalidArgument("--prometheus.url " + options.url + ": " + status.message());
  client->reset(new PrometheusClient(std::move(options), std::move(http)));
  return Status::Ok();
}

// `status` with `context` put before its message, its code kept.
static Status WithContext(const Status& status, const std::string& context) {
  const std::string message = context + ": " + status.message();
  switch (status.code()) {
    case Status::Code::kDeadlineExceeded:
      return Status::DeadlineExceeded(message);
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(message);
    case Status::Code::kInternal:
      return Status::Internal(message);
    default:
      return Status::Unavailable(message);
  }
}

static std::string FormatTime(double t) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", t);
  return text;
}

Status PrometheusClient::Query(std::string_view expr, double time, std::vector<PromSeries>* series) {
  return Fetch("/api/v1/query?query=" + EncodeQueryValue(expr) + "&time=" + FormatTime(time), expr, series);
}

Status PrometheusClient::QueryRange(std::string_view expr, double start, double end, double step_seconds,
                                    std::vector<PromSeries>* series) {
  return Fetch("/api/v1/query_range?query=" + EncodeQueryValue(expr) + "&start=" + FormatTime(start) +
                   "&end=" + FormatTime(end) + "&step=" + FormatTime(step_seconds),
               expr, series);
}

Status PrometheusClient::Fetch(std::string_view target, std::string_view expr,
                               std::vector<PromSeries>* series) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"}};
  if (!options_.bearer_token.empty())
    headers.emplace_back("Authorization", "Bearer " + options_.bearer_token);
  HttpClientResponse response;
  const std::string what = "query " + std::string(expr) + " at " + options_.url;
  Status status = http_->Get(target, headers, &response);
  if (!status.ok()) return WithContext(status, what);
  if (response.body_truncated) return Status::Unavailable(what + ": the answer is over 256 MiB");
  Status parsed = ParsePrometheusResponse(response.body, series);
  if (response.status != 200 && (parsed.ok() || parsed.code() == Status::Code::kInvalidArgument)) {
    return Status::Unavailable(what + ": HTTP " + std::to_string(response.status) +
                               (parsed.ok() ? "" : " (" + response.body.substr(0, 200) + ")"));
  }
  if (!parsed.ok()) return WithContext(parsed, what);
  return Status::Ok();
}

}  // namespace gpuscope
