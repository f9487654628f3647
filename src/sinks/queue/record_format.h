// The on-disk formats of the durable queue, and pure readers over them (bytes in, values out, no I/O).
//
// A record is a 20-byte header followed by the payload:
//   magic u32 LE "GPSQ" | payload length u32 LE | append time u64 LE (Unix ms) | CRC32C u32 LE
// The CRC32C (Castagnoli) covers the length, the time and the payload, so a torn write or a flipped bit
// anywhere in a record is detected.
//
// A consumer's checkpoint file (checkpoint-<consumer>) holds its first unacknowledged record, 28 bytes:
//   magic "GPSQCKP1" | segment seq u64 LE | byte offset in that segment u64 LE | CRC32C u32 LE of the 24
//   bytes before it
//
// Thread-safety: pure functions over caller-owned bytes; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

inline constexpr uint32_t kQueueRecordMagic = 0x51535047;  // "GPSQ" read as little-endian u32
inline constexpr size_t kQueueRecordHeaderSize = 20;
inline constexpr uint32_t kQueueMaxRecordPayload = 16u << 20;  // 16 MiB; longer lengths are corruption

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven. `crc` continues a running value:
// Crc32c(b, Crc32c(a)) == Crc32c(a + b). Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view bytes, uint32_t crc = 0);

// Appends one encoded record to `out`. The caller keeps payloads within kQueueMaxRecordPayload.
void EncodeQueueRecord(std::string_view payload, int64_t append_time_ms, std::string* out);

struct QueueRecordView {
  size_t offset = 0;  // where the header starts in the scanned bytes
  int64_t append_time_ms = 0;
  std::string_view payload;  // points into the scanned bytes
  size_t encoded_size() const { return kQueueRecordHeaderSize + payload.size(); }
};

enum class QueueRecordStatus {
  kOk,         // a valid record at the offset
  kEnd,        // no bytes left at the offset
  kTruncated,  // fewer bytes than the header or the announced payload: a torn write
  kCorrupt,    // wrong magic, impossible length or CRC mismatch
};

// Decodes the record at `offset`. On kOk fills `record`; otherwise leaves it unchanged.
QueueRecordStatus ReadQueueRecord(std::string_view bytes, size_t offset, QueueRecordView* record);

enum class QueueScanMode {
  // For the segment being written: stop at the first bad record (everything after it is a torn tail).
  kStopAtFirstBad,
  // For older, sealed segments: skip a bad stretch by searching for the next valid record, count it.
  kSkipBad,
};

struct QueueScanResult {
  std::vector<QueueRecordView> records;  // valid records in order
  // End of the last valid record in kStopAtFirstBad mode (the length to truncate a torn tail to);
  // in kSkipBad mode the end of the last valid record as well.
  size_t valid_end = 0;
  // Bad stretches met: each skipped stretch between two valid records counts once, and a bad or torn
  // tail counts once.
  uint64_t corrupt_records = 0;
  QueueRecordStatus stop_reason = QueueRecordStatus::kEnd;  // why the scan ended
};

QueueScanResult ScanQueueRecords(std::string_view bytes, QueueScanMode mode);

inline constexpr size_t kQueueCheckpointSize = 8 + 8 + 8 + 4;

// A consumer's position: the segment and the byte offset in it of its first unacknowledged record.
struct QueueCheckpoint {
  uint64_t seq = 0;
  uint64_t offset = 0;
};

// The kQueueCheckpointSize bytes of a checkpoint file.
std::string EncodeQueueCheckpoint(const QueueCheckpoint& checkpoint);
// The position a checkpoint file holds; nullopt when its size, magic or CRC is wrong.
std::optional<QueueCheckpoint> DecodeQueueCheckpoint(std::string_view bytes);

}  // namespace gpuscope
