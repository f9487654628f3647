#include "src/events/sources/kmsg_source.h"

#include <chrono>
#include <utility>

namespace gpuscope {
namespace {

int64_t Nanoseconds(auto time_point) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time_point.time_since_epoch()).count();
}

}  // namespace

KmsgSource::KmsgSource(Options options) : options_(std::move(options)), reader_(options_.reader) {}

Status KmsgSource::Poll(const Emit& emit) {
  if (!open_) {
    Status status = reader_.Open();
    if (!status.ok()) return status;
    open_ = true;
  }
  // Kernel timestamps are CLOCK_MONOTONIC (steady_clock on Linux); the record's wall time is now minus
  // its age.
  const int64_t now_unix =
      options_.now_unix_ns ? options_.now_unix_ns() : Nanoseconds(std::chrono::system_clock::now());
  const int64_t now_mono =
      options_.now_monotonic_ns ? options_.now_monotonic_ns() : Nanoseconds(std::chrono::steady_clock::now());
  Status status = reader_.PollOnce([&](const KmsgRecord& record) {
    const int64_t age = now_mono - static_cast<int64_t>(record.timestamp_usec) * 1000;
    EventLine line;
    line.text = record.message;
    line.origin = options_.reader.path;
    line.time_unix_ns = age > 0 ? now_unix - age : now_unix;
    line.kernel_only = true;
    emit(line);
  });
  overruns_.store(reader_.counters().overruns, std::memory_order_relaxed);
  missed_.store(reader_.counters().missed, std::memory_order_relaxed);
  return status;
}

void KmsgSource::AppendMetrics(std::vector<MetricFamily>& out) const {
  const double values[] = {static_cast<double>(overruns_.load(std::memory_order_relaxed)),
                           static_cast<double>(missed_.load(std::memory_order_relaxed))};
  std::vector<MetricDescription> descriptions = Describe();  // in the order of `values`
  for (size_t i = 0; i < descriptions.size(); ++i) {
    MetricFamily family;
    family.name = std::move(descriptions[i].name);
    family.help = std::move(descriptions[i].help);
    family.type = descriptions[i].type;
    family.samples.push_back(Sample{{}, values[i]});
    out.push_back(std::move(family));
  }
}

std::vector<MetricDescription> KmsgSource::Describe() {
  MetricDescription overruns;
  overruns.name = "gpuscope_kmsg_overruns_total";
  overruns.type = MetricType::kCounter;
  overruns.help = "Times the kernel ring buffer overwrote records before they were read.";
  overruns.source = "/dev/kmsg read() EPIPE";
  MetricDescription missed;
  missed.name = "gpuscope_kmsg_missed_records_total";
  missed.type = MetricType::kCounter;
  missed.help = "Kernel log records lost to ring-buffer overruns (sequence gaps).";
  missed.source = "/dev/kmsg sequence numbers";
  return {overruns, missed};
}

}  // namespace gpuscope
