#include "plugins/nccl_profiler/record_ring.h"

namespace gpuscope::nccl_profiler {

RecordRing::RecordRing(size_t capacity) {
  size_t size = 2;
  while (size < capacity) size <<= 1;
  mask_ = size - 1;
  slots_ = std::make_unique<Slot[]>(size);
  for (size_t i = 0; i < size; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
}

bool RecordRing::Push(const TrainingCollective& record) {
  uint64_t position = head_.load(std::memory_order_relaxed);
  while (true) {
    Slot& slot = slots_[position & mask_];
    const uint64_t sequence = slot.sequence.load(std::memory_order_acquire);
    const int64_t difference = static_cast<int64_t>(sequence) - static_cast<int64_t>(position);
    if (difference == 0) {
      // The slot is free for this position: claim it, unless another producer did first.
      if (head_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
        slot.record = record;
        slot.sequence.store(position + 1, std::memory_order_release);
        return true;
      }
    } else if (difference < 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);  // full: the consumer has not freed it yet
      return false;
    } else {
      position = head_.load(std::memory_order_relaxed);
    }
  }
}

bool RecordRing::Pop(TrainingCollective* record) {
  const uint64_t position = tail_.load(std::memory_order_relaxed);
  Slot& slot = slots_[position & mask_];
  const uint64_t sequence = slot.sequence.load(std::memory_order_acquire);
  if (static_cast<int64_t>(sequence) - static_cast<int64_t>(position + 1) < 0) return false;  // empty
  *record = slot.record;
  slot.sequence.store(position + mask_ + 1, std::memory_order_release);
  tail_.store(position + 1, std::memory_order_relaxed);
  return true;
}

}  // namespace gpuscope::nccl_profiler
