// Test-side decoders for what the push sinks send, written from the receivers' wire formats (not from
// our encoders), so a test that checks their output checks the bytes a real Loki or OpenTelemetry
// Collector would see:
//  - Loki push, protobuf: logproto.PushRequest (grafana/loki pkg/push/push.proto), snappy block-compressed;
//  - Loki push, JSON: {"streams":[{"stream":{labels},"values":[["<ns>","<line>",{metadata}?],...]}]};
//  - OTLP/HTTP logs, protobuf: ExportLogsServiceRequest (opentelemetry-proto collector/logs/v1).
// Each decoded entry becomes one JSON object on one line (see push_receiver.h for the fields). Malformed
// input (bad snappy, bad protobuf, bad JSON, wrong field types) is an error, never a crash. Strings that
// are not valid UTF-8 are errors too, as in a Go protobuf receiver (Loki, the OpenTelemetry Collector):
// a sender that lets invalid bytes through has its batch rejected here, so tests catch it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::testing {

// Decodes a Loki push body (after any Content-Encoding was removed). `json` selects the JSON form;
// otherwise protobuf+snappy. Appends one JSON line (no newline) per entry to *lines. On error returns
// false with a reason in *error; *lines then holds nothing from this body.
bool DecodeLokiPush(std::string_view body, bool json, std::vector<std::string>* lines, std::string* error);

// Decodes an OTLP ExportLogsServiceRequest; one JSON line per LogRecord.
bool DecodeOtlpLogs(std::string_view body, std::vector<std::string>* lines, std::string* error);

// Inflates a gzip (Content-Encoding: gzip) body, refusing output beyond max_bytes.
bool Gunzip(std::string_view gz, size_t max_bytes, std::string* out);

}  // namespace gpuscope::testing
