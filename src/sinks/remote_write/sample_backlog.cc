#include "src/sinks/remote_write/sample_backlog.h"

namespace gpuscope {

void SampleBacklog::Appended(uint64_t samples) {
  const uint64_t before = cumulative_.empty() ? forgotten_ : cumulative_.back();
  cumulative_.push_back(before + samples);
}

uint64_t SampleBacklog::Pending(uint64_t pending_records) const {
  if (cumulative_.empty() || pending_records == 0) return 0;
  if (pending_records >= cumulative_.size()) return cumulative_.back() - forgotten_;
  return cumulative_.back() - cumulative_[cumulative_.size() - pending_records - 1];
}

void SampleBacklog::Keep(uint64_t records) {
  while (cumulative_.size() > records) {
    forgotten_ = cumulative_.front();
    cumulative_.pop_front();
  }
}

}  // namespace gpuscope
