#include "src/sinks/loki/loki_events.h"

#include <utility>

namespace gpuscope {

LokiEntry LokiEntryForEvent(const EventRecord& record) {
  LokiEntry entry;
  entry.stream_labels = {{"host", record.host},
                         {"source", record.source},
                         {"class", record.event.event_class},
                         {"severity", std::string(EventSeverityName(record.event.severity))}};
  entry.timestamp_ns = record.time_unix_ns;
  entry.line = record.line;
  for (auto& [key, value] : EventRecordMetadata(record)) {
    entry.structured_metadata.push_back(LokiLabel{std::move(key), std::move(value)});
  }
  if (!record.origin.empty()) entry.structured_metadata.push_back(LokiLabel{"origin", record.origin});
  return entry;
}

std::string LokiBodyForRecords(const std::vector<std::string>& records, LokiFormat format,
                               size_t* undecodable) {
  std::vector<LokiEntry> entries;
  for (const EventRecord& record : DecodeEventRecords(records, undecodable))
    entries.push_back(LokiEntryForEvent(record));
  return format == LokiFormat::kJson ? EncodeLokiPushJson(entries) : EncodeLokiPushSnappy(entries);
}

}  // namespace gpuscope
