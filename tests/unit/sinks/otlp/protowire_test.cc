#include "src/sinks/otlp/protowire.h"

#include <gtest/gtest.h>

#include <string>

#include "src/core/utf8.h"
#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarint;
using protowire::AppendVarintField;
using testing::ParseProtoFields;

TEST(WireProtowire, VarintEncodingMatchesProtobufSpecExamples) {
  std::string out;
  AppendVarint(out, 1);
  EXPECT_EQ(out, std::string("\x01", 1));
  out.clear();
  AppendVarint(out, 150);  // the protobuf documentation's example: 96 01
  EXPECT_EQ(out, std::string("\x96\x01", 2));
  out.clear();
  AppendVarint(out, ~uint64_t{0});
  EXPECT_EQ(out.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(out.back()), 0x01);
}

TEST(WireProtowire, FieldsRoundTripThroughTestReaderWithNumbersTypesAndValues) {
  std::string out;
  AppendVarintField(out, 2, 300);
  AppendFixed64Field(out, 11, 0x0102030405060708ull);
  AppendBytesField(out, 1000, std::string("a\0b", 3));
  auto fields = ParseProtoFields(out);
  ASSERT_TRUE(fields.has_value());
  ASSERT_EQ(fields->size(), 3u);
  EXPECT_EQ((*fields)[0].number, 2u);
  EXPECT_EQ((*fields)[0].wire_type, 0);
  EXPECT_EQ((*fields)[0].scalar, 300u);
  EXPECT_EQ((*fields)[1].number, 11u);
  EXPECT_EQ((*fields)[1].wire_type, 1);
  EXPECT_EQ((*fields)[1].scalar, 0x0102030405060708ull);
  EXPECT_EQ(static_cast<unsigned char>(out[3]), 0x59);  // key of field 11, wire type 1
  EXPECT_EQ((*fields)[2].number, 1000u);
  EXPECT_EQ((*fields)[2].wire_type, 2);
  EXPECT_EQ((*fields)[2].bytes, std::string_view("a\0b", 3));
}

TEST(WireProtowire, TestReaderRejectsTruncatedAndOverlongInput) {
  EXPECT_FALSE(ParseProtoFields(std::string("\x08", 1)).has_value());  // varint missing
  EXPECT_FALSE(ParseProtoFields(std::string("\x0a\x05"
                                            "ab",
                                            4))
                   .has_value());                                              // length past end
  EXPECT_FALSE(ParseProtoFields(std::string("\x09\x01\x02", 3)).has_value());  // short fixed64
  EXPECT_FALSE(ParseProtoFields(std::string("\x0b", 1)).has_value());          // group wire type
  EXPECT_FALSE(ParseProtoFields(std::string("\x00\x00", 2)).has_value());      // field number 0
  EXPECT_TRUE(ParseProtoFields("").has_value());
}

TEST(WireProtowire, SanitizeUtf8ReplacesEachInvalidByteAndKeepsValidTextAndNul) {
  EXPECT_EQ(ToValidUtf8(std::string("ok\0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 12)),
            std::string("ok\0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 12));
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ToValidUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(ToValidUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated at end
  EXPECT_EQ(ToValidUtf8("\xf4\x90\x80\x80").size(), 12u);                          // above U+10FFFF
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\x80\xbf\xfe\xc3")));
}

}  // namespace
}  // namespace gpuscope
