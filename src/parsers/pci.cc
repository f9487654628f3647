#include "src/parsers/pci.h"

#include <charconv>
#include <cstdio>

namespace gpuscope {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses all of `s` as an unsigned decimal number of type T.
template <typename T>
std::optional<T> ParseWhole(std::string_view s, int base = 10) {
  if (s.empty()) return std::nullopt;
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::optional<uint32_t> ParseHexField(std::string_view s, size_t min_digits, size_t max_digits) {
  if (s.size() < min_digits || s.size() > max_digits) return std::nullopt;
  for (char c : s) {
    if (!IsHexDigit(c)) return std::nullopt;
  }
  return ParseWhole<uint32_t>(s, 16);
}

}  // namespace

std::string PciAddress::NvmlBusId() const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08X:%02X:%02X.%X", domain, bus, device, function);
  return buf;
}

std::string PciAddress::SysfsName() const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

std::optional<PciAddress> ParsePciAddress(std::string_view text) {
  size_t first = text.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  size_t second = text.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  size_t dot = text.find('.', second + 1);
  if (dot == std::string_view::npos) return std::nullopt;
  auto domain = ParseHexField(text.substr(0, first), 4, 8);
  auto bus = ParseHexField(text.substr(first + 1, second - first - 1), 2, 2);
  auto device = ParseHexField(text.substr(second + 1, dot - second - 1), 2, 2);
  auto function = ParseHexField(text.substr(dot + 1), 1, 1);
  if (!domain || !bus || !device || !function || *device > 31 || *function > 7) return std::nullopt;
  return PciAddress{*domain, *bus, *device, *function};
}

std::optional<uint32_t> ParseSysfsHex(std::string_view content) {
  std::string_view s = Trim(content);
  if (!s.starts_with("0x") && !s.starts_with("0X")) return std::nullopt;
  return ParseHexField(s.substr(2), 1, 8);
}

std::optional<int> ParseSysfsInt(std::string_view content) {
  std::string_view s = Trim(content);
  bool negative = s.starts_with('-');
  if (negative) s.remove_prefix(1);
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
  }
  std::optional<int> value = ParseWhole<int>(s);
  if (!value) return std::nullopt;
  return negative ? -*value : *value;
}

std::optional<std::string> CanonicalPciBusId(std::string_view text) {
  std::optional<PciAddress> address = ParsePciAddress(text);
  if (!address) return std::nullopt;
  return address->NvmlBusId();
}

}  // namespace gpuscope
