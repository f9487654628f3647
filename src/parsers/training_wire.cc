#include "src/parsers/training_wire.h"

#include <algorithm>
#include <cstring>

namespace gpuscope {
namespace {

// A little-endian reader over one record body or the header; every read is bounds-checked by the caller
// through size() first.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const { return bytes_.size() - pos_; }
  template <typename T>
  T Unsigned() {
    T value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    return value;
  }
  int32_t Int32() { return static_cast<int32_t>(Unsigned<uint32_t>()); }
  double Double() {
    const uint64_t bits = Unsigned<uint64_t>();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  std::string_view Bytes(size_t n) {
    std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

constexpr size_t kHeaderSize = 12;
constexpr size_t kHelloSize = 13;
constexpr size_t kStepSize = 28;
constexpr size_t kCollectiveSize = 48;
constexpr size_t kMarkSize = 25;

enum RecordType : uint8_t { kHello = 1, kStep = 2, kCollective = 3, kMark = 4 };

bool DecodeRecord(uint8_t type, Reader body, TrainingDatagram* out) {
  switch (type) {
    case kHello: {
      if (body.size() < kHelloSize) return false;
      TrainingHello hello;
      hello.rank = body.Int32();
      hello.local_rank = body.Int32();
      hello.world_size = body.Int32();
      const uint8_t job_size = body.Unsigned<uint8_t>();
      if (body.size() < job_size) return false;
      hello.job = std::string(body.Bytes(job_size));
      out->hello = std::move(hello);
      return true;
    }
    case kStep: {
      if (body.size() < kStepSize) return false;
      TrainingStep& step = out->steps.emplace_back();
      step.step = body.Unsigned<uint64_t>();
      step.begin_ns = body.Unsigned<uint64_t>();
      step.end_ns = body.Unsigned<uint64_t>();
      step.samples = body.Unsigned<uint32_t>();
      return true;
    }
    case kCollective: {
      if (body.size() < kCollectiveSize) return false;
      TrainingCollective& c = out->collectives.emplace_back();
      c.comm = body.Unsigned<uint64_t>();
      c.seq = body.Unsigned<uint64_t>();
      c.op = body.Unsigned<uint8_t>();
      c.dtype = body.Unsigned<uint8_t>();
      c.algo = body.Unsigned<uint8_t>();
      c.proto = body.Unsigned<uint8_t>();
      c.bytes = body.Unsigned<uint64_t>();
      c.nranks = body.Int32();
      c.begin_ns = body.Unsigned<uint64_t>();
      c.end_ns = body.Unsigned<uint64_t>();
      return true;
    }
    case kMark: {
      if (body.size() < kMarkSize) return false;
      TrainingMark& mark = out->marks.emplace_back();
      mark.kind = body.Unsigned<uint8_t>();
      mark.begin_ns = body.Unsigned<uint64_t>();
      mark.end_ns = body.Unsigned<uint64_t>();
      mark.value = body.Double();
      return true;
    }
    default:
      ++out->unknown_records;
      return true;
  }
}

}  // namespace

namespace {

template <typename T>
void Put(std::string* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out->push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

}  // namespace

void AppendTrainingHeader(std::string* out, uint32_t producer_drops) {
  out->append(kTrainingWireMagic);
  Put<uint8_t>(out, kTrainingWireVersion);
  Put<uint8_t>(out, 0);
  Put<uint16_t>(out, 0);  // the record count: FinishTrainingDatagram
  Put<uint32_t>(out, producer_drops);
}

void AppendTrainingHello(std::string* out, const TrainingHello& hello) {
  const size_t job = std::min<size_t>(hello.job.size(), 255);
  Put<uint8_t>(out, kHello);
  Put<uint16_t>(out, static_cast<uint16_t>(kHelloSize + job));
  Put<uint32_t>(out, static_cast<uint32_t>(hello.rank));
  Put<uint32_t>(out, static_cast<uint32_t>(hello.local_rank));
  Put<uint32_t>(out, static_cast<uint32_t>(hello.world_size));
  Put<uint8_t>(out, static_cast<uint8_t>(job));
  out->append(hello.job, 0, job);
}

void AppendTrainingCollective(std::string* out, const TrainingCollective& c) {
  Put<uint8_t>(out, kCollective);
  Put<uint16_t>(out, static_cast<uint16_t>(kCollectiveSize));
  Put<uint64_t>(out, c.comm);
  Put<uint64_t>(out, c.seq);
  Put<uint8_t>(out, c.op);
  Put<uint8_t>(out, c.dtype);
  Put<uint8_t>(out, c.algo);
  Put<uint8_t>(out, c.proto);
  Put<uint64_t>(out, c.bytes);
  Put<uint32_t>(out, static_cast<uint32_t>(c.nranks));
  Put<uint64_t>(out, c.begin_ns);
  Put<uint64_t>(out, c.end_ns);
}

void FinishTrainingDatagram(std::string* out, uint16_t records) {
  if (out->size() < kHeaderSize) return;
  (*out)[6] = static_cast<char>(records & 0xff);
  (*out)[7] = static_cast<char>(records >> 8);
}

std::string_view TrainingWireErrorName(TrainingWireError error) {
  switch (error) {
    case TrainingWireError::kNone:
      return "none";
    case TrainingWireError::kShort:
      return "short";
    case TrainingWireError::kMagic:
      return "magic";
    case TrainingWireError::kVersion:
      return "version";
    case TrainingWireError::kTruncated:
      return "truncated";
  }
  return "unknown";
}

TrainingWireError DecodeTrainingDatagram(std::string_view data, TrainingDatagram* out) {
  out->producer_drops = 0;
  out->hello.reset();
  out->steps.clear();
  out->collectives.clear();
  out->marks.clear();
  out->unknown_records = 0;
  if (data.size() < kHeaderSize) return TrainingWireError::kShort;
  if (data.substr(0, 4) != kTrainingWireMagic) return TrainingWireError::kMagic;
  Reader header(data.substr(4, kHeaderSize - 4));
  if (header.Unsigned<uint8_t>() != kTrainingWireVersion) return TrainingWireError::kVersion;
  header.Unsigned<uint8_t>();  // flags: none defined in version 1
  const uint16_t count = header.Unsigned<uint16_t>();
  out->producer_drops = header.Unsigned<uint32_t>();
  Reader records(data.substr(kHeaderSize));
  for (uint16_t i = 0; i < count; ++i) {
    if (records.size() < 3) return TrainingWireError::kTruncated;
    const uint8_t type = records.Unsigned<uint8_t>();
    const uint16_t size = records.Unsigned<uint16_t>();
    if (records.size() < size) return TrainingWireError::kTruncated;
    if (!DecodeRecord(type, Reader(records.Bytes(size)), out)) return TrainingWireError::kTruncated;
  }
  return TrainingWireError::kNone;
}

}  // namespace gpuscope
