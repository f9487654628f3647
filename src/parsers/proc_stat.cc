#include "src/parsers/proc_stat.h"

#include <charconv>
#include <cstddef>

namespace gpuscope {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

template <typename T>
std::optional<T> ParseNumber(std::string_view s) {
  T value = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::vector<std::string_view>> SplitProcStat(std::string_view content) {
  const size_t close = content.rfind(')');
  if (close == std::string_view::npos || content.find('(') > close) return std::nullopt;
  std::string_view rest = content.substr(close + 1);
  rest = rest.substr(0, rest.find('\n'));
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && IsSpace(rest[pos])) ++pos;
    if (pos >= rest.size()) break;
    size_t end = pos;
    while (end < rest.size() && !IsSpace(rest[end])) ++end;
    fields.push_back(rest.substr(pos, end - pos));
    pos = end;
  }
  return fields;
}

std::optional<uint64_t> ProcStatNumber(const std::vector<std::string_view>& fields, int number) {
  if (number < 3 || static_cast<size_t>(number - 3) >= fields.size()) return std::nullopt;
  return ParseNumber<uint64_t>(fields[static_cast<size_t>(number - 3)]);
}

std::optional<uint64_t> ParseProcStatStartTime(std::string_view content) {
  const auto fields = SplitProcStat(content);
  if (!fields) return std::nullopt;
  return ProcStatNumber(*fields, 22);
}

std::optional<uint32_t> ParseProcStatusUid(std::string_view content) {
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 4) != "Uid:") continue;
    size_t start = 4;
    while (start < line.size() && IsSpace(line[start])) ++start;
    size_t stop = start;
    while (stop < line.size() && !IsSpace(line[stop])) ++stop;
    return ParseNumber<uint32_t>(line.substr(start, stop - start));
  }
  return std::nullopt;
}

}  // namespace gpuscope
