#include "src/platform/systemd.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpuscope {
namespace {

int SyslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 7;
    case LogLevel::kInfo:
      return 6;
    case LogLevel::kWarn:
      return 4;
    case LogLevel::kError:
      return 3;
  }
  return 6;
}

// Names the journal gives meaning to (systemd.journal-fields(7)) or that JournalFields sets itself: a log
// field must not pose as one of them.
bool IsReservedJournalName(std::string_view name) {
  constexpr std::string_view kReserved[] = {"MESSAGE",
                                            "MESSAGE_ID",
                                            "PRIORITY",
                                            "CODE_FILE",
                                            "CODE_LINE",
                                            "CODE_FUNC",
                                            "ERRNO",
                                            "INVOCATION_ID",
                                            "USER_INVOCATION_ID",
                                            "SYSLOG_FACILITY",
                                            "SYSLOG_IDENTIFIER",
                                            "SYSLOG_PID",
                                            "SYSLOG_TIMESTAMP",
                                            "SYSLOG_RAW",
                                            "DOCUMENTATION",
                                            "TID",
                                            "UNIT",
                                            "USER_UNIT",
                                            "GPUSCOPE_LEVEL"};
  for (std::string_view reserved : kReserved) {
    if (name == reserved) return true;
  }
  return false;
}

// A journal field name: upper-case letters, digits and '_', not starting with a digit or '_', at most
// 64 bytes (journal_field_valid() in systemd).
std::string JournalFieldName(std::string_view key) {
  std::string name;
  name.reserve(key.size());
  for (char c : key) {
    if (c >= 'a' && c <= 'z') {
      name.push_back(static_cast<char>(c - 'a' + 'A'));
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      name.push_back(c);
    } else {
      name.push_back('_');
    }
  }
  if (name.empty()) return "GPUSCOPE_FIELD";
  if (name[0] == '_' || (name[0] >= '0' && name[0] <= '9') || IsReservedJournalName(name)) {
    name.insert(0, name[0] == '_' ? "GPUSCOPE" : "GPUSCOPE_");
  }
  if (name.size() > 64) name.resize(64);
  return name;
}

}  // namespace

bool NotifyServiceManager(std::string_view state) {
  if (std::getenv("NOTIFY_SOCKET") == nullptr) return false;
  const std::string text(state);
  return sd_notify(0, text.c_str()) > 0;
}

bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long device = 0;
  unsigned long long inode = 0;
  if (std::sscanf(stream, "%llu:%llu", &device, &inode) != 2) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == device &&
         static_cast<unsigned long long>(st.st_ino) == inode;
}

std::vector<std::string> JournalFields(std::string_view identifier, LogLevel level, std::string_view message,
                                       std::initializer_list<LogField> fields) {
  std::vector<std::string> out;
  out.reserve(4 + fields.size());
  out.push_back("MESSAGE=" + std::string(message));
  out.push_back("PRIORITY=" + std::to_string(SyslogPriority(level)));
  out.push_back("SYSLOG_IDENTIFIER=" + std::string(identifier));
  out.push_back("GPUSCOPE_LEVEL=" + std::string(LogLevelName(level)));
  for (const auto& [key, value] : fields) {
    std::string field = JournalFieldName(key);
    field.push_back('=');
    field.append(value);
    out.push_back(std::move(field));
  }
  return out;
}

void WriteJournalRecord(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  const std::vector<std::string> entries =
      JournalFields(program_invocation_short_name, level, message, fields);
  std::vector<iovec> iov;
  iov.reserve(entries.size());
  for (const std::string& entry : entries) {
    iov.push_back(iovec{const_cast<char*>(entry.data()), entry.size()});
  }
  if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) return;
  // The journal is gone (journald restarting, a full socket buffer): the line goes to stderr, which
  // systemd also hands to the journal once it is back.
  std::string line = FormatLogLine(LogFormat::kLogfmt, "-", level, message, fields);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace gpuscope
