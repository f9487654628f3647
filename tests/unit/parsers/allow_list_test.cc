// The connection allow-list (--ebpf.allow): every rule form, the errors it gives, and destinations judged
// against rules, IPv4, IPv6 and IPv4-mapped IPv6.
#include "src/parsers/allow_list.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace gpuscope {
namespace {

Destination V4(const char* address, uint16_t port) {
  Destination d;
  inet_pton(AF_INET, address, d.address.data());
  d.port = port;
  return d;
}

Destination V6(const char* address, uint16_t port) {
  Destination d;
  d.ipv6 = true;
  inet_pton(AF_INET6, address, d.address.data());
  d.port = port;
  return d;
}

std::vector<AllowRule> Rules(std::initializer_list<const char*> texts) {
  std::vector<AllowRule> out;
  for (const char* text : texts) {
    std::optional<AllowRule> rule = ParseAllowRule(text);
    EXPECT_TRUE(rule) << text;
    if (rule) out.push_back(*rule);
  }
  return out;
}

TEST(AllowListTest, NetworkWithoutPortAdmitsEveryPortInsideIt) {
  const auto rules = Rules({"10.0.0.0/8"});
  EXPECT_TRUE(Allowed(rules, V4("10.20.30.40", 443)));
  EXPECT_TRUE(Allowed(rules, V4("10.255.255.255", 1)));
  EXPECT_FALSE(Allowed(rules, V4("11.0.0.1", 443)));
}

TEST(AllowListTest, BareAddressIsOneHost) {
  const auto rules = Rules({"192.0.2.7", "2001:db8::1"});
  EXPECT_TRUE(Allowed(rules, V4("192.0.2.7", 80)));
  EXPECT_FALSE(Allowed(rules, V4("192.0.2.8", 80)));
  EXPECT_TRUE(Allowed(rules, V6("2001:db8::1", 80)));
  EXPECT_FALSE(Allowed(rules, V6("2001:db8::2", 80)));
}

TEST(AllowListTest, PortAndPortRangeLimitTheRule) {
  const auto rules = Rules({"10.0.0.0/8:29500", "172.16.0.0/12:8000-8100"});
  EXPECT_TRUE(Allowed(rules, V4("10.1.1.1", 29500)));
  EXPECT_FALSE(Allowed(rules, V4("10.1.1.1", 29501)));
  EXPECT_TRUE(Allowed(rules, V4("172.20.0.1", 8000)));
  EXPECT_TRUE(Allowed(rules, V4("172.20.0.1", 8100)));
  EXPECT_FALSE(Allowed(rules, V4("172.20.0.1", 8101)));
}

TEST(AllowListTest, PrefixNotOnAByteBoundary) {
  const auto rules = Rules({"172.16.0.0/12"});
  EXPECT_TRUE(Allowed(rules, V4("172.31.255.1", 1)));
  EXPECT_FALSE(Allowed(rules, V4("172.32.0.1", 1)));
}

TEST(AllowListTest, Ipv6InBracketsWithPort) {
  const auto rules = Rules({"[fd00::/8]:443", "fe80::/10"});
  EXPECT_TRUE(Allowed(rules, V6("fd12::1", 443)));
  EXPECT_FALSE(Allowed(rules, V6("fd12::1", 80)));
  EXPECT_TRUE(Allowed(rules, V6("fe80::1", 22)));
  EXPECT_FALSE(Allowed(rules, V6("2001:db8::1", 443)));
  // An IPv6 rule never admits an IPv4 destination, and the reverse.
  EXPECT_FALSE(Allowed(rules, V4("10.0.0.1", 443)));
}

TEST(AllowListTest, AnyAddressWithPortAdmitsBothFamilies) {
  const auto rules = Rules({"*:53"});
  EXPECT_TRUE(Allowed(rules, V4("8.8.8.8", 53)));
  EXPECT_TRUE(Allowed(rules, V6("2001:db8::53", 53)));
  EXPECT_FALSE(Allowed(rules, V4("8.8.8.8", 54)));
}

TEST(AllowListTest, Ipv4MappedIpv6IsJudgedAsIpv4) {
  const auto rules = Rules({"127.0.0.0/8"});
  EXPECT_TRUE(Allowed(rules, V6("::ffff:127.0.0.1", 5000)));
  EXPECT_FALSE(Allowed(rules, V6("::ffff:10.0.0.1", 5000)));
}

TEST(AllowListTest, NoRulesAdmitNothing) { EXPECT_FALSE(Allowed({}, V4("127.0.0.1", 1))); }

TEST(AllowListTest, MalformedRulesSayWhy) {
  for (const char* bad :
       {"", "10.0.0.0/33", "fd00::/129", "10.0.0.0/8:70000", "10.0.0.0/8:90-80", "not-an-address",
        "[fd00::/8]", "[fd00::/8]443", "*", "*:", "10.0.0.0/8:x", "10.0.0.0/-1", "1.2.3.4/8/8"}) {
    std::string error;
    EXPECT_FALSE(ParseAllowRule(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_FALSE(AllowRuleError(bad).empty()) << bad;
  }
  EXPECT_TRUE(AllowRuleError("10.0.0.0/8:443").empty());
}

TEST(AllowListTest, Ipv6WithoutBracketsHasNoPort) {
  // "::1:80" is the address ::0.1.0.128, not ::1 port 80: a port after IPv6 needs the brackets.
  const auto rules = Rules({"::1:80"});
  EXPECT_TRUE(Allowed(rules, V6("::1:80", 22)));
  EXPECT_FALSE(Allowed(rules, V6("::1", 80)));
}

TEST(AllowListTest, DestinationText) {
  EXPECT_EQ(DestinationText(V4("203.0.113.9", 443)), "203.0.113.9:443");
  EXPECT_EQ(DestinationText(V6("2001:db8::9", 443)), "[2001:db8::9]:443");
}

}  // namespace
}  // namespace gpuscope
