#include "src/parsers/ib_sysfs.h"

#include <charconv>
#include <cstdio>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using text::IsDigit;
using text::ParseWhole;
using text::Trim;

}  // namespace

IbCounterValue ParseIbCounter(std::string_view content) {
  std::string_view s = Trim(content);
  // Drivers without a Performance Management Agent print "N/A (no PMA)" in every counters/ file
  // (drivers/infiniband/core/sysfs.c, show_pma_counter): the counter does not exist, it is not zero.
  if (s.starts_with("N/A")) return {IbCounterValue::Kind::kNotAvailable, 0};
  for (char c : s) {
    if (!IsDigit(c)) return {IbCounterValue::Kind::kMalformed, 0};
  }
  std::optional<uint64_t> value = ParseWhole<uint64_t>(s);
  if (!value) return {IbCounterValue::Kind::kMalformed, 0};
  return {IbCounterValue::Kind::kValue, *value};
}

std::optional<IbEnumValue> ParseIbEnum(std::string_view content) {
  std::string_view s = Trim(content);
  size_t digits = 0;
  while (digits < s.size() && IsDigit(s[digits])) ++digits;
  if (digits == 0 || digits > 3) return std::nullopt;
  std::optional<int> code = ParseWhole<int>(s.substr(0, digits));
  if (!code || *code > 255) return std::nullopt;
  std::string_view rest = s.substr(digits);
  IbEnumValue out{*code, "unknown"};
  if (rest.empty()) return out;
  if (rest.front() != ':') return std::nullopt;
  std::string_view name = Trim(rest.substr(1));
  if (name.empty()) return out;
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
  }
  out.name = std::string(name);
  return out;
}

std::optional<IbRate> ParseIbRate(std::string_view content) {
  std::string_view s = Trim(content);
  // Integer part, then an optional ".5" (the kernel prints rate / 10 and ".5" for odd half-steps; accept
  // any single-digit fraction).
  size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == 0 || i > 6) return std::nullopt;
  double gbit = static_cast<double>(*ParseWhole<uint32_t>(s.substr(0, i)));
  if (i < s.size() && s[i] == '.') {
    if (i + 1 >= s.size() || !IsDigit(s[i + 1])) return std::nullopt;
    gbit += (s[i + 1] - '0') / 10.0;
    i += 2;
  }
  std::string_view rest = s.substr(i);
  constexpr std::string_view kUnit = " Gb/sec";
  if (!rest.starts_with(kUnit)) return std::nullopt;
  rest = Trim(rest.substr(kUnit.size()));
  IbRate rate;
  rate.gbit_per_second = gbit;
  if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') return rate;
  std::string_view inner = rest.substr(1, rest.size() - 2);
  size_t w = 0;
  while (w < inner.size() && IsDigit(inner[w])) ++w;
  if (w == 0 || w > 2 || w >= inner.size() || inner[w] != 'X') return rate;
  int width = *ParseWhole<int>(inner.substr(0, w));
  std::string_view speed = Trim(inner.substr(w + 1));
  for (char c : speed) {
    if (!IsDigit(c) && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z')) return rate;
  }
  rate.width_lanes = width;
  rate.speed = std::string(speed);
  return rate;
}

std::string SanitizeIbCounterName(std::string_view name) {
  if (name.empty()) return "_";
  std::string out(name.substr(0, 128));
  for (char& c : out) {
    bool ok = IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!ok) c = '_';
  }
  return out;
}

}  // namespace gpuscope
