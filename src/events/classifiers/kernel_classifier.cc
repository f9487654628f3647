#include "src/events/classifiers/kernel_classifier.h"

#include <array>
#include <cstring>

#include "src/events/classifiers/oom.h"
#include "src/events/classifiers/slurm_lines.h"
#include "src/events/classifiers/xid.h"

namespace gpuscope {
namespace {

// The pre-check: one pass over the line looking for the bytes that start or end a marker every line of
// our classes carries ('X' of "Xid (", 'K' of "Killed process ", '*' of "*** ", the 'k' of "oom-kill" /
// "oom_kill", the ':' after "srun"). Most bytes of an ordinary line are none of these, so the pass is one
// table lookup per byte and no parser runs on such a line.
enum Candidate : unsigned {
  kXid = 1u << 0,
  kOomKill = 1u << 1,
  kOomWord = 1u << 2,
  kBanner = 1u << 3,
  kSrun = 1u << 4,
};

constexpr std::array<bool, 256> kTriggers = [] {
  std::array<bool, 256> t{};
  t['X'] = t['K'] = t['*'] = t['k'] = t[':'] = true;
  return t;
}();

bool At(std::string_view line, size_t i, std::string_view marker) {
  return line.size() - i >= marker.size() && std::memcmp(line.data() + i, marker.data(), marker.size()) == 0;
}

unsigned Candidates(std::string_view line) {
  unsigned found = 0;
  const size_t n = line.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (!kTriggers[c]) [[likely]]
      continue;
    switch (c) {
      case 'X':
        if (At(line, i, "Xid (")) found |= kXid;
        break;
      case 'K':
        if (At(line, i, "Killed process ")) found |= kOomKill;
        break;
      case '*':
        if (At(line, i, "*** ")) found |= kBanner;
        break;
      case 'k':
        if (i >= 4 && (At(line, i - 4, "oom-k") || At(line, i - 4, "oom_k"))) found |= kOomWord;
        break;
      case ':':
        if (i >= 4 && At(line, i - 4, "srun:")) found |= kSrun;
        break;
      default:
        break;
    }
  }
  return found;
}

}  // namespace

std::optional<Event> ClassifyKernelLine(std::string_view line) {
  unsigned found = Candidates(line);
  if (found == 0) [[likely]]
    return std::nullopt;
  if (found & kXid) {
    if (auto event = ClassifySxidLine(line)) return event;
    if (auto event = ClassifyXidLine(line)) return event;
  }
  if (found & kOomKill) {
    if (auto event = ClassifyOomKillLine(line)) return event;
  }
  if (found & kOomWord) {
    if (auto event = ClassifyOomSummaryLine(line)) return event;
    if (auto event = ClassifySlurmOomLine(line)) return event;
  }
  if (found & kBanner) {
    if (auto event = ClassifySlurmCancelLine(line)) return event;
  }
  if (found & kSrun) {
    if (auto event = ClassifySrunTaskLine(line)) return event;
  }
  return std::nullopt;
}

}  // namespace gpuscope
