#include "src/parsers/cpulist.h"

#include <algorithm>
#include <charconv>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

// Parses a decimal number at the front of `text`, advancing it. Fails on no digits or overflow.
bool TakeNumber(std::string_view& text, uint32_t& value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return false;
  text.remove_prefix(static_cast<size_t>(ptr - begin));
  return true;
}

}  // namespace

std::optional<CpuSet> ParseCpuList(std::string_view text) {
  text = text::Trim(text);
  CpuSet cpus;
  if (text.empty()) return cpus;
  // A bitmap rather than a list while parsing: repeated ranges cost no extra memory.
  std::vector<bool> marks;
  while (true) {
    uint32_t first = 0;
    if (!TakeNumber(text, first) || first > kMaxCpuNumber) return std::nullopt;
    uint32_t last = first;
    uint32_t used = 1;
    uint32_t group = 1;
    if (!text.empty() && text.front() == '-') {
      text.remove_prefix(1);
      if (!TakeNumber(text, last) || last > kMaxCpuNumber || last < first) return std::nullopt;
      if (!text.empty() && text.front() == ':') {
        text.remove_prefix(1);
        if (!TakeNumber(text, used) || text.empty() || text.front() != '/') return std::nullopt;
        text.remove_prefix(1);
        if (!TakeNumber(text, group) || used == 0 || group == 0 || used > group) return std::nullopt;
      }
    }
    if (marks.size() <= last) marks.resize(last + 1);
    for (uint32_t cpu = first; cpu <= last; ++cpu) {
      if ((cpu - first) % group < used) marks[cpu] = true;
    }
    if (text.empty()) break;
    if (text.front() != ',') return std::nullopt;
    text.remove_prefix(1);
  }
  for (uint32_t cpu = 0; cpu < marks.size(); ++cpu) {
    if (marks[cpu]) cpus.push_back(cpu);
  }
  return cpus;
}

std::string FormatCpuList(const CpuSet& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

bool CpuSetsIntersect(const CpuSet& a, const CpuSet& b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

bool CpuSetIsSubset(const CpuSet& inner, const CpuSet& outer) {
  return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

bool CpuSetContains(const CpuSet& cpus, uint32_t cpu) {
  return std::binary_search(cpus.begin(), cpus.end(), cpu);
}

}  // namespace gpuscope
