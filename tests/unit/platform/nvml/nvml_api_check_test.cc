// Our NVML declarations (src/platform/nvml/nvml_api.h) against NVIDIA's own nvml.h, taken from the
// github.com/NVIDIA/go-nvml module pinned in scripts/versions.env. nvml_api_facts.py lists every
// declaration of our header; the list is compiled twice, once against each header. Function types are
// checked while compiling against NVIDIA's header (static_assert: a mismatch does not build); struct
// sizes and field offsets, typedefs, enumerators and constants are compared here, fact by fact, so a
// mismatch names what differs. A declaration added to nvml_api.h later is checked the same way without
// touching this test.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "tests/unit/platform/nvml/nvml_api_facts.h"

namespace gpuscope {
namespace {

TEST(NvmlApiCheck, EveryDeclarationOfOurHeaderMatchesNvidiasNvmlH) {
  const std::vector<NvmlFact>& ours = OurNvmlFacts();
  const std::vector<NvmlFact>& nvidia = NvidiaNvmlFacts();
  ASSERT_EQ(ours.size(), nvidia.size()) << "both lists are generated from the same declarations";
  std::map<std::string, int> checked;
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_STREQ(ours[i].name, nvidia[i].name);
    EXPECT_EQ(ours[i].value, nvidia[i].value) << ours[i].category << " " << ours[i].name << ": ours "
                                              << ours[i].value << ", NVIDIA's " << nvidia[i].value;
    ++checked[ours[i].category];
  }
  // Every kind of declaration the header has is covered (a parser that missed a kind would show here).
  for (const char* category : {"function", "struct", "field", "typedef", "enum", "enumerator", "constant"}) {
    EXPECT_GT(checked[category], 0) << category;
  }
  std::string summary;
  for (const auto& [category, count] : checked) summary += " " + category + "=" + std::to_string(count);
  RecordProperty("checked", summary);
  std::printf("checked against NVIDIA's nvml.h:%s\n", summary.c_str());
}

TEST(NvmlApiCheck, TypeKindsTellSignednessWidthPointersAndArraysApart) {
  EXPECT_NE(NvmlTypeKind<int>(), NvmlTypeKind<unsigned int>());
  EXPECT_NE(NvmlTypeKind<unsigned int>(), NvmlTypeKind<unsigned long long>());
  EXPECT_NE(NvmlTypeKind<char[16]>(), NvmlTypeKind<char[32]>());
  EXPECT_NE(NvmlTypeKind<char*>(), NvmlTypeKind<char>());
  EXPECT_NE(NvmlTypeKind<char*>(), NvmlTypeKind<unsigned long long*>());
  EXPECT_NE(NvmlTypeKind<double>(), NvmlTypeKind<long long>());
  enum Small { kA };
  EXPECT_NE(NvmlTypeKind<Small>(), NvmlTypeKind<unsigned int>());
  EXPECT_EQ(NvmlTypeKind<const unsigned int>(), NvmlTypeKind<unsigned int>());
}

}  // namespace
}  // namespace gpuscope
