// The training socket's datagrams, version 1 (docs/design/training.md; the producer side is
// python/gpuscope/_wire.py and, later, the NCCL profiler plugin): little-endian, a 12-byte header
// ("GPST", version, flags, record count, the producer's cumulative drops) and records of
// {type u8, body size u16, body}. A body longer than this version's fields keeps its known prefix (a newer
// producer may append fields); a record of an unknown type is skipped by its size.
//
// Untrusted input: any bytes from any local process. Decoding never reads past the datagram, never
// allocates more than the records it returns (the job string is capped at 255 bytes by its length byte).
//
// Thread-safety: pure function on caller-owned values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

inline constexpr std::string_view kTrainingWireMagic = "GPST";
inline constexpr uint8_t kTrainingWireVersion = 1;
inline constexpr size_t kTrainingMaxDatagram = 8192;

struct TrainingHello {
  int32_t rank = 0;
  int32_t local_rank = 0;
  int32_t world_size = 0;
  std::string job;  // as the producer claims it; the agent checks it against the kernel-derived job
};

struct TrainingStep {
  uint64_t step = 0;
  uint64_t begin_ns = 0;  // CLOCK_REALTIME
  uint64_t end_ns = 0;
  uint32_t samples = 0;
};

struct TrainingCollective {
  uint64_t comm = 0;  // communicator hash (0: the default process group)
  uint64_t seq = 0;
  uint8_t op = 0;  // ncclFunc_t order: broadcast, reduce, all_gather, reduce_scatter, all_reduce, ...
  uint8_t dtype = 0;
  uint8_t algo = 0;
  uint8_t proto = 0;
  uint64_t bytes = 0;
  int32_t nranks = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;  // 0: entered, not completed (producers send entry and completion as two records)
};

enum class TrainingMarkKind : uint8_t { kCheckpoint = 1, kDataloaderWait = 2, kGradNorm = 3 };

struct TrainingMark {
  uint8_t kind = 0;  // TrainingMarkKind; other values are kept for the caller to count
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  double value = 0;  // checkpoint bytes, gradient norm
};

// One datagram's records, in the order of each kind. Reused across calls: Decode clears it first.
struct TrainingDatagram {
  uint32_t producer_drops = 0;  // cumulative records the producer could not send
  std::optional<TrainingHello> hello;
  std::vector<TrainingStep> steps;
  std::vector<TrainingCollective> collectives;
  std::vector<TrainingMark> marks;
  uint32_t unknown_records = 0;
};

enum class TrainingWireError {
  kNone,
  kShort,      // shorter than the header
  kMagic,      // not "GPST"
  kVersion,    // a version this agent does not read
  kTruncated,  // a record header or body runs past the datagram, or a body is shorter than its fields
};

std::string_view TrainingWireErrorName(TrainingWireError error);

// The encoder of the same format, for producers written in C++ (the NCCL profiler plugin); the Python
// package has its own (python/gpuscope/_wire.py), and the tests hold both to these bytes.
// A datagram: AppendTrainingHeader, then the records; `count` is patched by FinishTrainingDatagram.
void AppendTrainingHeader(std::string* out, uint32_t producer_drops);
void AppendTrainingHello(std::string* out, const TrainingHello& hello);
void AppendTrainingCollective(std::string* out, const TrainingCollective& collective);
// Sets the record count of the datagram `out` holds (the records appended after its header).
void FinishTrainingDatagram(std::string* out, uint16_t records);
// Bytes a collective record takes (type, size, body).
inline constexpr size_t kTrainingCollectiveRecordSize = 3 + 48;

// Decodes `data` into *out. On an error the records before the bad one stay in *out (the caller decides
// whether to use them; the agent does not).
TrainingWireError DecodeTrainingDatagram(std::string_view data, TrainingDatagram* out);

}  // namespace gpuscope
