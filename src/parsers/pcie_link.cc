#include "src/parsers/pcie_link.h"

#include <charconv>
#include <cmath>

#include "src/parsers/text.h"

namespace gpuscope {

std::optional<double> ParsePcieLinkSpeed(std::string_view text) {
  text = text::Trim(text);
  if (text.ends_with(" PCIe")) text.remove_suffix(5);
  if (!text.ends_with(" GT/s")) return std::nullopt;
  text.remove_suffix(5);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(value > 0 && value < 1e6))
    return std::nullopt;
  return value;
}

std::optional<int> PcieGenerationOfSpeed(double gigatransfers_per_second) {
  static constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(gigatransfers_per_second - kRates[i]) < 0.01) return i + 1;
  }
  return std::nullopt;
}

std::optional<uint32_t> ParsePcieLinkWidth(std::string_view text) {
  text = text::Trim(text);
  uint32_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value > 32)
    return std::nullopt;
  return value;
}

}  // namespace gpuscope
