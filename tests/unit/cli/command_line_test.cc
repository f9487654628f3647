#include "src/cli/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;

const std::vector<FlagSpec> kSpecs = {{"format", "text or json", "text"},
                                      {"prometheus.url", "server", "http://x:1"},
                                      {"verbose", "more", "", false}};

TEST(CommandLine, FlagsTakeEqualsOrNextArgumentAndDefaultsFillTheRest) {
  CommandLine line;
  ASSERT_TRUE(ParseCommandLine({"4104", "--format=json", "--verbose"}, kSpecs, &line).ok());
  EXPECT_THAT(line.positional, ElementsAre("4104"));
  EXPECT_EQ(line.flags["format"], "json");
  EXPECT_EQ(line.flags["verbose"], "true");
  EXPECT_EQ(line.flags["prometheus.url"], "http://x:1");
  ASSERT_TRUE(ParseCommandLine({"--prometheus.url", "http://p:9090", "7"}, kSpecs, &line).ok());
  EXPECT_EQ(line.flags["prometheus.url"], "http://p:9090");
  EXPECT_EQ(line.flags["verbose"], "");
  EXPECT_THAT(line.positional, ElementsAre("7"));
}

TEST(CommandLine, DoubleDashEndsFlagsAndHelpIsNoted) {
  CommandLine line;
  ASSERT_TRUE(ParseCommandLine({"--help", "--", "--format"}, kSpecs, &line).ok());
  EXPECT_TRUE(line.help);
  EXPECT_THAT(line.positional, ElementsAre("--format"));
}

TEST(CommandLine, UnknownFlagsAndMissingValuesNameTheFlag) {
  CommandLine line;
  EXPECT_EQ(ParseCommandLine({"--colour=red"}, kSpecs, &line).message(),
            "unknown flag --colour (see --help)");
  EXPECT_EQ(ParseCommandLine({"--format"}, kSpecs, &line).message(), "flag --format needs a value");
  EXPECT_EQ(ParseCommandLine({"--verbose=1"}, kSpecs, &line).message(), "flag --verbose takes no value");
  EXPECT_EQ(ParseCommandLine({"-x"}, kSpecs, &line).message(), "unknown flag -x (flags start with --)");
}

TEST(CommandLine, HelpListsEveryFlagWithItsDefault) {
  EXPECT_EQ(FlagsHelp(kSpecs),
            "  --format=VALUE          text or json (default text)\n"
            "  --prometheus.url=VALUE  server (default http://x:1)\n"
            "  --verbose               more\n");
}

}  // namespace
}  // namespace gpuscope
