#include "src/sinks/remote_write/series_memory.h"

#include <cerrno>
#include <cstring>
#include <functional>

#include "src/core/log.h"
#include "src/platform/file.h"
#include "src/sinks/queue/record_format.h"

namespace gpuscope {
namespace {

constexpr std::string_view kMagic = "GPSRWSM1";
constexpr size_t kMaxFileBytes = 256u << 20;  // far beyond any real node's series; more is corruption

void PutU32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void PutString(std::string_view s, std::string* out) {
  PutU32(static_cast<uint32_t>(s.size()), out);
  out->append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool U32(uint32_t* value) {
    if (bytes_.size() - pos_ < 4) return false;
    *value = 0;
    for (int i = 0; i < 4; ++i)
      *value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 4;
    return true;
  }
  bool String(std::string* s) {
    uint32_t size = 0;
    if (!U32(&size) || bytes_.size() - pos_ < size) return false;
    s->assign(bytes_.substr(pos_, size));
    pos_ += size;
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// Order-independent fingerprint of the keys (two independent sums of a mixed hash, and the count).
uint64_t Fingerprint(const RemoteWriteSeriesSet& series) {
  uint64_t sum = 0;
  uint64_t mixed = 0;
  for (const auto& entry : series) {
    const uint64_t h = std::hash<std::string>{}(entry.first);
    sum += h;
    uint64_t m = h ^ (h >> 33);
    m *= 0xff51afd7ed558ccdULL;
    m ^= m >> 33;
    mixed += m;
  }
  return (sum ^ (mixed * 0x9e3779b97f4a7c15ULL) ^ series.size()) | 1;  // never 0
}

}  // namespace

std::string RemoteWriteSeriesKey(const RemoteWriteLabels& labels) {
  std::string key;
  for (const auto& [name, value] : labels) {
    key.append(name);
    key.push_back('\xff');
    key.append(value);
    key.push_back('\xfe');
  }
  return key;
}

std::string EncodeSeriesMemory(const RemoteWriteSeriesSet& series) {
  std::string out(kMagic);
  PutU32(static_cast<uint32_t>(series.size()), &out);
  for (const auto& entry : series) {
    PutU32(static_cast<uint32_t>(entry.second.size()), &out);
    for (const auto& [name, value] : entry.second) {
      PutString(name, &out);
      PutString(value, &out);
    }
  }
  PutU32(Crc32c(out), &out);
  return out;
}

bool DecodeSeriesMemory(std::string_view bytes, RemoteWriteSeriesSet* series) {
  series->clear();
  if (bytes.size() < kMagic.size() + 8 || bytes.substr(0, kMagic.size()) != kMagic) return false;
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  uint32_t crc = 0;
  Reader trailer(bytes.substr(bytes.size() - 4));
  if (!trailer.U32(&crc) || crc != Crc32c(body)) return false;
  Reader reader(body.substr(kMagic.size()));
  uint32_t count = 0;
  if (!reader.U32(&count)) return false;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t labels = 0;
    if (!reader.U32(&labels)) return (series->clear(), false);
    RemoteWriteLabels series_labels;
    for (uint32_t l = 0; l < labels; ++l) {
      std::string name;
      std::string value;
      if (!reader.String(&name) || !reader.String(&value)) return (series->clear(), false);
      series_labels.emplace_back(std::move(name), std::move(value));
    }
    std::string key = RemoteWriteSeriesKey(series_labels);
    series->emplace(std::move(key), std::move(series_labels));
  }
  if (!reader.done()) return (series->clear(), false);
  return true;
}

RemoteWriteSeriesSet SeriesMemory::Load() {
  RemoteWriteSeriesSet series;
  std::string bytes;
  const int error = ReadFileInto(path_, &bytes, kMaxFileBytes + 1);
  if (error == ENOENT) {
    stored_ = false;
    return series;
  }
  if (error != 0) {
    Log(LogLevel::kWarn,
        "remote_write cannot read its series memory; no stale markers for series gone "
        "while it was down",
        {{"path", path_}, {"error", std::strerror(error)}});
  } else if (bytes.size() > kMaxFileBytes || !DecodeSeriesMemory(bytes, &series)) {
    Log(LogLevel::kWarn,
        "remote_write series memory is corrupt, ignored; no stale markers for series gone "
        "while it was down",
        {{"path", path_}, {"bytes", std::to_string(bytes.size())}});
    series.clear();
  }
  stored_fingerprint_ = Fingerprint(series);
  stored_ = error == 0 && !series.empty();
  return series;
}

Status SeriesMemory::Store(const RemoteWriteSeriesSet& series) {
  const uint64_t fingerprint = Fingerprint(series);
  if (stored_ && fingerprint == stored_fingerprint_) return Status::Ok();
  // Not synced: a host crash that loses it costs the stale markers of that one restart, while a sync
  // every time a job starts or ends would cost the disk more than it saves.
  AtomicWriteOptions options;
  options.sync = false;
  Status status = WriteFileAtomically(path_, EncodeSeriesMemory(series), options);
  if (!status.ok()) return status;
  stored_fingerprint_ = fingerprint;
  stored_ = true;
  return Status::Ok();
}

}  // namespace gpuscope
