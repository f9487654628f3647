#include "src/parsers/pci.h"

#include <charconv>
#include <cstdio>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using text::IsDigit;
using text::IsHexDigit;
using text::ParseWhole;
using text::Trim;

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
