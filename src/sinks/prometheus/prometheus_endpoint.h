// PrometheusEndpoint: the agent's scrape endpoint. Serves the SnapshotStore's current snapshot on the
// telemetry path (text 0.0.4 or OpenMetrics by Accept, gzip by Accept-Encoding), /healthz and /readyz
// from a HealthProvider, and a landing page on /. Rendered bodies are cached per (snapshot version,
// format, gzip), so repeated scrapes of one snapshot do no rendering. A scrape never calls a collector.
// TLS, basic auth and extra headers come from the exporter-toolkit web config file.
//
// Its own counters (requests by path and code, renders, skipped series) are not added to /metrics
// responses (that would defeat the body cache); CollectSelfMetrics() exposes them so the agent can
// publish them through the SnapshotStore like any source (see EndpointSelfCollector).
//
// Usage:
//   Status status;
//   auto endpoint = PrometheusEndpoint::Create(options, &store, health, status);
//   if (!endpoint) -> log status, exit;  for (auto& w : endpoint->warnings()) log w;
//   status = endpoint->Start();  ...  endpoint->Stop();
//
// Thread-safety: Create/Start/Stop/port from one controlling thread; CollectSelfMetrics() and the
// request handlers are safe to run concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/collector.h"
#include "src/core/health.h"
#include "src/core/metric.h"
#include "src/core/mutex.h"
#include "src/core/snapshot.h"
#include "src/core/status.h"
#include "src/sinks/prometheus/exposition.h"
#include "src/sinks/prometheus/http_server.h"

namespace gpuscope {

struct EndpointOptions {
  std::string listen_address = ":9400";  // dcgm-exporter's default port
  std::string telemetry_path = "/metrics";
  std::string web_config_file;  // --web.config.file; empty: plain HTTP, no auth
  size_t max_connections = 64;
  std::chrono::milliseconds read_timeout{30000};
};

// Caches rendered bodies of the newest snapshot: the plain text once a scrape asked for it, the gzipped
// body for gzip requests (without keeping the text it was made from). Thread-safe; renders are
// serialized so concurrent scrapes of a new snapshot render it once.
class RenderCache {
 public:
  // The body for `snapshot` in `format`, gzipped when `gzip`. Never null.
  std::shared_ptr<const std::string> Get(const Snapshot& snapshot, ExpositionFormat format, bool gzip);
  uint64_t renders() const;  // bodies rendered or compressed (cache misses)
  RenderStats last_stats() const;

 private:
  struct Entry {
    uint64_t version;
    ExpositionFormat format;
    bool gzip;
    std::shared_ptr<const std::string> body;
  };
  std::shared_ptr<const std::string> Find(uint64_t version, ExpositionFormat format, bool gzip) const;
  void Insert(Entry entry);

  mutable Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);  // all of the newest version seen, at most 4
  uint64_t renders_ GUARDED_BY(mu_) = 0;
  RenderStats last_stats_ GUARDED_BY(mu_);
  Mutex render_mu_;  // held while rendering
};

class PrometheusEndpoint {
 public:
  // Reads the web config file (if any) and prepares the server. Returns null and sets `status` on
  // failure (unreadable or invalid web config, bad options); `store` must outlive the endpoint;
  // `health` may be empty (then always healthy and ready).
  static std::unique_ptr<PrometheusEndpoint> Create(const EndpointOptions& options, SnapshotStore* store,
                                                    HealthProvider health, Status& status);
  ~PrometheusEndpoint();

  // Serves POST requests to `path` with `handler` (bodies of at most max_body_bytes; HttpServer::HandlePost),
  // behind the same TLS and basic auth; its responses are counted by path. Before Start() only.
  void HandlePost(std::string path, size_t max_body_bytes, HttpHandler handler);
  // Serves GET and HEAD requests to `path` with `handler`, behind the same TLS and basic auth; counted by
  // path. Before Start() only.
  void Handle(std::string path, HttpHandler handler);
  // Whether the web config asks for basic auth (then every path requires it).
  bool basic_auth() const { return basic_auth_; }

  // Binds and starts serving; error when the address is unusable or TLS files cannot be loaded.
  Status Start();
  uint16_t port() const { return server_->port(); }
  // Stops serving; returns promptly even with idle keep-alive clients. Idempotent.
  void Stop();

  // Accepted-but-ignored web config settings, for the agent's log.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Appends the endpoint's own families (gpuscope_http_requests_total, ...).
  void CollectSelfMetrics(std::vector<MetricFamily>& out) const;
  static std::vector<MetricDescription> DescribeSelfMetrics();

 private:
  PrometheusEndpoint(const EndpointOptions& options, SnapshotStore* store, HealthProvider health,
                     WebConfig web_config);
  void ServeMetrics(const HttpRequestHead& request, HttpResponse& response);
  void ServeHealth(bool readiness, HttpResponse& response);
  void ServeLanding(HttpResponse& response);
  void CountResponse(std::string_view path, int status);

  EndpointOptions options_;
  SnapshotStore* store_;
  HealthProvider health_;
  std::vector<std::string> warnings_;
  std::unique_ptr<HttpServer> server_;
  std::vector<std::string>
      api_paths_;  // HandlePost's and Handle's paths, counted by name; fixed once started
  bool basic_auth_ = false;
  RenderCache cache_;
  mutable Mutex counts_mu_;
  std::map<std::pair<std::string, int>, uint64_t> request_counts_ GUARDED_BY(counts_mu_);  // (path, code)
};

// Publishes PrometheusEndpoint::CollectSelfMetrics() as a collector named "prometheus_endpoint".
class EndpointSelfCollector : public Collector {
 public:
  explicit EndpointSelfCollector(const PrometheusEndpoint* endpoint) : endpoint_(endpoint) {}
  std::string_view Name() const override { return "prometheus_endpoint"; }
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override {
    return PrometheusEndpoint::DescribeSelfMetrics();
  }

 private:
  const PrometheusEndpoint* endpoint_;
};

}  // namespace gpuscope
