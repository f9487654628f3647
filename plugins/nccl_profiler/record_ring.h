// RecordRing: the bounded, lock-free queue between NCCL's threads (the application thread that launches
// collectives, NCCL's proxy thread that sees them complete) and the plugin's sender thread. Push never
// blocks and never allocates: when the ring is full the record is dropped and counted, so the plugin can
// never stall NCCL. Many producers, one consumer (a bounded array of slots, each with a sequence number
// that tells producers and the consumer whose turn it is).
//
// Thread-safety: Push() from any thread; Pop() from one consumer thread; dropped() from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "src/parsers/training_wire.h"

namespace gpuscope::nccl_profiler {

class RecordRing {
 public:
  explicit RecordRing(size_t capacity);  // rounded up to a power of two, at least 2

  // False (and counted) when the ring is full.
  bool Push(const TrainingCollective& record);
  // The oldest record, false when empty.
  bool Pop(TrainingCollective* record);

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t capacity() const { return mask_ + 1; }

 private:
  struct Slot {
    std::atomic<uint64_t> sequence;
    TrainingCollective record;
  };
  size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next slot a producer claims
  alignas(64) std::atomic<uint64_t> tail_{0};  // next slot the consumer reads
  alignas(64) std::atomic<uint64_t> dropped_{0};
};

}  // namespace gpuscope::nccl_profiler
