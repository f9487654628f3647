#include "src/parsers/psi.h"

#include <charconv>

namespace gpuscope {
namespace {

bool ParseDouble(std::string_view text, double& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseU64(std::string_view text, uint64_t& value) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "avg10=0.12 avg60=0.05 avg300=0.01 total=123456" (the part after "some "/"full ").
std::optional<PressureLine> ParseFields(std::string_view rest) {
  PressureLine line;
  bool seen[4] = {false, false, false, false};
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    std::string_view field = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    if (field.empty()) continue;
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view key = field.substr(0, eq);
    std::string_view value = field.substr(eq + 1);
    double* avg = nullptr;
    int index = -1;
    if (key == "avg10") {
      avg = &line.avg10;
      index = 0;
    } else if (key == "avg60") {
      avg = &line.avg60;
      index = 1;
    } else if (key == "avg300") {
      avg = &line.avg300;
      index = 2;
    } else if (key == "total") {
      if (!ParseU64(value, line.total_us)) return std::nullopt;
      seen[3] = true;
      continue;
    } else {
      continue;  // a field a later kernel may add
    }
    // from_chars would also accept "nan" and "inf": the range check below rejects them.
    if (!ParseDouble(value, *avg) || !(*avg >= 0 && *avg <= 100)) return std::nullopt;
    seen[index] = true;
  }
  for (bool s : seen) {
    if (!s) return std::nullopt;
  }
  return line;
}

}  // namespace

std::optional<PressureFile> ParsePressureFile(std::string_view content) {
  PressureFile file;
  while (!content.empty()) {
    size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content = newline == std::string_view::npos ? std::string_view() : content.substr(newline + 1);
    std::optional<PressureLine>* target = nullptr;
    if (line.starts_with("some ")) {
      target = &file.some;
    } else if (line.starts_with("full ")) {
      target = &file.full;
    } else {
      continue;
    }
    auto parsed = ParseFields(line.substr(5));
    if (!parsed) return std::nullopt;
    *target = *parsed;
  }
  if (!file.some && !file.full) return std::nullopt;
  return file;
}

}  // namespace gpuscope
