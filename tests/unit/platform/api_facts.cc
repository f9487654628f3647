#include "tests/unit/platform/api_facts.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

namespace gpuscope {
namespace {

// A value as a number, with its signed reading where it has one (a negative enumerator or constant).
std::string Readable(unsigned long long value) {
  std::string text = std::to_string(value);
  if (static_cast<long long>(value) < 0) text += " (" + std::to_string(static_cast<long long>(value)) + ")";
  return text;
}

}  // namespace

void ExpectSameApiFacts(const std::vector<ApiFact>& ours, const std::vector<ApiFact>& nvidias,
                        const char* nvidia_header) {
  ASSERT_EQ(ours.size(), nvidias.size()) << "both lists are generated from the same declarations";
  std::map<std::string, int> checked;
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_STREQ(ours[i].name, nvidias[i].name);
    EXPECT_EQ(ours[i].value, nvidias[i].value)
        << ours[i].category << " " << ours[i].name << ": ours " << Readable(ours[i].value) << ", NVIDIA's "
        << Readable(nvidias[i].value) << " (" << nvidia_header << ")";
    ++checked[ours[i].category];
  }
  for (const char* category : {"function", "struct", "field", "typedef", "enum", "enumerator", "constant"}) {
    EXPECT_GT(checked[category], 0) << category;
  }
  std::string summary;
  for (const auto& [category, count] : checked) summary += " " + category + "=" + std::to_string(count);
  ::testing::Test::RecordProperty("checked", summary);
  std::printf("checked against NVIDIA's %s:%s\n", nvidia_header, summary.c_str());
}

}  // namespace gpuscope
