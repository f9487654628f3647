#include "src/events/sources/journal_reader.h"

#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr std::string_view kTruncatedMarker = " [truncated]";
constexpr std::string_view kMessagePrefix = "MESSAGE=";

std::string Errno(int negative_errno) { return std::strerror(-negative_errno); }

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The value of `field` ("NAME=value") when it starts with `prefix` ("NAME="), else false.
bool ValueOf(std::string_view field, std::string_view prefix, std::string_view* value) {
  if (field.size() < prefix.size() || field.compare(0, prefix.size(), prefix) != 0) return false;
  *value = field.substr(prefix.size());
  return true;
}

}  // namespace

JournalReader::JournalReader(Options options) : options_(std::move(options)) {
  if (options_.max_line_bytes == 0) options_.max_line_bytes = 1;
}

JournalReader::~JournalReader() {
  if (journal_ != nullptr) sd_journal_close(journal_);
}

Status JournalReader::Open() {
  if (journal_ != nullptr) return Status::Ok();
  int r = 0;
  std::string what;
  if (!options_.directory.empty()) {
    what = "journal directory " + options_.directory;
    struct stat st {};
    if (::stat(options_.directory.c_str(), &st) != 0) {
      return Status::Unavailable(what + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) return Status::Unavailable(what + ": not a directory");
    r = sd_journal_open_directory(&journal_, options_.directory.c_str(), 0);
  } else {
    what = "system journal";
    // sd_journal_open() succeeds without either directory and would then never notice one appearing.
    if (!IsDirectory("/var/log/journal") && !IsDirectory("/run/log/journal")) {
      return Status::Unavailable(
          "system journal: neither /var/log/journal nor /run/log/journal exists (is systemd-journald "
          "running?)");
    }
    r = sd_journal_open(&journal_, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
  }
  if (r < 0) {
    journal_ = nullptr;
    return Status::Unavailable(what + ": " + Errno(r));
  }
  auto fail = [this](Status status) {
    sd_journal_close(journal_);
    journal_ = nullptr;
    return status;
  };

  // A hint to libsystemd to decompress no more of a field than we keep (we still cut explicitly).
  r = sd_journal_set_data_threshold(journal_, options_.max_line_bytes + kMessagePrefix.size() + 1);
  if (r < 0) return fail(Status::Unavailable(what + ": setting the data threshold: " + Errno(r)));

  Status matched = AddMatches();
  if (!matched.ok()) return fail(matched);

  // The inotify descriptor: without it sd_journal_process() never learns of files added by rotation.
  if ((r = sd_journal_get_fd(journal_)) < 0) {
    return fail(Status::Unavailable(what + ": change notification (inotify): " + Errno(r)));
  }
  Status positioned = Position();
  if (!positioned.ok()) return fail(positioned);
  return Status::Ok();
}

Status JournalReader::AddMatches() {
  int r = 0;
  for (size_t i = 0; i < options_.matches.size(); ++i) {
    const std::string& match = options_.matches[i];
    if (i > 0 && (r = sd_journal_add_disjunction(journal_)) < 0) {
      return Status::Unavailable("adding a disjunction: " + Errno(r));
    }
    if ((r = sd_journal_add_match(journal_, match.data(), match.size())) < 0) {
      return Status::InvalidArgument("journal match \"" + match + "\" (want FIELD=value): " + Errno(r));
    }
  }
  return Status::Ok();
}

Status JournalReader::Position() {
  resume_cursor_.clear();
  if (!options_.checkpoint_path.empty()) {
    if (std::optional<std::string> text = ReadWholeFile(options_.checkpoint_path)) {
      std::string saved(text::Trim(*text));
      if (!saved.empty() && saved.find('\0') == std::string::npos &&
          sd_journal_seek_cursor(journal_, saved.c_str()) >= 0) {
        resume_cursor_ = saved;
        cursor_ = saved;
        saved_cursor_ = std::move(saved);
        return Status::Ok();
      }
      ++counters_.invalid_checkpoints;
      Log(LogLevel::kWarn, "journal checkpoint is not a cursor; starting without it",
          {{"path", options_.checkpoint_path}});
    }
  }
  int r = 0;
  bool tail = options_.start == Start::kTail;
  if (options_.start == Start::kThisBoot) {
    // Does the journal hold an entry of this boot? libsystemd's seek to a boot it does not know lands on
    // the oldest entry instead, so ask first, with the boot as the only match.
    sd_id128_t boot;
    if ((r = sd_id128_get_boot(&boot)) < 0)
      return Status::Unavailable("journal: this boot's id: " + Errno(r));
    char id[SD_ID128_STRING_MAX];
    const std::string match = std::string("_BOOT_ID=") + sd_id128_to_string(boot, id);
    sd_journal_flush_matches(journal_);
    bool found = false;
    if ((r = sd_journal_add_match(journal_, match.data(), match.size())) >= 0 &&
        (r = sd_journal_seek_head(journal_)) >= 0 && (r = sd_journal_next(journal_)) >= 0) {
      found = r > 0;
    }
    sd_journal_flush_matches(journal_);
    if (r < 0) return Status::Unavailable("journal: looking for this boot's entries: " + Errno(r));
    Status matched = AddMatches();
    if (!matched.ok()) return matched;
    if (found) {
      if ((r = sd_journal_seek_monotonic_usec(journal_, boot, 0)) < 0)
        return Status::Unavailable("journal: seek to this boot: " + Errno(r));
      return Status::Ok();
    }
    tail = true;  // every entry is of an earlier boot: this boot's come after the newest
  }
  if (tail) {
    if ((r = sd_journal_seek_tail(journal_)) < 0)
      return Status::Unavailable("journal: seek to tail: " + Errno(r));
    // Step onto the newest entry so the next sd_journal_next() returns only what is written later.
    r = sd_journal_previous(journal_);
    if (r < 0) return Status::Unavailable("journal: seek to tail: " + Errno(r));
    if (r > 0) {
      char* cursor = nullptr;
      if ((r = sd_journal_get_cursor(journal_, &cursor)) < 0) {
        return Status::Unavailable("journal: cursor of the newest entry: " + Errno(r));
      }
      cursor_ = cursor;  // checkpointed by the first PollOnce()
      std::free(cursor);
      return Status::Ok();
    }
    // Empty journal: after a tail seek libsystemd would skip the first entry written later, and
    // everything written from now on is new anyway.
  }
  if ((r = sd_journal_seek_head(journal_)) < 0)
    return Status::Unavailable("journal: seek to head: " + Errno(r));
  return Status::Ok();
}

bool JournalReader::Fill(JournalEntry& entry) {
  entry.message.clear();
  entry.identifier.clear();
  entry.unit.clear();
  entry.hostname.clear();
  entry.priority = -1;
  entry.from_kernel = false;
  uint64_t usec = 0;
  if (sd_journal_get_realtime_usec(journal_, &usec) < 0) {
    ++counters_.read_errors;
    usec = 0;
  }
  entry.realtime_usec = static_cast<int64_t>(usec);

  // One pass over the entry's fields; the first occurrence of a repeated field wins.
  bool have_message = false, have_identifier = false, have_unit = false, have_priority = false,
       have_transport = false, have_hostname = false;
  const void* data = nullptr;
  size_t length = 0;
  sd_journal_restart_data(journal_);
  while (sd_journal_enumerate_available_data(journal_, &data, &length) > 0) {
    std::string_view field(static_cast<const char*>(data), length);
    std::string_view value;
    if (!have_message && ValueOf(field, kMessagePrefix, &value)) {
      have_message = true;
      if (value.size() > options_.max_line_bytes) {
        entry.message.assign(value.substr(0, options_.max_line_bytes));
        entry.message.append(kTruncatedMarker);
        ++counters_.truncated_messages;
      } else {
        entry.message.assign(value);
      }
    } else if (!have_identifier && ValueOf(field, "SYSLOG_IDENTIFIER=", &value)) {
      have_identifier = true;
      entry.identifier.assign(value);
    } else if (!have_unit && ValueOf(field, "_SYSTEMD_UNIT=", &value)) {
      have_unit = true;
      entry.unit.assign(value);
    } else if (!have_priority && ValueOf(field, "PRIORITY=", &value)) {
      have_priority = true;
      if (value.size() == 1 && value[0] >= '0' && value[0] <= '7') entry.priority = value[0] - '0';
    } else if (!have_transport && ValueOf(field, "_TRANSPORT=", &value)) {
      have_transport = true;
      entry.from_kernel = value == "kernel";
    } else if (!have_hostname && ValueOf(field, "_HOSTNAME=", &value)) {
      have_hostname = true;
      entry.hostname.assign(value);
    }
  }
  return have_message;
}

Status JournalReader::PollOnce(const Callback& callback) {
  if (journal_ == nullptr) {
    Status s = Open();
    if (!s.ok()) return s;
  }
  int r = sd_journal_process(journal_);
  if (r < 0) {
    ++counters_.read_errors;
  } else if (r == SD_JOURNAL_INVALIDATE) {  // files added or removed: rotation, vacuum
    ++counters_.journal_changes;
  }

  Status result = Status::Ok();
  bool moved = false;
  size_t handled = 0;
  while (options_.max_entries_per_poll == 0 || handled < options_.max_entries_per_poll) {
    r = sd_journal_next(journal_);
    if (r < 0) {
      ++counters_.read_errors;
      result = Status::Unavailable("journal: reading the next entry: " + Errno(r));
      break;
    }
    if (r == 0) break;
    moved = true;
    if (!resume_cursor_.empty()) {
      int same = sd_journal_test_cursor(journal_, resume_cursor_.c_str());
      std::string gone = std::move(resume_cursor_);
      resume_cursor_.clear();
      if (same > 0) continue;  // the checkpointed entry itself, delivered before the restart
      ++counters_.cursor_not_found;
      Log(LogLevel::kWarn,
          "journal checkpoint entry is gone (vacuumed or rotated away); resuming at the oldest entry after "
          "it",
          {{"cursor", gone}});
    }
    ++handled;
    if (!Fill(entry_)) {
      ++counters_.without_message;
      continue;
    }
    ++counters_.entries;
    callback(entry_);
  }

  if (moved) {  // the reader stays on the last entry handled, also after sd_journal_next() returned 0
    char* cursor = nullptr;
    if ((r = sd_journal_get_cursor(journal_, &cursor)) >= 0) {
      cursor_ = cursor;
      std::free(cursor);
    } else {
      ++counters_.read_errors;  // keep the older cursor: those entries come again after a restart
    }
  }
  Status saved = SaveCheckpoint();
  return result.ok() ? saved : result;
}

Status JournalReader::SaveCheckpoint() {
  if (options_.checkpoint_path.empty() || cursor_.empty() || cursor_ == saved_cursor_) return Status::Ok();
  Status s = WriteFileAtomically(options_.checkpoint_path, cursor_ + "\n");
  if (s.ok()) saved_cursor_ = cursor_;
  return s;
}

}  // namespace gpuscope
