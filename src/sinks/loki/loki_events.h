// Events to Loki: turns queued EventRecords into Loki push entries. Stream labels stay low-cardinality
// (host, source, class, severity); the job, user, GPU and the event's fields go into structured metadata
// (never stream labels, so a busy cluster does not create a stream per job); the line is the log line as
// read.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "src/events/event_record.h"
#include "src/sinks/loki/loki_push.h"

namespace gpuscope {

enum class LokiFormat { kProtobuf, kJson };

LokiEntry LokiEntryForEvent(const EventRecord& record);

// The request body for a batch of encoded EventRecords (queue payloads) in `format`. Records that do not
// decode are left out and counted in *undecodable (may be null).
std::string LokiBodyForRecords(const std::vector<std::string>& records, LokiFormat format,
                               size_t* undecodable);

}  // namespace gpuscope
