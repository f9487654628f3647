// The remote_write sink's queue records, and the request bodies made from them.
//
// A record is one interval's batch. Since 2026-12 the producer (RemoteWriteBatcher) writes it as a
// remote_write 2.0 Request behind a short header:
//
//   0x00                      never the first byte of a protobuf message (field 0 does not exist), so a
//                             record is told apart from the plain 1.0 WriteRequests older agents queued
//   varint 1                  the format version
//   fixed64 epoch             the producer's symbols table: refs of records with the same epoch index
//                             one append-only table, so the longest table of an epoch serves them all
//   varint n, n bytes         the Request's symbols field entries (field 4): the whole table so far
//   the rest                  the Request's timeseries field entries (field 5), refs into that table
//
// Bodies from a run of records:
//   2.0: records of one epoch -> the longest symbols part, then every record's timeseries part (no
//        decoding); anything else (plain 1.0 records from before an upgrade, an epoch change at a restart
//        or a table compaction) -> decoded and encoded again with EncodeRequestV2.
//   1.0: each record on its own, concatenated (two WriteRequests concatenated are one): a plain 1.0 record
//        as it is, a 2.0 record with its refs replaced by the strings (the samples' bytes are the same in
//        both protocols) and one MetricMetadata per family from the series' metadata.
//
// Thread-safety: pure functions on caller-owned values; safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/sinks/remote_write/remote_write_encode.h"

namespace gpuscope {

// A record split into its parts. For a plain 1.0 record only `v1` is set.
struct RemoteWriteRecordView {
  bool is_v2 = false;
  uint64_t epoch = 0;
  std::string_view symbols;     // 2.0: field-4 entries
  std::string_view timeseries;  // 2.0: field-5 entries
  std::string_view v1;          // 1.0: the whole WriteRequest
};

// The header of a 2.0 record whose symbols part is `symbols_bytes` long, appended to *out.
void AppendRemoteWriteRecordHeader(std::string& out, uint64_t epoch, size_t symbols_bytes);

// Splits `record`. False when it starts like a 2.0 record but its header is cut or of an unknown version.
bool ParseRemoteWriteRecord(std::string_view record, RemoteWriteRecordView* view);

// The uncompressed 2.0 Request for `records`, oldest first: a view into the record itself when there is
// one 2.0 record (no copy), else into *scratch, which it replaces. Unreadable records are left out and
// counted in *unreadable.
std::string_view RemoteWriteRecordsToV2(const std::vector<std::string>& records, std::string* scratch,
                                        size_t* unreadable);

// Writes uncompressed 1.0 WriteRequests from records. Each series' labels as 1.0 entries are kept by its
// refs for as long as the records share a symbols-table epoch, so a request in the steady state copies
// them whole instead of writing them label by label; series that ended are dropped once the kept ones
// outnumber twice those of the last request (plus 1,024). About 300 bytes per series.
//
// Thread-safety: none; one per sending thread.
class RemoteWriteV1Writer {
 public:
  static constexpr uint32_t kNoRef = UINT32_MAX;
  struct SeriesLabels {
    std::string bytes;             // the TimeSeries' label entries (field 1 each)
    uint32_t family_ref = kNoRef;  // the ref of its __name__ value
  };

  // The request for `records`, oldest first. Unreadable records are left out and counted in *unreadable.
  std::string Request(const std::vector<std::string>& records, size_t* unreadable);
  // Appends one 2.0 record as 1.0 WriteRequest bytes. False on a malformed record (*out unchanged then).
  bool AppendV2Record(const RemoteWriteRecordView& view, std::string& out);
  size_t cached_series() const { return labels_.size(); }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  uint64_t epoch_ = 0;
  size_t series_ = 0;  // in the current request
  std::unordered_map<std::string, SeriesLabels, StringHash, std::equal_to<>> labels_;  // by packed refs
};

// Appends the series and metadata of one record (either format) to *batch. False on a malformed record
// (nothing is appended then).
bool DecodeRemoteWriteRecord(std::string_view record, RemoteWriteBatch* batch);

// Samples in a record (one per series) and the newest sample timestamp, added to *samples and
// max-ed into *timestamp_ms. A malformed record counts what could be read.
void SummarizeRemoteWriteRecord(std::string_view record, uint64_t* samples, int64_t* timestamp_ms);

}  // namespace gpuscope
