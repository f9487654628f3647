#include "src/sinks/prometheus/prometheus_endpoint.h"

#include <algorithm>

#include "src/sinks/prometheus/negotiation.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxCacheEntries = 4;

}  // namespace

std::shared_ptr<const std::string> RenderCache::Find(uint64_t version, ExpositionFormat format,
                                                     bool gzip) const {
  MutexLock lock(&mu_);
  for (const Entry& e : entries_) {
    if (e.version == version && e.format == format && e.gzip == gzip) return e.body;
  }
  return nullptr;
}

void RenderCache::Insert(Entry entry) {
  MutexLock lock(&mu_);
  ++renders_;
  // Only the newest snapshot is worth keeping: versions only grow.
  uint64_t newest = entry.version;
  for (const Entry& e : entries_) newest = std::max(newest, e.version);
  if (entry.version < newest) return;
  std::erase_if(entries_, [&](const Entry& e) { return e.version < newest; });
  if (entries_.size() >= kMaxCacheEntries) entries_.erase(entries_.begin());
  entries_.push_back(std::move(entry));
}

std::shared_ptr<const std::string> RenderCache::Get(const Snapshot& snapshot, ExpositionFormat format,
                                                    bool gzip) {
  if (auto body = Find(snapshot.version(), format, gzip)) return body;
  MutexLock render_lock(&render_mu_);
  if (auto body = Find(snapshot.version(), format, gzip)) return body;  // rendered while we waited
  std::shared_ptr<const std::string> plain = Find(snapshot.version(), format, false);
  if (!plain) {
    RenderStats stats;
    plain = std::make_shared<const std::string>(RenderSnapshot(snapshot, format, &stats));
    {
      MutexLock lock(&mu_);
      last_stats_ = stats;
    }
    // For a gzip request only the compressed body is kept: Prometheus asks for gzip, and the text of a
    // large node is some 30 times bigger (2.5 MB at 48 GPUs), resident until the next snapshot.
    if (gzip) {
      MutexLock lock(&mu_);
      ++renders_;
    } else {
      Insert(Entry{snapshot.version(), format, false, plain});
    }
  }
  if (!gzip) return plain;
  auto compressed = std::make_shared<std::string>();
  if (!GzipCompress(*plain, *compressed)) return nullptr;
  Insert(Entry{snapshot.version(), format, true, compressed});
  return compressed;
}

uint64_t RenderCache::renders() const {
  MutexLock lock(&mu_);
  return renders_;
}

RenderStats RenderCache::last_stats() const {
  MutexLock lock(&mu_);
  return last_stats_;
}

std::unique_ptr<PrometheusEndpoint> PrometheusEndpoint::Create(const EndpointOptions& options,
                                                               SnapshotStore* store, HealthProvider health,
                                                               Status& status) {
  if (store == nullptr) {
    status = Status::InvalidArgument("PrometheusEndpoint: no snapshot store");
    return nullptr;
  }
  if (options.telemetry_path.empty() || options.telemetry_path.front() != '/' ||
      options.telemetry_path == "/" || options.telemetry_path == "/healthz" ||
      options.telemetry_path == "/readyz") {
    status = Status::InvalidArgument("telemetry path \"" + options.telemetry_path +
                                     "\" must start with / and not clash with /, /healthz or /readyz");
    return nullptr;
  }
  WebConfig web_config;
  if (!options.web_config_file.empty()) {
    status = LoadWebConfigFile(options.web_config_file, web_config);
    if (!status.ok()) return nullptr;
  }
  std::string host;
  uint16_t port;
  status = ParseListenAddress(options.listen_address, host, port);
  if (!status.ok()) return nullptr;
  status = Status::Ok();
  return std::unique_ptr<PrometheusEndpoint>(
      new PrometheusEndpoint(options, store, std::move(health), std::move(web_config)));
}

PrometheusEndpoint::PrometheusEndpoint(const EndpointOptions& options, SnapshotStore* store,
                                       HealthProvider health, WebConfig web_config)
    : options_(options), store_(store), health_(std::move(health)), warnings_(web_config.warnings) {
  HttpServerOptions server_options;
  server_options.listen_address = options.listen_address;
  server_options.max_connections = options.max_connections;
  server_options.read_timeout = options.read_timeout;
  basic_auth_ = !web_config.basic_auth_users.empty();
  server_options.web_config = std::move(web_config);
  server_ = std::make_unique<HttpServer>(std::move(server_options));
  server_->Handle(options_.telemetry_path, [this](const HttpRequestHead& request, HttpResponse& response) {
    ServeMetrics(request, response);
  });
  server_->Handle("/healthz",
                  [this](const HttpRequestHead&, HttpResponse& response) { ServeHealth(false, response); });
  server_->Handle("/readyz",
                  [this](const HttpRequestHead&, HttpResponse& response) { ServeHealth(true, response); });
  server_->Handle("/", [this](const HttpRequestHead&, HttpResponse& response) { ServeLanding(response); });
  server_->SetResponseObserver([this](std::string_view path, int status) { CountResponse(path, status); });
}

PrometheusEndpoint::~PrometheusEndpoint() { Stop(); }

void PrometheusEndpoint::HandlePost(std::string path, size_t max_body_bytes, HttpHandler handler) {
  api_paths_.push_back(path);
  server_->HandlePost(std::move(path), max_body_bytes, std::move(handler));
}

void PrometheusEndpoint::Handle(std::string path, HttpHandler handler) {
  api_paths_.push_back(path);
  server_->Handle(std::move(path), std::move(handler));
}

Status PrometheusEndpoint::Start() { return server_->Start(); }

void PrometheusEndpoint::Stop() { server_->Stop(); }

void PrometheusEndpoint::ServeMetrics(const HttpRequestHead& request, HttpResponse& response) {
  std::shared_ptr<const Snapshot> snapshot = store_->Current();
  ExpositionFormat format = NegotiateExpositionFormat(request.Header("Accept"));
  bool gzip = AcceptsGzip(request.Header("Accept-Encoding"));
  response.shared_body = cache_.Get(*snapshot, format, gzip);
  if (response.shared_body == nullptr) {
    response.status = 500;
    response.body = "compression failed\n";
    return;
  }
  response.content_type = std::string(ExpositionContentType(format));
  response.headers.emplace_back("Vary", "Accept, Accept-Encoding");
  if (gzip) response.headers.emplace_back("Content-Encoding", "gzip");
}

void PrometheusEndpoint::ServeHealth(bool readiness, HttpResponse& response) {
  HealthReport report;
  report.ready = true;
  if (health_) report = health_();
  bool ok = readiness ? report.ready : report.healthy;
  response.status = ok ? 200 : 503;
  response.headers.emplace_back("Cache-Control", "no-store");
  if (ok) {
    response.body = readiness ? "ready\n" : "ok\n";
  } else {
    response.body = readiness ? "not ready\n" : "unhealthy\n";
    if (!report.detail.empty()) response.body += report.detail + (report.detail.ends_with('\n') ? "" : "\n");
  }
}

void PrometheusEndpoint::ServeLanding(HttpResponse& response) {
  response.content_type = "text/html; charset=utf-8";
  response.body =
      "<html><head><title>gpuscope agent</title></head><body>\n<h1>gpuscope agent</h1>\n<ul>\n"
      "<li><a href=\"" +
      options_.telemetry_path +
      "\">Metrics</a></li>\n"
      "<li><a href=\"/healthz\">Health</a></li>\n<li><a href=\"/readyz\">Readiness</a></li>\n"
      "</ul>\n</body></html>\n";
}

void PrometheusEndpoint::CountResponse(std::string_view path, int status) {
  // Bounded label values: only the paths we serve, everything else is "other".
  std::string_view label = "other";
  if (path == options_.telemetry_path || path == "/healthz" || path == "/readyz" || path == "/" ||
      std::find(api_paths_.begin(), api_paths_.end(), path) != api_paths_.end()) {
    label = path;
  }
  MutexLock lock(&counts_mu_);
  ++request_counts_[{std::string(label), status}];
}

std::vector<MetricDescription> PrometheusEndpoint::DescribeSelfMetrics() {
  return {
      {"gpuscope_http_requests_total",
       MetricType::kCounter,
       "HTTP responses sent by the metrics endpoint.",
       "",
       {"path", "code"},
       "prometheus endpoint"},
      {"gpuscope_exposition_renders_total",
       MetricType::kCounter,
       "Exposition bodies rendered or compressed (cache misses).",
       "",
       {},
       "prometheus endpoint"},
      {"gpuscope_exposition_skipped_series",
       MetricType::kGauge,
       "Families or samples left out of the last rendered exposition because of invalid names.",
       "",
       {"kind"},
       "prometheus endpoint"},
      {"gpuscope_http_connections",
       MetricType::kGauge,
       "Connections the metrics endpoint holds, by state: header (request header or TLS handshake not "
       "complete), idle (keep-alive between requests), serving (a request being answered).",
       "",
       {"state"},
       "prometheus endpoint"},
      {"gpuscope_http_connections_evicted_total",
       MetricType::kCounter,
       "Connections closed to make room for a new one at --web.max-connections (incomplete headers before "
       "idle keep-alive ones, oldest first), by the state they were in: header or idle. Many header "
       "evictions: clients that connect and do not send a request (slowloris-like).",
       "",
       {"state"},
       "prometheus endpoint"},
      {"gpuscope_http_connections_timed_out_total",
       MetricType::kCounter,
       "Connections closed for taking too long: header (no complete request header within 10 s of "
       "accept, TLS handshake included), idle (keep-alive longer than the read timeout, 30 s).",
       "",
       {"state"},
       "prometheus endpoint"},
  };
}

void PrometheusEndpoint::CollectSelfMetrics(std::vector<MetricFamily>& out) const {
  std::vector<MetricDescription> descriptions = DescribeSelfMetrics();
  MetricFamily requests{descriptions[0].name, descriptions[0].help, descriptions[0].type, "", {}};
  {
    MutexLock lock(&counts_mu_);
    for (const auto& [key, count] : request_counts_) {
      requests.samples.push_back(
          {{{"path", key.first}, {"code", std::to_string(key.second)}}, static_cast<double>(count)});
    }
  }
  out.push_back(std::move(requests));
  out.push_back({descriptions[1].name,
                 descriptions[1].help,
                 descriptions[1].type,
                 "",
                 {{{}, static_cast<double>(cache_.renders())}}});
  RenderStats stats = cache_.last_stats();
  out.push_back({descriptions[2].name,
                 descriptions[2].help,
                 descriptions[2].type,
                 "",
                 {{{{"kind", "family"}}, static_cast<double>(stats.skipped_families)},
                  {{{"kind", "sample"}}, static_cast<double>(stats.skipped_samples)}}});
  HttpServerStats connections = server_->stats();
  auto by_state = [&](const MetricDescription& d,
                      const std::vector<std::pair<const char*, uint64_t>>& values) {
    MetricFamily family{d.name, d.help, d.type, "", {}};
    for (const auto& [state, value] : values) {
      family.samples.push_back({{{"state", state}}, static_cast<double>(value)});
    }
    out.push_back(std::move(family));
  };
  by_state(descriptions[3], {{"header", connections.held_header},
                             {"idle", connections.held_idle},
                             {"serving", connections.held_serving}});
  by_state(descriptions[4], {{"header", connections.evicted_header}, {"idle", connections.evicted_idle}});
  by_state(descriptions[5], {{"header", connections.timed_out_header}, {"idle", connections.timed_out_idle}});
}

Status EndpointSelfCollector::Collect(std::vector<MetricFamily>& out) {
  endpoint_->CollectSelfMetrics(out);
  return Status::Ok();
}

}  // namespace gpuscope
