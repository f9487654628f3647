#include "src/parsers/text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace gpuscope {
namespace {

using namespace std::string_literals;

TEST(TextTrim, EmptyStaysEmpty) { EXPECT_EQ(text::Trim(""), ""); }

TEST(TextTrim, AllSpaceBecomesEmpty) { EXPECT_EQ(text::Trim(" \t\r\n \n"), ""); }

TEST(TextTrim, StripsSpaceTabCrAndLfAtBothEnds) {
  EXPECT_EQ(text::Trim(" \tvalue\r\n"), "value");
  EXPECT_EQ(text::Trim("8.0 GT/s PCIe\n"), "8.0 GT/s PCIe");
}

TEST(TextTrim, KeepsInnerWhitespace) { EXPECT_EQ(text::Trim("  a \t b  "), "a \t b"); }

TEST(TextTrim, KeepsOtherControlAndHighBytes) {
  // Only the four ASCII blanks are space: NUL, vertical tab, form feed and UTF-8 bytes are content.
  EXPECT_EQ(text::Trim(" \0x\0 "s), "\0x\0"s);
  EXPECT_EQ(text::Trim("\v\fx"), "\v\fx");
  EXPECT_EQ(text::Trim("\xC2\xA0x\xFF "), "\xC2\xA0x\xFF");
}

TEST(TextTrim, ReturnsAViewIntoTheInput) {
  const std::string input = "  abc  ";
  const std::string_view trimmed = text::Trim(input);
  EXPECT_EQ(trimmed.data(), input.data() + 2);
}

}  // namespace
}  // namespace gpuscope
