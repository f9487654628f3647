// SampleBacklog: how many samples the records of the remote_write queue hold, so that each URL's
// samples not yet acknowledged (gpuscope_remote_write_samples_pending) can be told from its count of
// pending records alone. Every consumer's pending records are the newest N records appended (the queue
// is read in order, and drops take the oldest), so one running total per record, oldest first, answers
// for every URL: pending samples = total of all records - total up to the record before those N.
// Records queued by an earlier run are added once at start (Appended, oldest first) from the queue.
//
// Thread-safety: none; the sink calls it under its own mutex.
#pragma once

#include <cstdint>
#include <deque>

namespace gpuscope {

class SampleBacklog {
 public:
  // One more record, newest, of `samples` samples.
  void Appended(uint64_t samples);
  // Samples in the newest `pending_records` records (all it knows of when asked for more).
  uint64_t Pending(uint64_t pending_records) const;
  // Forgets all but the newest `records` records (those no consumer still needs).
  void Keep(uint64_t records);
  uint64_t records() const { return cumulative_.size(); }

 private:
  std::deque<uint64_t> cumulative_;  // samples of every record appended up to and including this one
  uint64_t forgotten_ = 0;           // samples of the records forgotten by Keep
};

}  // namespace gpuscope
