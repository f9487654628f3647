// Structured logging: one line per event, logfmt (default) or JSON, to stderr; or one journal entry per
// event (LogFormat::kJournal) through the writer the program installs (src/platform/systemd.h), so that
// core does not link libsystemd.
//   Log(LogLevel::kWarn, "nvml call failed", {{"gpu", "3"}, {"call", "nvmlDeviceGetPowerUsage"}});
// Keys are plain identifiers; values are escaped as the format needs (quotes, control bytes, invalid UTF-8).
//
// Thread-safety: all functions are safe to call from any thread; lines never interleave.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace gpuscope {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kLogfmt, kJson, kJournal };

using LogField = std::pair<std::string_view, std::string_view>;

void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});

// Returns false (and changes nothing) for an unknown name. Names: debug, info, warn, error.
bool SetLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
// Returns false for an unknown name. Names: logfmt, json, and journal once a journal writer is set.
bool SetLogFormat(std::string_view name);

// Writes one event as a structured record (the systemd journal's native protocol). Called under the log's
// lock, so records never interleave; must not call Log().
using LogRecordWriter = void (*)(LogLevel level, std::string_view message,
                                 std::initializer_list<LogField> fields);
// Installs the writer of LogFormat::kJournal (before SetLogFormat("journal")).
void SetJournalWriter(LogRecordWriter writer);
bool LogEnabled(LogLevel level);
// The level's name as the log writes it: debug, info, warn, error.
std::string_view LogLevelName(LogLevel level);

// Formats one line without writing it (exposed for tests of the escaping).
std::string FormatLogLine(LogFormat format, std::string_view time, LogLevel level, std::string_view message,
                          std::initializer_list<LogField> fields);

}  // namespace gpuscope
