// NCCL debug-line classifier. Header formats (NCCL src/debug.cc):
//   INFO:  "<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <msg>"
//   WARN:  "<host>:<pid>:<tid> [<cudaDev>] <file>:<line> NCCL WARN <msg>" (older releases: no location)
//   TRACE: "<host>:<pid>:<tid> [<cudaDev>] <elapsed> <func>:<line> NCCL TRACE <msg>"
//   NCCL >= 2.26 prepends "[%F %T] " to WARN lines by default (NCCL_DEBUG_TIMESTAMP_FORMAT/LEVELS).
// Launchers add their own prefixes ("[default0]:", "0: "), so the header is found by shape, not position.
#include <array>
#include <cstdint>
#include <string>

#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/jobs_text.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using jobs_text::Sanitize;
using jobs_text::WordAfter;

enum class NcclLevel { kInfo, kWarn, kTrace };

struct Marker {
  std::size_t pos;     // start of "NCCL "
  std::size_t length;  // length of "NCCL WARN" etc.
  NcclLevel level;
};

std::optional<Marker> FindMarker(std::string_view line) {
  std::size_t pos = 0;
  while ((pos = line.find("NCCL ", pos)) != std::string_view::npos) {
    const std::string_view rest = line.substr(pos + 5);
    struct Level {
      std::string_view word;
      NcclLevel level;
    };
    static constexpr std::array<Level, 3> kLevels = {
        {{"WARN", NcclLevel::kWarn}, {"INFO", NcclLevel::kInfo}, {"TRACE", NcclLevel::kTrace}}};
    for (const auto& l : kLevels) {
      if (rest.starts_with(l.word) && (rest.size() == l.word.size() || rest[l.word.size()] == ' ')) {
        // "NCCL" must start a word: "ProcessGroupNCCL WARN" is not a NCCL debug line.
        if (pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == ':' || line[pos - 1] == ']') {
          return Marker{pos, 5 + l.word.size(), l.level};
        }
      }
    }
    pos += 5;
  }
  return std::nullopt;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

struct Header {
  std::string_view host, pid, tid, cuda_dev;
};

// Finds "<host>:<pid>:<tid> [<dev>]" among the space-separated tokens before the marker.
Header ParseHeader(std::string_view prefix) {
  Header header;
  std::size_t start = 0;
  while (start < prefix.size()) {
    std::size_t end = prefix.find(' ', start);
    if (end == std::string_view::npos) end = prefix.size();
    const std::string_view token = prefix.substr(start, end - start);
    const std::size_t c2 = token.rfind(':');
    if (c2 != std::string_view::npos && c2 > 0) {
      const std::size_t c1 = token.rfind(':', c2 - 1);
      if (c1 != std::string_view::npos && c1 > 0 && AllDigits(token.substr(c1 + 1, c2 - c1 - 1)) &&
          AllDigits(token.substr(c2 + 1))) {
        const std::size_t c0 = token.rfind(':', c1 - 1);
        const std::size_t host_begin = c0 == std::string_view::npos ? 0 : c0 + 1;
        header.host = token.substr(host_begin, c1 - host_begin);
        header.pid = token.substr(c1 + 1, c2 - c1 - 1);
        header.tid = token.substr(c2 + 1);
        // The device follows as "[N]".
        const std::string_view after = prefix.substr(end);
        const std::size_t open = after.find_first_not_of(' ');
        if (open != std::string_view::npos && after[open] == '[') {
          const std::size_t close = after.find(']', open);
          if (close != std::string_view::npos && AllDigits(after.substr(open + 1, close - open - 1))) {
            header.cuda_dev = after.substr(open + 1, close - open - 1);
          }
        }
      }
    }
    start = end + 1;
  }
  return header;
}

// "NET/IB : Got ..." -> "NET/IB": a short word without spaces before " : ".
std::string_view Subsystem(std::string_view message) {
  const std::size_t sep = message.find(" : ");
  if (sep == std::string_view::npos || sep == 0 || sep > 32) return {};
  const std::string_view word = message.substr(0, sep);
  if (word.find(' ') != std::string_view::npos) return {};
  return word;
}

void AddUintField(Event& event, std::string_view key, std::string_view text, std::string_view after) {
  if (const auto v = jobs_text::UintAfter(text, after)) event.fields.emplace_back(key, std::to_string(*v));
}

// Completion error formats (NCCL src/transport/net_ib.cc):
//   new: "NET/IB : Got completion from peer <addr> with status=<n> opcode=<n> len=<n> vendor err <n>
//         (<Send|Recv|...>) localGid <gid> remoteGid <gid> [hca <name>]"
//   old: "NET/IB : Got completion from peer <addr> with error <n>, opcode <n>, len <n>, vendor err <n>"
void AddIbCompletionFields(Event& event, std::string_view message) {
  std::string_view peer = WordAfter(message, "from peer ");
  event.fields.emplace_back("peer", Sanitize(peer));
  std::optional<std::uint64_t> status = jobs_text::UintAfter(message, "status=");
  if (!status) status = jobs_text::UintAfter(message, "with error ");
  if (status) {
    event.fields.emplace_back("status", std::to_string(*status));
    event.fields.emplace_back("status_name", std::string(jobs_text::IbvWcStatusName(*status)));
  }
  std::optional<std::uint64_t> opcode = jobs_text::UintAfter(message, "opcode=");
  if (!opcode) opcode = jobs_text::UintAfter(message, "opcode ");
  if (opcode) event.fields.emplace_back("opcode", std::to_string(*opcode));
  std::optional<std::uint64_t> len = jobs_text::UintAfter(message, "len=");
  if (!len) len = jobs_text::UintAfter(message, "len ");
  if (len) event.fields.emplace_back("len", std::to_string(*len));
  AddUintField(event, "vendor_err", message, "vendor err ");
  if (auto gid = WordAfter(message, "localGid "); !gid.empty()) {
    event.fields.emplace_back("local_gid", Sanitize(gid, 64));
  }
  if (auto gid = WordAfter(message, "remoteGid "); !gid.empty()) {
    event.fields.emplace_back("remote_gid", Sanitize(gid, 64));
  }
  if (auto hca = WordAfter(message, "hca "); !hca.empty())
    event.fields.emplace_back("hca", Sanitize(hca, 64));
}

}  // namespace

std::optional<Event> ClassifyNcclLine(std::string_view line) {
  line = jobs_text::Head(line);
  const auto marker = FindMarker(line);
  if (!marker) return std::nullopt;
  const Header header = ParseHeader(line.substr(0, marker->pos));
  const std::string_view message = text::Trim(line.substr(marker->pos + marker->length));

  Event event;
  event.event_class = "nccl";
  event.severity = marker->level == NcclLevel::kWarn ? EventSeverity::kWarning : EventSeverity::kDebug;
  if (!header.host.empty()) {
    // The host of the rank that printed the line (a job log holds every node's ranks), not "host": that
    // is the agent's node, a stream label, and Loki-compatible stores keep labels and fields in one
    // namespace, where a field would hide the label.
    event.fields.emplace_back("process_host", Sanitize(header.host, 128));
    event.fields.emplace_back("pid", std::string(header.pid.substr(0, 20)));
    event.fields.emplace_back("tid", std::string(header.tid.substr(0, 20)));
  }
  if (!header.cuda_dev.empty())
    event.fields.emplace_back("cuda_dev", std::string(header.cuda_dev.substr(0, 10)));

  // Communicator init: "comm 0x... rank 3 nranks 8 cudaDev 3 [nvmlDev 3] busId 18000 ..." (src/init.cc).
  if (message.starts_with("comm ") && message.find(" nranks ") != std::string_view::npos) {
    AddUintField(event, "rank", message, " rank ");
    AddUintField(event, "nranks", message, " nranks ");
    if (header.cuda_dev.empty()) AddUintField(event, "cuda_dev", message, " cudaDev ");
    if (auto bus = WordAfter(message, " busId "); !bus.empty()) {
      event.fields.emplace_back("bus_id", Sanitize(bus, 32));
    }
    if (marker->level == NcclLevel::kInfo) event.severity = EventSeverity::kInfo;
  }

  const std::string_view subsystem = Subsystem(message);
  if (!subsystem.empty()) event.fields.emplace_back("subsystem", Sanitize(subsystem, 32));

  if (marker->level == NcclLevel::kWarn &&
      message.find("Got completion from peer") != std::string_view::npos) {
    event.event_class = "ib_completion";
    event.severity = EventSeverity::kError;
    AddIbCompletionFields(event, message);
  }

  // "Cuda failure 'out of memory'" (src/include/checks.h CUDACHECK) and "Cuda failure 2 'out of memory'".
  if (const std::size_t cf = message.find("Cuda failure "); cf != std::string_view::npos) {
    const std::size_t open = message.find('\'', cf);
    const std::size_t close = open == std::string_view::npos ? open : message.find('\'', open + 1);
    if (close != std::string_view::npos) {
      event.fields.emplace_back("cuda_error", Sanitize(message.substr(open + 1, close - open - 1)));
    }
  }

  event.fields.emplace_back("message", Sanitize(message, jobs_text::kMaxMessageBytes));
  const std::string_view level_word = marker->level == NcclLevel::kWarn   ? "WARN"
                                      : marker->level == NcclLevel::kInfo ? "INFO"
                                                                          : "TRACE";
  event.summary = "NCCL " + std::string(level_word);
  if (!header.host.empty()) event.summary += " on " + Sanitize(header.host, 128);
  if (!header.cuda_dev.empty()) event.summary += " GPU " + std::string(header.cuda_dev.substr(0, 10));
  event.summary += ": " + Sanitize(message, 200);
  return event;
}

}  // namespace gpuscope
