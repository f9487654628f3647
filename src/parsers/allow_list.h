// Destinations a job's processes may connect to (--ebpf.allow), and the test of one destination against
// them. A rule is one of:
//   "10.0.0.0/8"          any port of an IPv4 network (a bare address is a /32)
//   "10.0.0.0/8:29500"    one port of it; "10.0.0.0/8:29500-29600" a range of ports
//   "fd00::/8", "[fd00::/8]:443"   the same for IPv6 (brackets when a port follows; a bare address is /128)
//   "*:53"                that port (or range) at any address, IPv4 or IPv6
// An IPv4-mapped IPv6 destination (::ffff:a.b.c.d) is judged as the IPv4 address it maps.
//
// Thread-safety: pure functions and a value type.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

struct AllowRule {
  bool any_address = false;  // "*"
  bool ipv6 = false;
  std::array<uint8_t, 16> network{};  // network order; IPv4 in the first 4 bytes
  uint32_t prefix_bits = 0;
  uint16_t port_low = 0;  // 0..65535 when no port was given
  uint16_t port_high = 65535;
};

// The rule `text` names, or nullopt with `*error` saying why (when error is not null).
std::optional<AllowRule> ParseAllowRule(std::string_view text, std::string* error = nullptr);

// What is wrong with `text` as a rule, empty when it is one (the option table's check).
std::string AllowRuleError(std::string_view text);

// A destination: `address` in network order (IPv4 in the first 4 bytes when !ipv6), `port` in host order.
struct Destination {
  bool ipv6 = false;
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;
};

// Whether any rule admits `destination`.
bool Allowed(const std::vector<AllowRule>& rules, const Destination& destination);

// "10.1.2.3:443", "[fd00::1]:443".
std::string DestinationText(const Destination& destination);

}  // namespace gpuscope
