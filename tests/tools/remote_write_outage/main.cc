// gpuscope-rw-outage-replay: a long remote_write outage in simulated time. It runs the product's
// RemoteWriteSink (nothing changed, nothing mocked) with a synthetic clock: the sink's now_unix_ms and
// the timestamps of the batches it queues advance by --interval-ms per batch instead of waiting for the
// wall clock, so 6 hours of 15 s intervals (1,440 batches) are queued in seconds. It calls
// RemoteWriteSink::QueueSnapshot, the one call the sink's producer thread makes every interval (with
// the clock's time), so every batch is the one the agent would have queued at that moment.
//
//   gpuscope-rw-outage-replay --phase queue --url URL --queue-dir DIR [--queue-max-mib N]
//       [--batches 1440] [--interval-ms 15000] [--start-ms T] [--gpus 8] [--families 250]
//     queues the batches while nothing listens at URL (the receiver is down), then stops the sink;
//   gpuscope-rw-outage-replay --phase drain --url URL --queue-dir DIR [--queue-max-mib N]
//       [--drain-timeout-s 600]
//     starts the sink again on the same queue once the receiver is up and waits until every queued
//     batch was accepted (or rejected), then stops it.
// Each phase prints one JSON object of the sink's own counters and timings on stdout. The snapshot is a
// node of --gpus GPUs with --families gauge families each, dcgm-exporter's identity labels on every
// series (families x GPUs series; 250 x 8 is the 2,000 series); the value of every series in
// batch k is k, so a reader can tell each sample's batch from its value.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/core/metric.h"
#include "src/core/snapshot.h"
#include "src/sinks/remote_write/remote_write_sink.h"

namespace gpuscope {
namespace {

struct Args {
  std::string phase;
  std::string url;
  std::string queue_dir;
  int64_t queue_max_mib = 256;
  int64_t batches = 1440;
  int64_t interval_ms = 15000;
  int64_t start_ms = 0;
  int64_t gpus = 8;
  int64_t families = 250;
  int64_t drain_timeout_s = 600;
};

int Usage(const std::string& error) {
  std::fprintf(
      stderr,
      "gpuscope-rw-outage-replay: %s\nusage: gpuscope-rw-outage-replay --phase queue|drain --url URL "
      "--queue-dir DIR [--queue-max-mib N] [--batches N] [--interval-ms MS] [--start-ms T] [--gpus N] "
      "[--families N] [--drain-timeout-s S]\n",
      error.c_str());
  return 2;
}

bool ParseInt(const std::string& text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 0) return false;
  *out = v;
  return true;
}

Snapshot NodeSnapshot(const Args& args, int64_t batch) {
  std::vector<MetricFamily> families;
  for (int64_t f = 0; f < args.families; ++f) {
    MetricFamily family{
        "DCGM_FI_REPLAY_FIELD_" + std::to_string(f), "A replayed GPU field.", MetricType::kGauge, "", {}};
    for (int64_t g = 0; g < args.gpus; ++g) {
      family.samples.push_back(
          {Labels{{"gpu", std::to_string(g)},
                  {"UUID", "GPU-3f2a9c1e-5b7d-4e8f-9a0b-" + std::to_string(100000000000 + g)},
                  {"device", "nvidia" + std::to_string(g)},
                  {"modelName", "NVIDIA H100 80GB HBM3"},
                  {"Hostname", "gpu-node-0042"},
                  {"DCGM_FI_DRIVER_VERSION", "550.90.07"},
                  {"pci_bus_id", "00000000:1" + std::to_string(g) + ":00.0"}},
           static_cast<double>(batch)});
    }
    families.push_back(std::move(family));
  }
  return Snapshot::Of(std::move(families));
}

// Sum of the samples of `name` (optionally only those with label reason=`reason`).
double Sum(const std::vector<MetricFamily>& families, std::string_view name, std::string_view reason = "") {
  double sum = 0;
  for (const MetricFamily& f : families) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) {
      bool match = reason.empty();
      for (const auto& [k, v] : s.labels) match = match || (k == "reason" && v == reason);
      if (match) sum += s.value;
    }
  }
  return sum;
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

int Run(const Args& args) {
  SnapshotStore store;  // the producer thread never fires (interval of a day); batches are queued below
  int64_t clock_ms = args.start_ms;
  RemoteWriteOptions o;
  RemoteWriteEndpoint endpoint;
  endpoint.url = args.url;
  o.endpoints = {endpoint};
  o.interval = std::chrono::hours(24);
  o.queue_directory = args.queue_dir;
  o.queue_max_bytes = static_cast<uint64_t>(args.queue_max_mib) << 20;
  o.snapshots = &store;
  o.now_unix_ms = [&clock_ms] { return clock_ms; };
  o.max_backoff = std::chrono::milliseconds(1000);  // a drain starts at once; the outage is simulated anyway
  RemoteWriteSink sink(o);
  const auto started = std::chrono::steady_clock::now();
  const Status status = sink.Start();
  if (!status.ok()) {
    std::fprintf(stderr, "gpuscope-rw-outage-replay: %s\n", status.ToString().c_str());
    return 1;
  }
  const std::vector<MetricFamily> at_start = sink.Metrics();
  if (args.phase == "queue") {
    for (int64_t k = 0; k < args.batches; ++k) {
      clock_ms = args.start_ms + k * args.interval_ms;
      const Status queued = sink.QueueSnapshot(NodeSnapshot(args, k), clock_ms);
      if (!queued.ok()) {
        std::fprintf(stderr, "gpuscope-rw-outage-replay: batch %lld: %s\n", static_cast<long long>(k),
                     queued.ToString().c_str());
        return 1;
      }
    }
  } else {
    const auto give_up = started + std::chrono::seconds(args.drain_timeout_s);
    while (Sum(sink.Metrics(), "gpuscope_remote_write_pending_batches") > 0) {
      if (std::chrono::steady_clock::now() > give_up) {
        std::fprintf(stderr, "gpuscope-rw-outage-replay: not drained after %llds\n",
                     static_cast<long long>(args.drain_timeout_s));
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const double elapsed = Seconds(std::chrono::steady_clock::now() - started);
  const std::vector<MetricFamily> m = sink.Metrics();
  sink.Stop();
  std::printf(
      "{\"phase\": \"%s\", \"seconds\": %.3f, \"batches_queued\": %.0f, \"samples_queued\": %.0f, "
      "\"samples_pending_at_start\": %.0f, \"batches_pending_at_start\": %.0f, \"samples_pending\": %.0f, "
      "\"batches_pending\": %.0f, \"queue_bytes\": %.0f, \"batches_dropped_full\": %.0f, \"samples_sent\": "
      "%.0f, "
      "\"samples_rejected\": %.0f, \"samples_retried\": %.0f, \"samples_per_batch\": %lld}\n",
      args.phase.c_str(), elapsed, Sum(m, "gpuscope_remote_write_batches_queued_total"),
      Sum(m, "gpuscope_remote_write_samples_queued_total"),
      Sum(at_start, "gpuscope_remote_write_samples_pending"),
      Sum(at_start, "gpuscope_remote_write_pending_batches"), Sum(m, "gpuscope_remote_write_samples_pending"),
      Sum(m, "gpuscope_remote_write_pending_batches"), Sum(m, "gpuscope_queue_bytes"),
      Sum(m, "gpuscope_queue_dropped_total", "full"), Sum(m, "gpuscope_remote_write_samples_sent_total"),
      Sum(m, "gpuscope_remote_write_samples_dropped_total"),
      Sum(m, "gpuscope_remote_write_samples_retried_total"),
      static_cast<long long>(args.families * args.gpus));
  return 0;
}

}  // namespace
}  // namespace gpuscope

int main(int argc, char** argv) {
  gpuscope::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return gpuscope::Usage("missing value after " + std::string(flag));
    const std::string value = argv[++i];
    int64_t* number = nullptr;
    if (flag == "--phase") {
      args.phase = value;
    } else if (flag == "--url") {
      args.url = value;
    } else if (flag == "--queue-dir") {
      args.queue_dir = value;
    } else if (flag == "--queue-max-mib") {
      number = &args.queue_max_mib;
    } else if (flag == "--batches") {
      number = &args.batches;
    } else if (flag == "--interval-ms") {
      number = &args.interval_ms;
    } else if (flag == "--start-ms") {
      number = &args.start_ms;
    } else if (flag == "--gpus") {
      number = &args.gpus;
    } else if (flag == "--families") {
      number = &args.families;
    } else if (flag == "--drain-timeout-s") {
      number = &args.drain_timeout_s;
    } else {
      return gpuscope::Usage("unknown flag " + std::string(flag));
    }
    if (number != nullptr && !gpuscope::ParseInt(value, number)) {
      return gpuscope::Usage("bad value for " + std::string(flag) + ": " + value);
    }
  }
  if (args.phase != "queue" && args.phase != "drain")
    return gpuscope::Usage("--phase must be queue or drain");
  if (args.url.empty() || args.queue_dir.empty())
    return gpuscope::Usage("--url and --queue-dir are required");
  if (args.queue_max_mib < 1) return gpuscope::Usage("--queue-max-mib must be at least 1");
  return gpuscope::Run(args);
}
