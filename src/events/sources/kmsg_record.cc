#include "src/events/sources/kmsg_record.h"

#include <charconv>
#include <limits>

namespace gpuscope {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

std::optional<std::string_view> KmsgRecord::Find(std::string_view key) const {
  for (const auto& [k, v] : dictionary) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

std::optional<KmsgRecord> ParseKmsgRecord(std::string_view text) {
  size_t semi = text.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view header = text.substr(0, semi);
  if (header.find('\n') != std::string_view::npos) return std::nullopt;
  std::string_view fields[4];
  size_t n = 0;
  while (n < 4) {
    size_t comma = header.find(',');
    fields[n++] = header.substr(0, comma);
    if (comma == std::string_view::npos) {
      header = {};
      break;
    }
    header.remove_prefix(comma + 1);
  }
  if (n < 3) return std::nullopt;
  KmsgRecord record;
  uint64_t prefix = 0;
  if (!ParseU64(fields[0], &prefix) || prefix > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return std::nullopt;
  }
  record.priority = static_cast<int>(prefix & 7);
  record.facility = static_cast<int>(prefix >> 3);
  if (!ParseU64(fields[1], &record.sequence) || !ParseU64(fields[2], &record.timestamp_usec)) {
    return std::nullopt;
  }
  if (n >= 4 && !fields[3].empty()) record.flags = fields[3][0];

  std::string_view rest = text.substr(semi + 1);
  size_t nl = rest.find('\n');
  record.message = std::string(rest.substr(0, nl));
  if (nl == std::string_view::npos) return record;
  rest.remove_prefix(nl + 1);
  while (!rest.empty()) {
    nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty() || line[0] != ' ') continue;
    line.remove_prefix(1);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    record.dictionary.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return record;
}

size_t KmsgRecordLength(std::string_view buffer, bool at_end) {
  size_t pos = 0;
  while (true) {
    size_t nl = buffer.find('\n', pos);
    if (nl == std::string_view::npos) return 0;
    if (nl + 1 < buffer.size()) {
      if (buffer[nl + 1] != ' ') return nl + 1;
      pos = nl + 1;
      continue;
    }
    return at_end ? nl + 1 : 0;
  }
}

}  // namespace gpuscope
