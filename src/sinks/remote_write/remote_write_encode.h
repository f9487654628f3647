// Remote-write request bodies: Prometheus remote_write 1.0 (prometheus.WriteRequest) and 2.0
// (io.prometheus.write.v2.Request, spec 2.0-rc.4), written with the protobuf wire writer
// (src/sinks/otlp/protowire.h), and the snappy block compression both protocols require.
//
// A RemoteWriteBatch is the protocol-neutral form: series with their labels sorted by name (__name__
// included), one sample each, and the metadata of their families. The sink's producer does not go through
// it (RemoteWriteBatcher writes its queue records straight from the snapshot, remote_write_record.h);
// these encoders serve the records an older agent queued as plain 1.0 WriteRequests (decoded with
// DecodeWriteRequestV1 and encoded again as 2.0) and records of different epochs joined in one request.
// Two 1.0 encodings concatenated are one valid WriteRequest holding both (protobuf merges repeated
// fields).
//
// Field numbers (checked against prometheus/prometheus v0.316.0 = Prometheus 3.16: prompb/types.proto,
// prompb/remote.proto and prompb/io/prometheus/write/v2/types.proto):
//   1.0 WriteRequest{timeseries=1, metadata=3}; TimeSeries{labels=1, samples=2}; Label{name=1, value=2};
//       Sample{value=1 double, timestamp=2 int64}; MetricMetadata{type=1, metric_family_name=2, help=4,
//       unit=5}.
//   2.0 Request{symbols=4, timeseries=5}; TimeSeries{labels_refs=1 packed, samples=2, metadata=5};
//       Sample{value=1, timestamp=2, start_timestamp=3}; Metadata{type=1, help_ref=3, unit_ref=4}.
//   Metric types (both): unknown/unspecified 0, counter 1, gauge 2, info 6.
// 2.0-rc.4 moved the created timestamp from TimeSeries (field 6, now reserved) to Sample.start_timestamp.
// The agent knows no start times today and leaves it 0, which is not sent.
//
// Thread-safety: pure functions on caller-owned values; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

inline constexpr std::string_view kRemoteWriteV1ContentType = "application/x-protobuf";
inline constexpr std::string_view kRemoteWriteV2ContentType =
    "application/x-protobuf;proto=io.prometheus.write.v2.Request";
// The staleness marker: the NaN Prometheus writes when a series disappears.
inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ull;

struct RemoteWriteMetadata {
  std::string family;  // metric_family_name
  MetricType type = MetricType::kUnknown;
  std::string help;
  std::string unit;
};

struct RemoteWriteSeries {
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name, __name__ included
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t start_timestamp_ms = 0;  // 2.0 only: when a counter started; 0 when unknown (not sent)
};

struct RemoteWriteBatch {
  std::vector<RemoteWriteSeries> series;
  std::vector<RemoteWriteMetadata> metadata;  // one per family, by family name
};

// prometheus.WriteRequest, uncompressed. Never fails.
std::string EncodeWriteRequestV1(const RemoteWriteBatch& batch);

// Parses a 1.0 WriteRequest (several concatenated ones too) into *batch, appending: each sample of a
// time series becomes one RemoteWriteSeries. False on malformed protobuf (nothing is appended then).
bool DecodeWriteRequestV1(std::string_view bytes, RemoteWriteBatch* batch);

// io.prometheus.write.v2.Request, uncompressed: a symbols table starting with "", label and metadata
// references into it; each series carries the metadata of its family (by __name__). Never fails.
std::string EncodeRequestV2(const RemoteWriteBatch& batch);

// Snappy block format (not the framed format), as remote_write requires.
std::string SnappyCompress(std::string_view raw);

// Whether `value` is the staleness marker (bit-exact; other NaNs are ordinary values).
bool IsStaleMarker(double value);
double StaleMarker();

}  // namespace gpuscope
