// JournalReader: reads entries from the systemd journal through libsystemd (sd-journal), optionally
// filtered by matches, and resumes after a restart from a cursor kept in a checkpoint file.
//
// Position: with a checkpoint, the reader seeks to the saved cursor and skips that entry (already
// delivered). When the entry is gone (its file was vacuumed or rotated away while the agent was down),
// the journal places the reader at the first entry still present after the cursor's position, which is
// the oldest entry left when the vacuum removed everything older; that is counted (cursor_not_found)
// and logged. An unreadable checkpoint is counted and ignored. Without a checkpoint the reader starts
// at the oldest entry (Start::kHead), after the newest (Start::kTail; an empty journal then counts
// as head, so entries written before the first poll are not lost), or at the first entry of the running
// boot (Start::kThisBoot: what /dev/kmsg would hold, so that a first start on a node with months of
// persistent journal does not report old XIDs as new; entries of this boot written later are read as
// they come). With kTail the position reached is checkpointed at once, so a restart never skips what
// arrived in between.
//
// Rotation and vacuum: journal files added or removed in the directories are picked up on the next
// PollOnce() (inotify, processed there); entries appended to open files are read as they come.
//
// Messages: MESSAGE bytes are passed through untouched (binary, NUL bytes, invalid UTF-8; classifiers
// sanitise); a message longer than max_line_bytes is cut there, suffixed with " [truncated]" and counted.
// A multi-line MESSAGE stays one entry. Entries without MESSAGE are skipped and counted.
//
// Poll-based like the other sources: the owner calls PollOnce() at its interval.
//
// Thread-safety: not thread-safe (sd_journal objects belong to one thread and must not cross fork());
// one thread drives Open()/PollOnce(). counters() from that thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/core/status.h"

struct sd_journal;  // libsystemd; only journal_reader.cc includes its header

namespace gpuscope {

// One journal entry as the event path needs it. Fields absent from the entry are empty (-1 for priority).
struct JournalEntry {
  std::string message;        // MESSAGE, possibly cut (see above)
  int64_t realtime_usec = 0;  // wall-clock time of the entry, microseconds since the epoch
  std::string identifier;     // SYSLOG_IDENTIFIER ("kernel", "slurmd", ...)
  std::string unit;           // _SYSTEMD_UNIT ("slurmd.service")
  int priority = -1;          // PRIORITY 0 (emerg) .. 7 (debug); -1 when absent or malformed
  bool from_kernel = false;   // _TRANSPORT=kernel
  std::string hostname;       // _HOSTNAME
};

class JournalReader {
 public:
  enum class Start { kHead, kTail, kThisBoot };  // where to begin without a checkpoint
  struct Options {
    // A journal directory (e.g. /var/log/journal, its machine-id subdirectories included, or a
    // directory of .journal files). Empty: the local system journal (/var/log/journal and
    // /run/log/journal; neither per-user nor remote journals).
    std::string directory;
    // Field matches "FIELD=value" (e.g. "_TRANSPORT=kernel", "_SYSTEMD_UNIT=slurmd.service"); an
    // entry is read when it satisfies any of them. Empty: every entry.
    std::vector<std::string> matches;
    // File holding the cursor of the last delivered entry, replaced atomically. Empty: no checkpoint.
    std::string checkpoint_path;
    size_t max_line_bytes = 64 * 1024;
    Start start = Start::kHead;
    // Entries handled by one PollOnce() at most (the rest wait for the next poll), so a large backlog
    // (a first start at the head of a big journal) is shipped and checkpointed in slices. 0: no limit.
    size_t max_entries_per_poll = 0;
  };
  struct Counters {
    uint64_t entries = 0;              // entries delivered to the callback
    uint64_t truncated_messages = 0;   // messages cut at max_line_bytes
    uint64_t without_message = 0;      // entries without a MESSAGE field, skipped
    uint64_t cursor_not_found = 0;     // the checkpointed entry was gone (vacuum, rotation)
    uint64_t invalid_checkpoints = 0;  // checkpoint not a cursor: started per Options::start
    uint64_t journal_changes = 0;      // polls that saw journal files added or removed
    uint64_t read_errors = 0;          // libsystemd calls that failed while reading
  };
  using Callback = std::function<void(const JournalEntry&)>;

  explicit JournalReader(Options options);
  ~JournalReader();
  JournalReader(const JournalReader&) = delete;
  JournalReader& operator=(const JournalReader&) = delete;

  // Opens the journal, installs the matches, sets up change notification and positions the reader
  // (checkpoint, else Options::start). Returns Ok; Unavailable when the directory (or, for the system
  // journal, both /var/log/journal and /run/log/journal) is missing or libsystemd cannot open it, with
  // the path and reason in the message; InvalidArgument for a malformed match. Calling it again after
  // success does nothing.
  Status Open();

  // Opens the journal first if needed (returning Open()'s error), then delivers every entry available
  // now (up to max_entries_per_poll) in journal order and writes the checkpoint if the position
  // moved. Returns Ok, or Unavailable when reading fails or the checkpoint cannot be written (entries
  // already delivered stay delivered; the next poll retries the write).
  Status PollOnce(const Callback& callback);

  // Cursor of the last delivered (or checkpointed, or tail-start) entry; empty before any.
  const std::string& cursor() const { return cursor_; }
  const Counters& counters() const { return counters_; }

 private:
  Status Position();
  // Adds Options::matches (OR-ed) to the open journal.
  Status AddMatches();
  bool Fill(JournalEntry& entry);  // false: the entry has no MESSAGE
  Status SaveCheckpoint();

  Options options_;
  sd_journal* journal_ = nullptr;
  std::string resume_cursor_;  // checkpointed cursor to test against the first entry read
  std::string cursor_;
  std::string saved_cursor_;
  JournalEntry entry_;  // reused across entries to keep their buffers
  Counters counters_;
};

}  // namespace gpuscope
