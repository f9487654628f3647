// Encodes a batch of log records as an OTLP/HTTP logs request body: the protobuf message
// opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest, POSTed to /v1/logs with
// Content-Type application/x-protobuf. One ResourceLogs (the agent's resource attributes) holding one
// ScopeLogs (the agent as instrumentation scope) holding the records in the order given.
// Field numbers follow opentelemetry-proto (logs/v1/logs.proto, common/v1/common.proto,
// resource/v1/resource.proto, collector/logs/v1/logs_service.proto).
//
// Thread-safety: pure functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

inline constexpr std::string_view kOtlpContentType = "application/x-protobuf";

// A string-valued attribute (KeyValue with AnyValue.string_value).
struct OtlpAttribute {
  std::string key;
  std::string value;
};

// One LogRecord. Zero times mean "unknown" and are left out, as OTLP specifies.
struct OtlpLogRecord {
  uint64_t time_unix_nano = 0;
  uint64_t observed_time_unix_nano = 0;
  int severity_number = 0;  // SeverityNumber enum: 1-4 TRACE, 5 DEBUG, 9 INFO, 13 WARN, 17 ERROR, 21 FATAL
  std::string severity_text;
  std::string body;  // AnyValue.string_value
  std::vector<OtlpAttribute> attributes;
};

struct OtlpLogsBatch {
  std::vector<OtlpAttribute> resource_attributes;  // e.g. service.name, host.name
  std::string scope_name = "gpuscope";
  std::string scope_version;
  std::vector<OtlpLogRecord> records;
};

// Encoders shared by the OTLP logs and metrics requests (common/v1/common.proto, resource/v1/
// resource.proto): KeyValue{key=1, value=2 AnyValue{string_value=1}}, Resource{attributes=1},
// InstrumentationScope{name=1, version=2}.
std::string EncodeOtlpKeyValue(const OtlpAttribute& attribute);
std::string EncodeOtlpResource(const std::vector<OtlpAttribute>& attributes);
std::string EncodeOtlpScope(std::string_view name, std::string_view version);

// Maps a gpuscope severity word (critical/fatal, error, warning/warn, info/notice, debug, trace) to the
// OTLP SeverityNumber; returns 0 (UNSPECIFIED) for anything else.
int OtlpSeverityNumberFor(std::string_view severity);

// Returns the serialized ExportLogsServiceRequest. Every string is made valid UTF-8 (invalid bytes
// become U+FFFD); lines of any size and NUL bytes are carried as they are. Never fails.
std::string EncodeOtlpLogsRequest(const OtlpLogsBatch& batch);

}  // namespace gpuscope
