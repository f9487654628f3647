// The comparison shared by the NVML and DCGM declaration checks (api_facts.h), on small hand-written fact
// lists: it passes when they agree and fails, naming the fact, when one differs.
#include "tests/unit/platform/api_facts.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace gpuscope {
namespace {

std::vector<ApiFact> OneOfEachCategory(unsigned long long offset_of_b) {
  return {{"function", "fooInit", 1},
          {"struct", "sizeof(foo_t)", 16},
          {"field", "offsetof(foo_t, b)", offset_of_b},
          {"typedef", "sizeof(fooHandle_t)", 8},
          {"enum", "sizeof(fooReturn_t)", 4},
          {"enumerator", "FOO_OK", 0},
          {"constant", "FOO_MAX", 32}};
}

TEST(ApiFacts, AgreeingListsPass) { ExpectSameApiFacts(OneOfEachCategory(8), OneOfEachCategory(8), "foo.h"); }

TEST(ApiFacts, ADifferingFactFailsNamingItAndBothValues) {
  EXPECT_NONFATAL_FAILURE(ExpectSameApiFacts(OneOfEachCategory(4), OneOfEachCategory(8), "foo.h"),
                          "field offsetof(foo_t, b): ours 4, NVIDIA's 8 (foo.h)");
}

TEST(ApiFacts, ANegativeValueIsShownSignedToo) {
  std::vector<ApiFact> ours = OneOfEachCategory(8);
  std::vector<ApiFact> nvidias = OneOfEachCategory(8);
  ours[5].value = static_cast<unsigned long long>(-54);
  EXPECT_NONFATAL_FAILURE(ExpectSameApiFacts(ours, nvidias, "foo.h"),
                          "enumerator FOO_OK: ours 18446744073709551562 (-54), NVIDIA's 0 (foo.h)");
}

TEST(ApiFacts, AMissingCategoryFails) {
  std::vector<ApiFact> facts = OneOfEachCategory(8);
  facts.pop_back();
  EXPECT_NONFATAL_FAILURE(ExpectSameApiFacts(facts, facts, "foo.h"), "constant");
}

TEST(ApiFacts, TypeKindsTellSignednessWidthPointersAndArraysApart) {
  EXPECT_NE(ApiTypeKind<int>(), ApiTypeKind<unsigned int>());
  EXPECT_NE(ApiTypeKind<unsigned int>(), ApiTypeKind<unsigned long long>());
  EXPECT_NE(ApiTypeKind<char[16]>(), ApiTypeKind<char[32]>());
  EXPECT_NE(ApiTypeKind<char*>(), ApiTypeKind<char>());
  EXPECT_NE(ApiTypeKind<char*>(), ApiTypeKind<unsigned long long*>());
  EXPECT_NE(ApiTypeKind<double>(), ApiTypeKind<long long>());
  enum Small { kA };
  EXPECT_NE(ApiTypeKind<Small>(), ApiTypeKind<unsigned int>());
  EXPECT_EQ(ApiTypeKind<const unsigned int>(), ApiTypeKind<unsigned int>());
  union Value {
    long long i;
    double d;
  };
  struct Pair {
    int i;
    float f;
  };
  EXPECT_NE(ApiTypeKind<Value>(), ApiTypeKind<Pair>());
}

TEST(ApiFacts, ConstantsKeepFractionsAndSignedValues) {
  EXPECT_NE(ApiConstant(140737488355328.0), ApiConstant(140737488355328.5));
  EXPECT_NE(ApiConstant(140737488355328.0), ApiConstant(140737488355328));
  EXPECT_EQ(ApiConstant(-1), ApiConstant(-1L));
  EXPECT_EQ(ApiConstant('b'), 98u);
}

}  // namespace
}  // namespace gpuscope
