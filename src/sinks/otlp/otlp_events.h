// Events to OTLP: turns queued EventRecords into one OTLP/HTTP logs request. The resource is the node
// (service.name=gpuscope-agent, host.name); each record is a LogRecord whose body is the line, with the
// event's severity and its class, source, origin, job, GPU and fields as attributes ("gpuscope.*" for
// the event's own fields).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "src/events/event_record.h"
#include "src/sinks/otlp/otlp_logs.h"

namespace gpuscope {

OtlpLogRecord OtlpRecordForEvent(const EventRecord& record);

// The request body for a batch of encoded EventRecords. Records that do not decode are left out and
// counted in *undecodable (may be null). The resource's host.name is the first record's host.
std::string OtlpBodyForRecords(const std::vector<std::string>& records, size_t* undecodable);

}  // namespace gpuscope
