#include "src/events/sources/journal_source.h"

#include <utility>

namespace gpuscope {

JournalSource::JournalSource(JournalReader::Options options) : reader_(std::move(options)) {}

Status JournalSource::Poll(const Emit& emit) {
  return reader_.PollOnce([&](const JournalEntry& entry) {
    EventLine line;
    line.text = entry.message;
    line.origin = !entry.unit.empty() ? std::string_view(entry.unit) : std::string_view(entry.identifier);
    line.time_unix_ns = entry.realtime_usec * 1000;
    line.kernel_only = entry.from_kernel;
    emit(line);
  });
}

EventSource::Counters JournalSource::counters() const {
  return Counters{reader_.counters().truncated_messages, reader_.counters().read_errors};
}

}  // namespace gpuscope
