// The fleet description file: its example parses, every error names the key (and line), nodes are dealt
// to scenarios in proportion and spread over the fleet.
#include "sim/fleet/fleet_description.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpuscope::fleet {
namespace {

using ::testing::HasSubstr;

Status Parse(const std::string& yaml, FleetDescription* out) { return ParseFleetDescription(yaml, out); }

TEST(FleetDescription, TheShippedMixedFleetParsesWithItsScenariosResolvedBesideIt) {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/sim/fleets/mixed.yaml");
  std::stringstream text;
  text << in.rdbuf();
  FleetDescription d;
  Status status = Parse(text.str(), &d);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(d.nodes, 100);
  ASSERT_EQ(d.groups.size(), 6u);
  EXPECT_EQ(d.start_offset_spread, std::chrono::minutes(5));
  EXPECT_EQ(d.jobs.idle_nodes_percent, 8);
  EXPECT_EQ(d.jobs.sizes, (std::vector<int>{1, 1, 2, 4, 8, 16}));
  EXPECT_EQ(d.jobs.accounts.size(), 6u);
  ResolveScenarioPaths(std::string(GPUSCOPE_SOURCE_DIR) + "/sim/fleets", &d);
  for (const FleetGroup& group : d.groups) {
    EXPECT_TRUE(std::ifstream(group.scenario).good()) << group.scenario << " does not exist";
  }
}

TEST(FleetDescription, KeysItDoesNotNameKeepTheirValues) {
  FleetDescription d;
  d.nodes = 7;
  ASSERT_TRUE(Parse("seed: 3\n", &d).ok());
  EXPECT_EQ(d.nodes, 7);
  EXPECT_EQ(d.seed, 3);
  ASSERT_TRUE(Parse("", &d).ok());
  EXPECT_EQ(d.seed, 3);
}

TEST(FleetDescription, ErrorsNameTheKeyAndLine) {
  FleetDescription d;
  Status status = Parse("nodes: 10\nnodez: 3\n", &d);
  EXPECT_THAT(status.message(), HasSubstr("nodez"));
  EXPECT_THAT(status.message(), HasSubstr("line 2"));
  EXPECT_THAT(Parse("nodes: 0\n", &d).message(), HasSubstr("nodes: 0 is out of range [1, 10000]"));
  EXPECT_THAT(Parse("nodes: many\n", &d).message(), HasSubstr("nodes"));
  EXPECT_THAT(Parse("groups: []\n", &d).message(), HasSubstr("groups: expected a non-empty list"));
  EXPECT_THAT(Parse("groups:\n  - {weight: 2}\n", &d).message(),
              HasSubstr("groups[0]: scenario is required"));
  EXPECT_THAT(Parse("groups:\n  - {scenario: a.yaml, weight: 0}\n", &d).message(),
              HasSubstr("groups[0].weight"));
  EXPECT_THAT(Parse("groups:\n  - {scenario: a.yaml, colour: red}\n", &d).message(), HasSubstr("colour"));
  EXPECT_THAT(Parse("jobs: {sizes: [1, 0]}\n", &d).message(), HasSubstr("jobs.sizes[1]"));
  EXPECT_THAT(Parse("jobs: {sizes: []}\n", &d).message(), HasSubstr("jobs.sizes"));
  EXPECT_THAT(Parse("jobs: {min_duration: 10m, max_duration: 1m}\n", &d).message(),
              HasSubstr("max_duration is shorter than min_duration"));
  EXPECT_THAT(Parse("jobs: {min_duration: 10ms}\n", &d).message(), HasSubstr("jobs.min_duration"));
  EXPECT_THAT(Parse("jobs: {accounts: [\"a b\"]}\n", &d).message(), HasSubstr("not an account name"));
  EXPECT_THAT(Parse("jobs: {partition: \"gpu;rm\"}\n", &d).message(), HasSubstr("not a partition name"));
  EXPECT_THAT(Parse("jobs: {idle_nodes_percent: 101}\n", &d).message(), HasSubstr("jobs.idle_nodes_percent"));
  EXPECT_THAT(Parse("hostname_prefix: \"node/\"\n", &d).message(), HasSubstr("hostname_prefix"));
  EXPECT_THAT(Parse("start_offset_spread: 48h\n", &d).message(), HasSubstr("at most 24h"));
  EXPECT_THAT(Parse("nodes: [1\n", &d).message(), HasSubstr("not valid YAML"));
  EXPECT_THAT(Parse("- 1\n- 2\n", &d).message(), HasSubstr("fleet description"));
  EXPECT_THAT(Parse("nodes: 1\nnodes: 2\n", &d).message(), HasSubstr("nodes"));
}

TEST(FleetDescription, RelativeScenarioPathsResolveAgainstTheDescriptionsFolderAbsoluteOnesStay) {
  FleetDescription d;
  d.groups = {{"../scenarios/a.yaml", 1}, {"/abs/b.yaml", 1}};
  ResolveScenarioPaths("/repo/sim/fleets", &d);
  EXPECT_EQ(d.groups[0].scenario, "/repo/sim/fleets/../scenarios/a.yaml");
  EXPECT_EQ(d.groups[1].scenario, "/abs/b.yaml");
}

TEST(FleetDescription, NodesAreDealtInProportionAndEachGroupSpreadOverTheFleet) {
  const std::vector<FleetGroup> groups = {{"train", 95}, {"faults", 5}};
  const std::vector<size_t> assigned = AssignGroups(groups, 100);
  ASSERT_EQ(assigned.size(), 100u);
  std::vector<int> faulty;
  for (int i = 0; i < 100; ++i) {
    if (assigned[static_cast<size_t>(i)] == 1) faulty.push_back(i);
  }
  ASSERT_EQ(faulty.size(), 5u);
  // Spread: one in each fifth of the fleet, not five in a row.
  for (size_t k = 0; k < faulty.size(); ++k) {
    EXPECT_GE(faulty[k], static_cast<int>(k) * 20) << k;
    EXPECT_LT(faulty[k], static_cast<int>(k + 1) * 20) << k;
  }
  // Exact shares at any size that divides, within one node otherwise.
  const std::vector<size_t> three = AssignGroups({{"a", 1}, {"b", 1}, {"c", 2}}, 10);
  EXPECT_EQ(std::count(three.begin(), three.end(), 2u), 5);
  EXPECT_NEAR(std::count(three.begin(), three.end(), 0u), 2.5, 0.5);
  EXPECT_TRUE(AssignGroups({}, 10).empty());
  EXPECT_TRUE(AssignGroups(groups, 0).empty());
}

TEST(FleetDescription, HostnamesAreThePrefixAndAOneBasedNumberOfAtLeastFourDigits) {
  EXPECT_EQ(NodeHostname("fleet-node-", 0), "fleet-node-0001");
  EXPECT_EQ(NodeHostname("gpu", 999), "gpu1000");
  EXPECT_EQ(NodeHostname("n", 9999), "n10000");
}

}  // namespace
}  // namespace gpuscope::fleet
