// EventRecord: one classified event as it travels from the event pipeline through the durable queue to
// the push sinks (Loki, OTLP): the Event, where and when it was seen, the line itself and the job it is
// attributed to. The queue stores records as opaque bytes; this file owns their encoding.
//
// Encoding: "GSE1", then every string as a 4-byte little-endian length and its bytes, in a fixed order,
// the fields as a count and key/value pairs. A decoder of queue bytes is a parser of untrusted input:
// DecodeEventRecord rejects anything malformed (bad magic, lengths past the end, trailing bytes,
// unknown severity) and never reads out of bounds.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/events/event.h"

namespace gpuscope {

struct EventRecord {
  int64_t time_unix_ns = 0;  // when the line was written (kernel/journal timestamp) or else read
  std::string host;          // the node
  std::string source;        // "kmsg", "file", "journal"
  std::string origin;        // file path, journal unit/identifier, or the kmsg device
  std::string line;          // the line (capped, valid UTF-8)
  Event event;
  // Attribution (empty when unknown).
  std::string job_id;
  std::string user;
  std::string account;
  std::string gpu;   // NVML index of the GPU the event is about
  std::string uuid;  // its UUID
};

std::string EncodeEventRecord(const EventRecord& record);
std::optional<EventRecord> DecodeEventRecord(std::string_view bytes);

// Decodes a batch of queue payloads, leaving out (and counting in *undecodable, may be null) what does not
// decode.
std::vector<EventRecord> DecodeEventRecords(const std::vector<std::string>& payloads, size_t* undecodable);

// The record's label-safe fields for sinks: job/user/account/gpu/UUID first (when set), then the event's
// own fields except "message" (the line carries it). Keys are the names sinks use ("hpc_job", "user",
// "account", "gpu", "UUID", then event field names).
std::vector<std::pair<std::string, std::string>> EventRecordMetadata(const EventRecord& record);

}  // namespace gpuscope
