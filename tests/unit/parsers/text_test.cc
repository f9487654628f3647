#include "src/parsers/text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

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

TEST(TextSplit, KeepsEmptyPiecesAndTheWholeWithoutSeparator) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(text::Split("cuda,connect,files", ','), (V{"cuda", "connect", "files"}));
  EXPECT_EQ(text::Split("a,,b,", ','), (V{"a", "", "b", ""}));
  EXPECT_EQ(text::Split("", ','), (V{""}));
  EXPECT_EQ(text::Split("whole", ','), (V{"whole"}));
}

TEST(TextTrim, ReturnsAViewIntoTheInput) {
  const std::string input = "  abc  ";
  const std::string_view trimmed = text::Trim(input);
  EXPECT_EQ(trimmed.data(), input.data() + 2);
}

}  // namespace
}  // namespace gpuscope
