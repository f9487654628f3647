#include "src/sinks/otlp/otlp_logs.h"

#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;

// AnyValue { string string_value = 1; }
std::string EncodeStringAnyValue(std::string_view value) {
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(value));
  return out;
}

// LogRecord { fixed64 time_unix_nano = 1; SeverityNumber severity_number = 2; string severity_text = 3;
//             AnyValue body = 5; repeated KeyValue attributes = 6; fixed64 observed_time_unix_nano = 11; }
std::string EncodeLogRecord(const OtlpLogRecord& record) {
  std::string out;
  out.reserve(record.body.size() + 64);
  if (record.time_unix_nano != 0) AppendFixed64Field(out, 1, record.time_unix_nano);
  if (record.severity_number != 0) {
    AppendVarintField(out, 2, static_cast<uint64_t>(static_cast<int64_t>(record.severity_number)));
  }
  if (!record.severity_text.empty()) AppendBytesField(out, 3, ToValidUtf8(record.severity_text));
  AppendBytesField(out, 5, EncodeStringAnyValue(record.body));
  for (const auto& attribute : record.attributes) AppendBytesField(out, 6, EncodeOtlpKeyValue(attribute));
  if (record.observed_time_unix_nano != 0) AppendFixed64Field(out, 11, record.observed_time_unix_nano);
  return out;
}

}  // namespace

// KeyValue { string key = 1; AnyValue value = 2; }
std::string EncodeOtlpKeyValue(const OtlpAttribute& attribute) {
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(attribute.key));
  AppendBytesField(out, 2, EncodeStringAnyValue(attribute.value));
  return out;
}

// Resource { repeated KeyValue attributes = 1; }
std::string EncodeOtlpResource(const std::vector<OtlpAttribute>& attributes) {
  std::string resource;
  for (const auto& attribute : attributes) AppendBytesField(resource, 1, EncodeOtlpKeyValue(attribute));
  return resource;
}

// InstrumentationScope { string name = 1; string version = 2; }
std::string EncodeOtlpScope(std::string_view name, std::string_view version) {
  std::string scope;
  if (!name.empty()) AppendBytesField(scope, 1, ToValidUtf8(name));
  if (!version.empty()) AppendBytesField(scope, 2, ToValidUtf8(version));
  return scope;
}

int OtlpSeverityNumberFor(std::string_view severity) {
  if (severity == "critical" || severity == "fatal") return 21;
  if (severity == "error") return 17;
  if (severity == "warning" || severity == "warn") return 13;
  if (severity == "info" || severity == "notice") return 9;
  if (severity == "debug") return 5;
  if (severity == "trace") return 1;
  return 0;
}

std::string EncodeOtlpLogsRequest(const OtlpLogsBatch& batch) {
  const std::string resource = EncodeOtlpResource(batch.resource_attributes);
  const std::string scope = EncodeOtlpScope(batch.scope_name, batch.scope_version);
  // ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; }
  std::string scope_logs;
  AppendBytesField(scope_logs, 1, scope);
  for (const auto& record : batch.records) AppendBytesField(scope_logs, 2, EncodeLogRecord(record));
  // ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; }
  std::string resource_logs;
  AppendBytesField(resource_logs, 1, resource);
  AppendBytesField(resource_logs, 2, scope_logs);
  // ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
  std::string request;
  AppendBytesField(request, 1, resource_logs);
  return request;
}

}  // namespace gpuscope
