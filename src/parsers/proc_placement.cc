#include "src/parsers/proc_placement.h"

#include "src/parsers/proc_stat.h"
#include "src/parsers/text.h"

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
    line = text::Trim(line);
    // An empty allowed list is impossible for a live task: treat it as malformed.
    if (line.empty()) return std::nullopt;
    return ParseCpuList(line);
  }
  return std::nullopt;
}

std::optional<uint32_t> ParseProcStatLastCpu(std::string_view content) {
  const auto fields = SplitProcStat(content);
  if (!fields) return std::nullopt;
  const std::optional<uint64_t> cpu = ProcStatNumber(*fields, 39);
  if (!cpu || *cpu > kMaxCpuNumber) return std::nullopt;
  return static_cast<uint32_t>(*cpu);
}

}  // namespace gpuscope
