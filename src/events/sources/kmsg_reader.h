// KmsgReader: reads kernel log records from /dev/kmsg (or a stand-in file/FIFO), resumes after a
// restart by sequence number, and counts ring-buffer overruns and sequence gaps.
//
// The real device returns exactly one record per read() and fails a read with EPIPE when the
// record the reader was positioned at has been overwritten (the next read continues with the
// oldest record still present). A regular file or FIFO used in tests returns many records per
// read(); the reader then splits the bytes on record boundaries, holding an incomplete tail.
//
// Thread-safety: not thread-safe; one thread drives PollOnce(). Counters may be read from that
// thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "src/core/status.h"
#include "src/events/sources/kmsg_record.h"

namespace gpuscope {

class KmsgReader {
 public:
  struct Options {
    std::string path = "/dev/kmsg";
    // File that stores the last delivered sequence number (and the boot id). Empty: no checkpoint.
    std::string checkpoint_path;
    // Identity of the current boot; a checkpoint from another boot is ignored (sequence numbers
    // restart at 0 on boot). Empty: read /proc/sys/kernel/random/boot_id.
    std::string boot_id;
    // Treat every read() as exactly one record, as the real character device does (detected
    // automatically for character devices; tests that script read_fn set it).
    bool one_record_per_read = false;
    // Test seam: the read() to use; defaults to ::read.
    std::function<ssize_t(int fd, void* buf, size_t len)> read_fn;
  };
  struct Counters {
    uint64_t records = 0;       // records delivered to the callback
    uint64_t skipped = 0;       // records at or below the checkpointed sequence
    uint64_t overruns = 0;      // read() failed with EPIPE
    uint64_t gaps = 0;          // times the sequence jumped forward by more than one
    uint64_t missed = 0;        // records lost in those jumps
    uint64_t parse_errors = 0;  // records whose header did not parse
  };
  using Callback = std::function<void(const KmsgRecord&)>;

  explicit KmsgReader(Options options);
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;

  // Opens the device (O_RDONLY|O_NONBLOCK) and loads the checkpoint. Returns Unavailable when the
  // device cannot be opened; a missing or unreadable checkpoint only means "start from the oldest".
  Status Open();

  // Reads every record available now (until EAGAIN or end of file), delivering new ones to
  // `callback` in order, then writes the checkpoint if the last sequence moved. Returns Ok, or
  // Unavailable on a read error other than EAGAIN/EINTR/EPIPE or a failed checkpoint write
  // (records already delivered stay delivered).
  Status PollOnce(const Callback& callback);

  // The last delivered (or checkpointed) sequence number, nullopt before any.
  std::optional<uint64_t> last_sequence() const { return last_seq_; }
  const Counters& counters() const { return counters_; }

 private:
  void Deliver(std::string_view bytes, const Callback& callback);
  Status SaveCheckpoint();

  Options options_;
  int fd_ = -1;
  bool is_char_device_ = false;
  std::string pending_;
  std::optional<uint64_t> last_seq_;
  std::optional<uint64_t> saved_seq_;
  Counters counters_;
};

}  // namespace gpuscope
