#include "src/parsers/allow_list.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// "443" or "29500-29600" into the rule's range.
bool ParsePorts(std::string_view text, AllowRule* rule, std::string* error) {
  const size_t dash = text.find('-');
  const std::optional<uint32_t> low = text::ParseWhole<uint32_t>(text.substr(0, dash));
  const std::optional<uint32_t> high =
      dash == std::string_view::npos ? low : text::ParseWhole<uint32_t>(text.substr(dash + 1));
  if (!low || !high || *low > 65535 || *high > 65535 || *low > *high)
    return Fail(error, "port must be 0-65535 or a range low-high");
  rule->port_low = static_cast<uint16_t>(*low);
  rule->port_high = static_cast<uint16_t>(*high);
  return true;
}

// "10.0.0.0/8", "fd00::/8" or a bare address into the rule's network.
bool ParseNetwork(std::string_view text, AllowRule* rule, std::string* error) {
  const size_t slash = text.find('/');
  const std::string address(text.substr(0, slash));
  if (inet_pton(AF_INET, address.c_str(), rule->network.data()) == 1) {
    rule->ipv6 = false;
  } else if (inet_pton(AF_INET6, address.c_str(), rule->network.data()) == 1) {
    rule->ipv6 = true;
  } else {
    return Fail(error, "'" + address + "' is not an IPv4 or IPv6 address");
  }
  const uint32_t max_bits = rule->ipv6 ? 128 : 32;
  rule->prefix_bits = max_bits;
  if (slash != std::string_view::npos) {
    const std::optional<uint32_t> bits = text::ParseWhole<uint32_t>(text.substr(slash + 1));
    if (!bits || *bits > max_bits) return Fail(error, "prefix length must be 0-" + std::to_string(max_bits));
    rule->prefix_bits = *bits;
  }
  return true;
}

bool PrefixMatches(const std::array<uint8_t, 16>& network, const std::array<uint8_t, 16>& address,
                   uint32_t bits) {
  const uint32_t whole = bits / 8;
  if (std::memcmp(network.data(), address.data(), whole) != 0) return false;
  const uint32_t rest = bits % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (network[whole] & mask) == (address[whole] & mask);
}

}  // namespace

std::optional<AllowRule> ParseAllowRule(std::string_view text, std::string* error) {
  AllowRule rule;
  if (text.empty()) {
    Fail(error, "empty rule");
    return std::nullopt;
  }
  std::string_view network;
  std::string_view ports;
  if (text.starts_with('[')) {  // [v6]:port
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      Fail(error, "must be [address/prefix]:port");
      return std::nullopt;
    }
    network = text.substr(1, close - 1);
    ports = text.substr(close + 2);
  } else if (text.starts_with("*:")) {
    rule.any_address = true;
    ports = text.substr(2);
  } else if (std::count(text.begin(), text.end(), ':') == 1) {  // v4[:port]
    const size_t colon = text.find(':');
    network = text.substr(0, colon);
    ports = text.substr(colon + 1);
  } else {  // v4 or bare v6, no port
    network = text;
  }
  if (!rule.any_address && !ParseNetwork(network, &rule, error)) return std::nullopt;
  if (!ports.empty() && !ParsePorts(ports, &rule, error)) return std::nullopt;
  if (rule.any_address && ports.empty()) {
    Fail(error, "'*' needs a port: *:PORT");
    return std::nullopt;
  }
  return rule;
}

std::string AllowRuleError(std::string_view text) {
  std::string error;
  if (ParseAllowRule(text, &error)) return "";
  return "must be CIDR, CIDR:PORT, [CIDR6]:PORT or *:PORT (" + error + ")";
}

bool Allowed(const std::vector<AllowRule>& rules, const Destination& destination) {
  Destination d = destination;
  // ::ffff:a.b.c.d is the IPv4 address a.b.c.d.
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (d.ipv6 && std::memcmp(d.address.data(), kMapped, sizeof(kMapped)) == 0) {
    d.ipv6 = false;
    std::memmove(d.address.data(), d.address.data() + 12, 4);
    std::memset(d.address.data() + 4, 0, 12);
  }
  for (const AllowRule& rule : rules) {
    if (d.port < rule.port_low || d.port > rule.port_high) continue;
    if (rule.any_address) return true;
    if (rule.ipv6 != d.ipv6) continue;
    if (PrefixMatches(rule.network, d.address, rule.prefix_bits)) return true;
  }
  return false;
}

std::string DestinationText(const Destination& destination) {
  char buffer[INET6_ADDRSTRLEN] = {};
  inet_ntop(destination.ipv6 ? AF_INET6 : AF_INET, destination.address.data(), buffer, sizeof(buffer));
  const std::string port = std::to_string(destination.port);
  return destination.ipv6 ? "[" + std::string(buffer) + "]:" + port : std::string(buffer) + ":" + port;
}

}  // namespace gpuscope
