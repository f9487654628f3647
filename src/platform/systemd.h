// The service manager seam: what the agent tells systemd (sd_notify: READY=1 once /metrics serves a first
// whole snapshot, STOPPING=1 when it shuts down) and logging to the journal in its native, structured form
// (each log field a journal field, PRIORITY from the level) when the service's stderr is the journal. Without
// systemd every call is a no-op or says no: the agent runs the same under any supervisor.
//
// Thread-safety: free functions, safe from any thread. WriteJournalRecord is called under the log's lock.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/log.h"

namespace gpuscope {

// Sends `state` (newline-separated VAR=value assignments, e.g. "READY=1\nSTATUS=listening on :9400") to
// the service manager named by $NOTIFY_SOCKET. False when none asked for it ($NOTIFY_SOCKET unset) or the
// message could not be sent; never fails the caller.
bool NotifyServiceManager(std::string_view state);

// True when stderr is the stream systemd connected to the journal: $JOURNAL_STREAM names stderr's device
// and inode (systemd.exec(5)). A stderr redirected elsewhere by the operator is not the journal.
bool StderrIsJournal();

// The journal fields of one log event, "NAME=value" each: MESSAGE, PRIORITY (syslog: debug 7, info 6,
// warn 4, error 3), SYSLOG_IDENTIFIER and GPUSCOPE_LEVEL, then one per log field, its key upper-cased with
// characters a journal field name cannot hold as '_'. A key that would take the name of a field above or
// of one the journal sets itself (MESSAGE_ID, CODE_FILE, ...) gets the prefix GPUSCOPE_; an empty key is
// GPUSCOPE_FIELD. Values are kept byte for byte (the native protocol carries newlines and any bytes).
std::vector<std::string> JournalFields(std::string_view identifier, LogLevel level, std::string_view message,
                                       std::initializer_list<LogField> fields);

// A LogRecordWriter (src/core/log.h): sends JournalFields(<program name>, ...) with sd_journal_sendv.
// A record the journal refuses is written as a logfmt line to stderr instead, so nothing is lost.
void WriteJournalRecord(LogLevel level, std::string_view message, std::initializer_list<LogField> fields);

}  // namespace gpuscope
