#include "src/sinks/queue/record_format.h"

#include <array>
#include <cstring>

namespace gpuscope {
namespace {

constexpr std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (0x82F63B78u ^ (c >> 1)) : (c >> 1);
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32cTable = MakeCrc32cTable();

void PutU32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

constexpr std::string_view kCheckpointMagic = "GPSQCKP1";

// CRC over length (4 bytes at header+4), time (8 bytes at header+8) and the payload.
uint32_t RecordCrc(const char* header, std::string_view payload) {
  uint32_t crc = Crc32c(std::string_view(header + 4, 12));
  return Crc32c(payload, crc);
}

}  // namespace

uint32_t Crc32c(std::string_view bytes, uint32_t crc) {
  crc = ~crc;
  for (unsigned char b : bytes) crc = kCrc32cTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

void EncodeQueueRecord(std::string_view payload, int64_t append_time_ms, std::string* out) {
  char header[kQueueRecordHeaderSize];
  PutU32(kQueueRecordMagic, header);
  PutU32(static_cast<uint32_t>(payload.size()), header + 4);
  PutU64(static_cast<uint64_t>(append_time_ms), header + 8);
  PutU32(RecordCrc(header, payload), header + 16);
  out->append(header, sizeof(header));
  out->append(payload);
}

QueueRecordStatus ReadQueueRecord(std::string_view bytes, size_t offset, QueueRecordView* record) {
  if (offset >= bytes.size()) return QueueRecordStatus::kEnd;
  const size_t remaining = bytes.size() - offset;
  const char* p = bytes.data() + offset;
  // A short header whose available bytes already disagree with the magic is corruption, not a tear.
  char magic[4];
  PutU32(kQueueRecordMagic, magic);
  if (std::memcmp(p, magic, remaining < 4 ? remaining : 4) != 0) return QueueRecordStatus::kCorrupt;
  if (remaining < kQueueRecordHeaderSize) return QueueRecordStatus::kTruncated;
  const uint32_t length = GetU32(p + 4);
  if (length > kQueueMaxRecordPayload) return QueueRecordStatus::kCorrupt;
  if (remaining - kQueueRecordHeaderSize < length) return QueueRecordStatus::kTruncated;
  std::string_view payload(p + kQueueRecordHeaderSize, length);
  if (RecordCrc(p, payload) != GetU32(p + 16)) return QueueRecordStatus::kCorrupt;
  record->offset = offset;
  record->append_time_ms = static_cast<int64_t>(GetU64(p + 8));
  record->payload = payload;
  return QueueRecordStatus::kOk;
}

QueueScanResult ScanQueueRecords(std::string_view bytes, QueueScanMode mode) {
  QueueScanResult result;
  size_t offset = 0;
  while (true) {
    QueueRecordView record;
    QueueRecordStatus status = ReadQueueRecord(bytes, offset, &record);
    if (status == QueueRecordStatus::kOk) {
      result.records.push_back(record);
      offset += record.encoded_size();
      result.valid_end = offset;
      continue;
    }
    result.stop_reason = status;
    if (status == QueueRecordStatus::kEnd) break;
    ++result.corrupt_records;
    if (mode == QueueScanMode::kStopAtFirstBad) break;
    // Resynchronise: the next offset holding a valid record. Each candidate must start with the magic.
    size_t next = offset + 1;
    bool found = false;
    while (next < bytes.size()) {
      if (ReadQueueRecord(bytes, next, &record) == QueueRecordStatus::kOk) {
        found = true;
        break;
      }
      ++next;
    }
    if (!found) break;
    offset = next;
  }
  return result;
}

std::string EncodeQueueCheckpoint(const QueueCheckpoint& checkpoint) {
  char buf[kQueueCheckpointSize];
  std::memcpy(buf, kCheckpointMagic.data(), 8);
  PutU64(checkpoint.seq, buf + 8);
  PutU64(checkpoint.offset, buf + 16);
  PutU32(Crc32c(std::string_view(buf, 24)), buf + 24);
  return std::string(buf, sizeof(buf));
}

std::optional<QueueCheckpoint> DecodeQueueCheckpoint(std::string_view bytes) {
  if (bytes.size() != kQueueCheckpointSize) return std::nullopt;
  const char* buf = bytes.data();
  if (std::string_view(buf, 8) != kCheckpointMagic) return std::nullopt;
  if (Crc32c(std::string_view(buf, 24)) != GetU32(buf + 24)) return std::nullopt;
  return QueueCheckpoint{GetU64(buf + 8), GetU64(buf + 16)};
}

}  // namespace gpuscope
