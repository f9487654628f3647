// Tests of the shared YAML helpers (src/core/yaml_config.h) that the agent's config and the web config
// parse with: errors name the key path and line, nulls read as empty, nothing throws.
#include "src/core/yaml_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

// Runs `read` on the value of key "k" of the one-entry document `yaml`.
template <typename Fn>
Status ReadK(const std::string& yaml, Fn read) {
  return WalkYamlDocument(yaml, "test", [&](const YAML::Node& root) { return read(root["k"]); });
}

TEST(YamlConfig, SyntaxErrorsNameTheDocumentAndThePosition) {
  bool walked = false;
  Status status = WalkYamlDocument("a: {unclosed\n", "my config", [&](const YAML::Node&) {
    walked = true;
    return Status::Ok();
  });
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("my config is not valid YAML"));
  EXPECT_THAT(status.message(), HasSubstr("line"));
  EXPECT_FALSE(walked);
}

TEST(YamlConfig, AnEmptyDocumentIsANullRootAndAnEmptyMapping) {
  int entries = 0;
  Status status = WalkYamlDocument("", "doc", [&](const YAML::Node& root) {
    EXPECT_TRUE(root.IsNull());
    return ForEachYamlEntry(root, "doc", [&](const std::string&, const YAML::Node&) {
      ++entries;
      return Status::Ok();
    });
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(entries, 0);
}

TEST(YamlConfig, EntriesAreVisitedInOrderAndTheFirstErrorStopsTheWalk) {
  std::vector<std::string> keys;
  Status status = WalkYamlDocument("a: 1\nb: 2\nc: 3\n", "doc", [&](const YAML::Node& root) {
    return ForEachYamlEntry(root, "doc", [&](const std::string& key, const YAML::Node& value) {
      keys.push_back(key);
      return key == "b" ? UnknownYamlKey("doc", key, value) : Status::Ok();
    });
  });
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(status.message(), "doc: unknown key \"b\" (line 2)");
}

TEST(YamlConfig, MappingsRejectDuplicateKeysNonStringKeysAndOtherKinds) {
  auto walk = [](const std::string& yaml) {
    return WalkYamlDocument(yaml, "doc", [](const YAML::Node& root) {
      return ForEachYamlEntry(root["m"], "m",
                              [](const std::string&, const YAML::Node&) { return Status::Ok(); });
    });
  };
  EXPECT_THAT(walk("m:\n  a: 1\n  a: 2\n").message(), HasSubstr("m: duplicate key \"a\" (line 3)"));
  EXPECT_THAT(walk("m: {[1, 2]: x}\n").message(), HasSubstr("m: keys must be strings"));
  EXPECT_THAT(walk("m: [1, 2]\n").message(), HasSubstr("m: expected a mapping (line 1)"));
  EXPECT_THAT(walk("m: text\n").message(), HasSubstr("m: expected a mapping"));
  EXPECT_TRUE(walk("m:\n").ok()) << "a null section is an empty one";
}

TEST(YamlConfig, StringsReadScalarsAndNullAsEmpty) {
  std::string out = "before";
  ASSERT_TRUE(
      ReadK("k: hello world\n", [&](const YAML::Node& n) { return ReadYamlString(n, "s.k", &out); }).ok());
  EXPECT_EQ(out, "hello world");
  ASSERT_TRUE(ReadK("k:\n", [&](const YAML::Node& n) { return ReadYamlString(n, "s.k", &out); }).ok());
  EXPECT_EQ(out, "");
  out = "kept";
  Status status = ReadK("k: [a]\n", [&](const YAML::Node& n) { return ReadYamlString(n, "s.k", &out); });
  EXPECT_EQ(status.message(), "s.k: expected a string (line 1)");
  EXPECT_EQ(out, "kept") << "a failed read leaves the target unchanged";
}

TEST(YamlConfig, BooleansAcceptYamlSpellingsAndRejectTheRest) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, bool>>{
           {"true", true}, {"false", false}, {"yes", true}, {"off", false}, {"True", true}}) {
    bool out = !want;
    Status status =
        ReadK("k: " + text + "\n", [&](const YAML::Node& n) { return ReadYamlBool(n, "b", &out); });
    ASSERT_TRUE(status.ok()) << text << ": " << status.ToString();
    EXPECT_EQ(out, want) << text;
  }
  bool out = true;
  for (std::string bad : {"k: maybe\n", "k:\n", "k: {a: 1}\n"}) {
    Status status = ReadK(bad, [&](const YAML::Node& n) { return ReadYamlBool(n, "x.b", &out); });
    EXPECT_THAT(status.message(), HasSubstr("x.b: expected true or false")) << bad;
    EXPECT_TRUE(out);
  }
}

TEST(YamlConfig, IntegersAndDurations) {
  int number = 0;
  ASSERT_TRUE(ReadK("k: 42\n", [&](const YAML::Node& n) { return ReadYamlInt(n, "i", &number); }).ok());
  EXPECT_EQ(number, 42);
  EXPECT_THAT(
      ReadK("k: many\n", [&](const YAML::Node& n) { return ReadYamlInt(n, "x.i", &number); }).message(),
      HasSubstr("x.i: expected an integer"));
  EXPECT_EQ(number, 42);

  std::chrono::milliseconds duration{0};
  ASSERT_TRUE(
      ReadK("k: 1m30s\n", [&](const YAML::Node& n) { return ReadYamlDuration(n, "d", &duration); }).ok());
  EXPECT_EQ(duration, std::chrono::seconds(90));
  Status status =
      ReadK("k: fast\n", [&](const YAML::Node& n) { return ReadYamlDuration(n, "x.d", &duration); });
  EXPECT_EQ(status.message(), "x.d: 'fast' is not a duration (e.g. 500ms, 1s, 1m30s) (line 1)");
  EXPECT_THAT(ReadK("k: [1s]\n", [&](const YAML::Node& n) { return ReadYamlDuration(n, "x.d", &duration); })
                  .message(),
              HasSubstr("x.d: expected a duration"));
  EXPECT_EQ(duration, std::chrono::seconds(90));
}

TEST(YamlConfig, StringListsTakeAListOrOneString) {
  std::vector<std::string> out = {"old"};
  ASSERT_TRUE(
      ReadK("k: [a, \"b c\"]\n", [&](const YAML::Node& n) { return ReadYamlStringList(n, "l", &out); }).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b c"}));
  ASSERT_TRUE(ReadK("k: one\n", [&](const YAML::Node& n) { return ReadYamlStringList(n, "l", &out); }).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"one"}));
  ASSERT_TRUE(ReadK("k:\n", [&](const YAML::Node& n) { return ReadYamlStringList(n, "l", &out); }).ok());
  EXPECT_TRUE(out.empty());
  out = {"kept"};
  EXPECT_THAT(ReadK("k: [a, [b]]\n", [&](const YAML::Node& n) { return ReadYamlStringList(n, "x.l", &out); })
                  .message(),
              HasSubstr("x.l: expected a list of strings"));
  EXPECT_THAT(
      ReadK("k: {a: b}\n", [&](const YAML::Node& n) { return ReadYamlStringList(n, "x.l", &out); }).message(),
      HasSubstr("x.l: expected a list of strings"));
  EXPECT_EQ(out, (std::vector<std::string>{"kept"}));
}

}  // namespace
}  // namespace gpuscope
