// JournalSource: the systemd journal as an EventSource (JournalReader underneath: matches, resume by
// cursor). A line's origin is the entry's unit, else its syslog identifier; entries of the kernel
// transport are kernel-only lines; the time is the entry's own. No families of its own beyond the
// pipeline's per-source ones.
//
// Thread-safety: as EventSource.
#pragma once

#include "src/events/event_source.h"
#include "src/events/sources/journal_reader.h"

namespace gpuscope {

class JournalSource final : public EventSource {
 public:
  explicit JournalSource(JournalReader::Options options);

  std::string_view Name() const override { return "journal"; }
  Status Poll(const Emit& emit) override;
  Counters counters() const override;

 private:
  JournalReader reader_;
};

}  // namespace gpuscope
