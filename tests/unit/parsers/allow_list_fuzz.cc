// libFuzzer entry point for the connection allow-list rules (src/parsers/allow_list.h): any text either
// parses into a rule that keeps its invariants, or is refused with a reason; a parsed rule judges any
// destination without reading outside its arrays.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/parsers/allow_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const std::optional<gpuscope::AllowRule> rule = gpuscope::ParseAllowRule(text, &error);
  if (!rule) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  if (rule->prefix_bits > (rule->ipv6 ? 128u : 32u) || rule->port_low > rule->port_high) __builtin_trap();
  gpuscope::Destination d;
  d.ipv6 = size > 0 && (data[0] & 1) != 0;
  std::memcpy(d.address.data(), data, std::min<size_t>(size, d.address.size()));
  d.port = size >= 2 ? static_cast<uint16_t>(data[0] << 8 | data[1]) : 0;
  (void)gpuscope::Allowed({*rule}, d);
  (void)gpuscope::DestinationText(d);
  return 0;
}
