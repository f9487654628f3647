#include "src/sinks/otlp/otlp_events.h"

#include <utility>

#include "src/core/version.h"

namespace gpuscope {

OtlpLogRecord OtlpRecordForEvent(const EventRecord& record) {
  OtlpLogRecord out;
  out.time_unix_nano = static_cast<uint64_t>(record.time_unix_ns);
  const std::string severity(EventSeverityName(record.event.severity));
  out.severity_number = OtlpSeverityNumberFor(severity);
  out.severity_text = severity;
  out.body = record.line;
  out.attributes.push_back({"event.class", record.event.event_class});
  out.attributes.push_back({"event.summary", record.event.summary});
  out.attributes.push_back({"log.source", record.source});
  if (!record.origin.empty()) {
    out.attributes.push_back({record.source == "file" ? "log.file.path" : "log.origin", record.origin});
  }
  for (auto& [key, value] : EventRecordMetadata(record)) {
    const bool attribution =
        key == "hpc_job" || key == "user" || key == "account" || key == "gpu" || key == "UUID";
    out.attributes.push_back({attribution ? key : "gpuscope." + key, std::move(value)});
  }
  return out;
}

std::string OtlpBodyForRecords(const std::vector<std::string>& records, size_t* undecodable) {
  OtlpLogsBatch batch;
  batch.scope_version = std::string(Version());
  for (const EventRecord& record : DecodeEventRecords(records, undecodable)) {
    if (batch.resource_attributes.empty()) {
      batch.resource_attributes = {{"service.name", "gpuscope-agent"}, {"host.name", record.host}};
    }
    batch.records.push_back(OtlpRecordForEvent(record));
  }
  return EncodeOtlpLogsRequest(batch);
}

}  // namespace gpuscope
