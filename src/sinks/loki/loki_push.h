// Encodes a batch of log entries as a Loki push request body (POST /loki/api/v1/push), in either of
// the two forms Loki accepts:
//  - protobuf logproto.PushRequest, snappy block-compressed, Content-Type application/x-protobuf;
//  - JSON {"streams":[{"stream":{labels},"values":[["<ns>","<line>",{metadata}]]}]},
//    Content-Type application/json.
// Entries are grouped into streams by their stream labels (label order does not matter: labels are
// sorted by name); streams appear in order of first appearance and entries keep their input order
// within a stream. Field numbers follow Grafana Loki's pkg/push/push.proto.
//
// Thread-safety: pure functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

inline constexpr std::string_view kLokiProtobufContentType = "application/x-protobuf";
inline constexpr std::string_view kLokiJsonContentType = "application/json";

struct LokiLabel {
  std::string name;
  std::string value;
};

// One log line. `stream_labels` must stay low-cardinality (host, source, class, severity); anything
// per-event (job id, pid) belongs in `structured_metadata`.
struct LokiEntry {
  std::vector<LokiLabel> stream_labels;
  int64_t timestamp_ns = 0;
  std::string line;
  std::vector<LokiLabel> structured_metadata;
};

// Formats labels as Loki's Prometheus-style selector: {host="n1", source="kmsg"} with `\`, `"` and
// newline escaped in values, sorted by name. Empty input gives "{}". Never fails.
std::string FormatLokiLabels(std::vector<LokiLabel> labels);

// Returns the uncompressed serialized logproto.PushRequest. Strings are made valid UTF-8 (invalid
// bytes become U+FFFD). Never fails.
std::string EncodeLokiPushProtobuf(std::span<const LokiEntry> entries);

// Returns the request body for the protobuf form: EncodeLokiPushProtobuf, snappy block-compressed.
std::string EncodeLokiPushSnappy(std::span<const LokiEntry> entries);

// Returns the request body for the JSON form: valid UTF-8 JSON (invalid bytes become U+FFFD, control
// characters and NUL are \u-escaped); the metadata object is present only when non-empty.
std::string EncodeLokiPushJson(std::span<const LokiEntry> entries);

}  // namespace gpuscope
