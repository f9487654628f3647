// PrometheusClient: the `gpuscope` command's reader of a Prometheus server's HTTP API (instant queries,
// /api/v1/query, and range queries, /api/v1/query_range), over the platform HTTP client (basic auth,
// bearer token, TLS CA, timeout). Results come back as plain series; every failure (connection, HTTP
// status, a Prometheus error answer, a body that is not the API's JSON) is a Status whose message says
// which query failed and why, ready to print for a person.
//
// Thread-safety: one thread at a time (it owns one HttpClient).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/status.h"
#include "src/platform/http_client.h"

namespace gpuscope {

struct PrometheusClientOptions {
  std::string url = "http://localhost:9090";
  std::string username;  // basic auth when not empty
  std::string password;
  std::string bearer_token;  // "Authorization: Bearer ..." when not empty
  std::string ca_file;       // https: PEM CAs to trust instead of the system store
  std::chrono::milliseconds timeout{30000};
};

// One series of a query's answer: its labels (with __name__ when the query kept it) and its points
// (time in Unix seconds, value). An instant query's vector holds one point per series.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;

  std::string Label(const std::string& name) const;  // empty when absent
  // The node the series belongs to: its Hostname label, else hostname (the agent's name for it with
  // --gpu.dcgm-compat=4.9); empty when neither.
  std::string Host() const;
};

// Parses the body of a /api/v1/query or /api/v1/query_range answer (resultType vector, matrix or
// scalar) into *series. InvalidArgument for a body that is not the API's JSON; Unavailable carrying the
// server's errorType and error for status "error". Pure: the unit tests feed it bodies.
Status ParsePrometheusResponse(std::string_view body, std::vector<PromSeries>* series);

// Percent-encodes a query-string value (RFC 3986 unreserved characters kept).
std::string EncodeQueryValue(std::string_view value);

class PrometheusClient {
 public:
  // InvalidArgument for a bad URL or CA file (as HttpClient::Create says).
  static Status Create(PrometheusClientOptions options, std::unique_ptr<PrometheusClient>* client);

  // Evaluates `expr` at Unix time `time`.
  Status Query(std::string_view expr, double time, std::vector<PromSeries>* series);
  // Evaluates `expr` from `start` to `end` every `step_seconds`.
  Status QueryRange(std::string_view expr, double start, double end, double step_seconds,
                    std::vector<PromSeries>* series);

 private:
  PrometheusClient(PrometheusClientOptions options, std::unique_ptr<HttpClient> http);
  Status Fetch(std::string_view target, std::string_view expr, std::vector<PromSeries>* series);

  PrometheusClientOptions options_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace gpuscope
