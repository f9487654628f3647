#include "src/parsers/proc_placement.h"

#include <charconv>

namespace gpuscope {

std::optional<CpuSet> ParseProcStatusCpusAllowed(std::string_view content) {
  static constexpr std::string_view kKey = "Cpus_allowed_list:";
  size_t pos = 0;
  while (pos < content.size()) {
    size_t newline = content.find('\n', pos);
    std::string_view line =
        content.substr(pos, newline == std::string_view::npos ? std::string_view::npos : newline - pos);
    pos = newline == std::string_view::npos ? content.size() : newline + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
    // An empty allowed list is impossible for a live task: treat it as malformed.
    if (line.empty()) return std::nullopt;
    return ParseCpuList(line);
  }
  return std::nullopt;
}

std::optional<uint32_t> ParseProcStatLastCpu(std::string_view content) {
  size_t close = content.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = content.substr(close + 1);
  // After ')' comes " S ...": field 3 is the state. Walk to field 39.
  int field = 2;
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    ++field;
    size_t end = rest.find_first_of(" \n");
    std::string_view token = rest.substr(0, end);
    if (field == 39) {
      uint32_t cpu = 0;
      auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), cpu);
      if (ec != std::errc() || ptr != token.data() + token.size() || cpu > kMaxCpuNumber) return std::nullopt;
      return cpu;
    }
    if (end == std::string_view::npos || rest[end] == '\n') break;
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

}  // namespace gpuscope
