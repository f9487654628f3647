#include "src/core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "src/core/json_string.h"
#include "src/core/mutex.h"

namespace gpuscope {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kLogfmt)};
Mutex g_write_mu;  // one line at a time on stderr
std::atomic<LogRecordWriter> g_journal_writer{nullptr};

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

bool NeedsQuoting(std::string_view value) {
  if (value.empty()) return true;
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7F) return true;
  }
  return false;
}

void AppendLogfmtValue(std::string& out, std::string_view value) {
  if (NeedsQuoting(value)) {
    AppendJsonString(out, value);
  } else {
    out.append(value);
  }
}

std::string NowRfc3339() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now - secs).count();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  return buf;
}

}  // namespace

std::string FormatLogLine(LogFormat format, std::string_view time, LogLevel level, std::string_view message,
                          std::initializer_list<LogField> fields) {
  std::string out;
  out.reserve(128);
  if (format == LogFormat::kJson) {
    out += "{\"ts\":";
    AppendJsonString(out, time);
    out += ",\"level\":";
    AppendJsonString(out, LevelName(level));
    out += ",\"msg\":";
    AppendJsonString(out, message);
    for (const auto& [key, value] : fields) {
      out.push_back(',');
      AppendJsonString(out, key);
      out.push_back(':');
      AppendJsonString(out, value);
    }
    out += "}\n";
  } else {
    out += "ts=";
    out.append(time);
    out += " level=";
    out.append(LevelName(level));
    out += " msg=";
    AppendJsonString(out, message);
    for (const auto& [key, value] : fields) {
      out.push_back(' ');
      out.append(key);
      out.push_back('=');
      AppendLogfmtValue(out, value);
    }
    out.push_back('\n');
  }
  return out;
}

void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  const auto format = static_cast<LogFormat>(g_format.load());
  if (format == LogFormat::kJournal) {
    MutexLock lock(&g_write_mu);
    g_journal_writer.load()(level, message, fields);
    return;
  }
  std::string line = FormatLogLine(format, NowRfc3339(), level, message, fields);
  MutexLock lock(&g_write_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string_view LogLevelName(LogLevel level) { return LevelName(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool SetLogLevel(std::string_view name) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == LevelName(level)) {
      SetLogLevel(level);
      return true;
    }
  }
  return false;
}

bool SetLogFormat(std::string_view name) {
  if (name == "logfmt") {
    g_format.store(static_cast<int>(LogFormat::kLogfmt));
  } else if (name == "json") {
    g_format.store(static_cast<int>(LogFormat::kJson));
  } else if (name == "journal" && g_journal_writer.load() != nullptr) {
    g_format.store(static_cast<int>(LogFormat::kJournal));
  } else {
    return false;
  }
  return true;
}

void SetJournalWriter(LogRecordWriter writer) { g_journal_writer.store(writer); }

}  // namespace gpuscope
