// gpuscope top's screen model: compact (80x24) and wide (200x60) layouts, the cells' digits and markers
// (what a monochrome terminal shows), sorting, filters, paging through 1,000 nodes, stale data, help and
// the filter prompt.
#include "src/cli/top_view.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

TopNode Node(const std::string& host, std::vector<double> values, const TopJob& job = {},
             std::vector<int> idle = {}, std::vector<int> alert_gpus = {}) {
  TopNode node;
  node.hostname = host;
  node.model = "NVIDIA H100 80GB HBM3";
  for (size_t i = 0; i < values.size(); ++i) {
    TopGpu g;
    g.index = std::to_string(i);
    g.value = values[i];
    g.job = job.id;
    node.gpus.push_back(g);
  }
  if (!job.id.empty()) node.jobs[job.id] = job;
  for (int i : idle) node.gpus[i].allocated_idle = true;
  for (int i : alert_gpus) node.gpus[i].alerts.push_back("GpuXidCritical");
  return node;
}

// The demo's three kinds of node: busy, faulty (an alert on GPU 2), allocated and idle.
FleetSnapshot Demo() {
  FleetSnapshot s;
  s.nodes.push_back(
      Node("gpu-node-01", std::vector<double>(8, 95), {"4101", "alice", "llm", "train", "llama-finetune"}));
  s.nodes.push_back(Node("gpu-node-03", std::vector<double>(8, 55),
                         {"4103", "carol", "vision", "train", "vit-huge"}, {}, {2}));
  s.nodes.push_back(Node("gpu-node-04", std::vector<double>(8, 0),
                         {"4104", "dave", "research", "interactive", "notebook"}, {0, 1, 2, 3, 4, 5, 6, 7}));
  return s;
}

std::vector<std::string> Lines(const TopScreen& screen) {
  std::vector<std::string> lines;
  for (const TopLine& line : screen.lines) lines.push_back(line.Text());
  return lines;
}

// The row of `host`, or "" when it is not on screen.
std::string RowOf(const TopScreen& screen, const std::string& host) {
  for (const TopLine& line : screen.lines) {
    const std::string text = line.Text();
    if (text.rfind(host, 0) == 0) return text;
  }
  return "";
}

TopViewState Shown(double updated = 1000) {
  TopViewState state;
  state.updated = updated;
  return state;
}

TEST(TopViewTest, Compact80x24HasOneRowPerNodeWithADigitAndMarkerPerGpuAndTheJobs) {
  const TopScreen screen = LayoutTopScreen(Demo(), Shown(), 80, 24, 1002);
  ASSERT_EQ(screen.lines.size(), 24u);
  for (const std::string& line : Lines(screen)) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(RowOf(screen, "gpu-node-01"), "gpu-node-01  9  9  9  9  9  9  9  9  4101 alice");
  EXPECT_EQ(RowOf(screen, "gpu-node-03"), "gpu-node-03! 5  5  5! 5  5  5  5  5  4103 carol");
  EXPECT_EQ(RowOf(screen, "gpu-node-04"), "gpu-node-04  0i 0i 0i 0i 0i 0i 0i 0i 4104 dave");
  const std::vector<std::string> lines = Lines(screen);
  EXPECT_EQ(
      lines[0].rfind("gpuscope top | util % | 3 nodes 24 GPUs | 8 idle 1 alerting | every 5s | 2s ago", 0),
      0u)
      << lines[0];
  EXPECT_EQ(lines[2].rfind("NODE         0  1  2  3  4  5  6  7  JOBS", 0), 0u) << lines[2];
  EXPECT_EQ(lines[23], "u m p t metric  s sort  / filter  c clear  + - refresh  ? help  q quit");
}

TEST(TopViewTest, Wide200x60ShowsValuesModelAccountsPartitionsNamesAndAlerts) {
  const TopScreen screen = LayoutTopScreen(Demo(), Shown(), 200, 60, 1000);
  ASSERT_EQ(screen.lines.size(), 60u);
  for (const std::string& line : Lines(screen)) EXPECT_LE(line.size(), 200u);
  EXPECT_EQ(RowOf(screen, "gpu-node-01"),
            "gpu-node-01  H100 80GB HBM3   95   95   95   95   95   95   95   95  "
            "4101 alice llm/train llama-finetune");
  EXPECT_EQ(RowOf(screen, "gpu-node-03"),
            "gpu-node-03! H100 80GB HBM3   55   55   55!  55   55   55   55   55  "
            "4103 carol vision/train vit-huge ! GpuXidCritical");
  EXPECT_EQ(RowOf(screen, "gpu-node-04"),
            "gpu-node-04  H100 80GB HBM3    0i   0i   0i   0i   0i   0i   0i   0i "
            "4104 dave research/interactive notebook");
  EXPECT_NE(Lines(screen)[2].find("MODEL"), std::string::npos);
}

TEST(TopViewTest, CellStylesAreAlertOverIdleOverHeatAndDimWithoutASample) {
  FleetSnapshot s = Demo();
  s.nodes[0].gpus[7].value = -1;
  s.nodes[0].gpus[6].value = 15;
  const TopScreen screen = LayoutTopScreen(s, Shown(), 80, 24, 1000);
  auto cell = [&](const std::string& host, int gpu) {
    for (const TopLine& line : screen.lines) {
      if (line.Text().rfind(host, 0) == 0) return line.spans[2 + 2 * gpu];
    }
    return TopSpan{};
  };
  EXPECT_EQ(cell("gpu-node-01", 0).style, TopStyle::kHeat4);
  EXPECT_EQ(cell("gpu-node-01", 6).text, "1 ");
  EXPECT_EQ(cell("gpu-node-01", 6).style, TopStyle::kHeat0);
  EXPECT_EQ(cell("gpu-node-01", 7).text, "- ");
  EXPECT_EQ(cell("gpu-node-01", 7).style, TopStyle::kDim);
  EXPECT_EQ(cell("gpu-node-03", 1).style, TopStyle::kHeat2);
  EXPECT_EQ(cell("gpu-node-03", 2).style, TopStyle::kAlert);
  EXPECT_EQ(cell("gpu-node-04", 0).style, TopStyle::kIdle);
}

TEST(TopViewTest, TheAllocatedIdleAlertShowsAsIdleNotAsAnAlertButIsListed) {
  FleetSnapshot s = Demo();
  for (TopGpu& g : s.nodes[2].gpus) g.alerts.push_back("GpuAllocatedIdle");
  s.nodes[2].gpus[3].alerts.push_back("GpuXidCritical");
  const TopScreen screen = LayoutTopScreen(s, Shown(), 200, 30, 1000);
  EXPECT_EQ(RowOf(screen, "gpu-node-04"),
            "gpu-node-04! H100 80GB HBM3    0i   0i   0i   0!   0i   0i   0i   0i "
            "4104 dave research/interactive notebook ! GpuAllocatedIdle, GpuXidCritical");
  s.nodes[2].gpus[3].alerts.pop_back();
  EXPECT_FALSE(s.nodes[2].HasAlert());
  EXPECT_EQ(RowOf(LayoutTopScreen(s, Shown(), 80, 24, 1000), "gpu-node-04"),
            "gpu-node-04  0i 0i 0i 0i 0i 0i 0i 0i 4104 dave");
}

TEST(TopViewTest, ANodeSharedByJobsSaysWhichGpusEachHolds) {
  FleetSnapshot s;
  s.nodes.push_back(Node("n1", std::vector<double>(8, 50), {"7", "ann", "a", "p", "x"}));
  s.nodes[0].jobs["8"] = TopJob{"8", "bo", "b", "q", "y"};
  for (int i : {4, 5, 7}) s.nodes[0].gpus[i].job = "8";
  s.nodes[0].gpus[6].job.clear();
  EXPECT_EQ(RowOf(LayoutTopScreen(s, Shown(), 80, 24, 1000), "n1"),
            "n1    5  5  5  5  5  5  5  5  7[0-3] ann, 8[4-5,7] bo");
  EXPECT_NE(
      RowOf(LayoutTopScreen(s, Shown(), 200, 24, 1000), "n1").find("7[0-3] ann a/p x; 8[4-5,7] bo b/q y"),
      std::string::npos);
}

TEST(TopViewTest, LevelsAreTenthsOfFullScale) {
  EXPECT_EQ(TopLevel(0, 100), 0);
  EXPECT_EQ(TopLevel(9.99, 100), 0);
  EXPECT_EQ(TopLevel(10, 100), 1);
  EXPECT_EQ(TopLevel(89.9, 100), 8);
  EXPECT_EQ(TopLevel(100, 100), 9);
  EXPECT_EQ(TopLevel(130, 100), 9);
  EXPECT_EQ(TopLevel(-1, 100), -1);
}

TEST(TopViewTest, SortsByNameByValueAndIdleFirst) {
  const FleetSnapshot s = Demo();
  TopViewState state = Shown();
  auto order = [&](TopSort sort) {
    state.sort = sort;
    std::vector<std::string> hosts;
    for (const TopNode* node : VisibleNodes(s, state)) hosts.push_back(node->hostname);
    return hosts;
  };
  EXPECT_EQ(order(TopSort::kNode), (std::vector<std::string>{"gpu-node-01", "gpu-node-03", "gpu-node-04"}));
  EXPECT_EQ(order(TopSort::kValue), (std::vector<std::string>{"gpu-node-01", "gpu-node-03", "gpu-node-04"}));
  EXPECT_EQ(order(TopSort::kIdleFirst),
            (std::vector<std::string>{"gpu-node-04", "gpu-node-01", "gpu-node-03"}));
  EXPECT_EQ(NextTopSort(TopSort::kNode), TopSort::kValue);
  EXPECT_EQ(NextTopSort(TopSort::kValue), TopSort::kIdleFirst);
  EXPECT_EQ(NextTopSort(TopSort::kIdleFirst), TopSort::kNode);
  TopSort parsed = TopSort::kNode;
  EXPECT_TRUE(ParseTopSort("idle", &parsed));
  EXPECT_EQ(parsed, TopSort::kIdleFirst);
  EXPECT_FALSE(ParseTopSort("random", &parsed));
}

TEST(TopViewTest, SortByValuePutsHotterNodesFirstAndNodesWithoutValuesLast) {
  FleetSnapshot s;
  s.nodes.push_back(Node("a", {10, 10}));
  s.nodes.push_back(Node("b", {-1, -1}));
  s.nodes.push_back(Node("c", {90, 50}));
  TopViewState state = Shown();
  state.sort = TopSort::kValue;
  const std::vector<const TopNode*> nodes = VisibleNodes(s, state);
  EXPECT_EQ(nodes[0]->hostname, "c");
  EXPECT_EQ(nodes[1]->hostname, "a");
  EXPECT_EQ(nodes[2]->hostname, "b");
}

TEST(TopViewTest, FiltersByUserAccountPartitionAndWords) {
  const FleetSnapshot s = Demo();
  auto hosts = [&](const std::string& text) {
    TopViewState state = Shown();
    EXPECT_TRUE(ParseTopFilter(text, &state.filter).ok()) << text;
    std::vector<std::string> out;
    for (const TopNode* node : VisibleNodes(s, state)) out.push_back(node->hostname);
    return out;
  };
  EXPECT_EQ(hosts("user=dave"), std::vector<std::string>{"gpu-node-04"});
  EXPECT_EQ(hosts("partition=train"), (std::vector<std::string>{"gpu-node-01", "gpu-node-03"}));
  EXPECT_EQ(hosts("account=vision partition=train"), std::vector<std::string>{"gpu-node-03"});
  EXPECT_EQ(hosts("account=vision user=alice"), std::vector<std::string>{});
  EXPECT_EQ(hosts("node-01"), std::vector<std::string>{"gpu-node-01"});
  EXPECT_EQ(hosts("4103"), std::vector<std::string>{"gpu-node-03"});
  EXPECT_EQ(hosts(""), (std::vector<std::string>{"gpu-node-01", "gpu-node-03", "gpu-node-04"}));

  TopViewState state = Shown();
  ASSERT_TRUE(ParseTopFilter("user=dave", &state.filter).ok());
  const TopScreen screen = LayoutTopScreen(s, state, 80, 24, 1000);
  EXPECT_EQ(RowOf(screen, "gpu-node-01"), "");
  EXPECT_NE(RowOf(screen, "gpu-node-04"), "");
  EXPECT_NE(Lines(screen)[1].find("filter user=dave | nodes 1-1 of 1"), std::string::npos)
      << Lines(screen)[1];
}

TEST(TopViewTest, ABadFilterTermIsRefusedNamingIt) {
  TopFilter filter;
  filter.user = "kept";
  Status status = ParseTopFilter("user=dave gpu=3", &filter);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("'gpu=3'"), std::string::npos);
  EXPECT_EQ(filter.user, "kept");
  EXPECT_FALSE(ParseTopFilter("user=", &filter).ok());
  ASSERT_TRUE(ParseTopFilter("user=dave partition=train x", &filter).ok());
  EXPECT_EQ(TopFilterText(filter), "user=dave partition=train x");
}

TEST(TopViewTest, AThousandNodesPageAt80x24AndTheScrollIsClamped) {
  FleetSnapshot s;
  for (int n = 1; n <= 1000; ++n)
    s.nodes.push_back(Node("node-" + std::to_string(n), std::vector<double>(8, 50)));
  TopViewState state = Shown();
  TopScreen screen = LayoutTopScreen(s, state, 80, 24, 1000);
  EXPECT_EQ(screen.page_rows, 20);
  EXPECT_EQ(screen.shown_rows, 20);
  EXPECT_EQ(screen.total_rows, 1000);
  EXPECT_NE(RowOf(screen, "node-20 "), "");
  EXPECT_EQ(RowOf(screen, "node-21 "), "");
  EXPECT_NE(Lines(screen)[1].find("nodes 1-20 of 1000"), std::string::npos);

  state.scroll = 20;
  screen = LayoutTopScreen(s, state, 80, 24, 1000);
  EXPECT_EQ(screen.first_row, 20);
  EXPECT_NE(RowOf(screen, "node-21 "), "");
  EXPECT_NE(Lines(screen)[1].find("nodes 21-40 of 1000"), std::string::npos);

  state.scroll = 5000;
  screen = LayoutTopScreen(s, state, 80, 24, 1000);
  EXPECT_EQ(screen.first_row, 980);
  EXPECT_NE(RowOf(screen, "node-1000 "), "");
  EXPECT_EQ(screen.lines.size(), 24u);

  // --once: no paging, every node.
  screen = LayoutTopScreen(s, Shown(), 80, 0, 1000);
  EXPECT_EQ(screen.lines.size(), 1003u);
}

TEST(TopViewTest, AFailedRefreshShowsStaleWithTheErrorAndKeepsTheRows) {
  TopViewState state = Shown();
  state.error = "query DCGM_FI_DEV_GPU_UTIL at http://prom:9090: connection refused";
  TopScreen screen = LayoutTopScreen(Demo(), state, 200, 30, 1000);
  EXPECT_EQ(Lines(screen)[1].rfind("STALE: query DCGM_FI_DEV_GPU_UTIL", 0), 0u) << Lines(screen)[1];
  EXPECT_EQ(screen.lines[1].spans[0].style, TopStyle::kError);
  EXPECT_NE(RowOf(screen, "gpu-node-01"), "");

  state.updated = 0;  // no answer ever
  screen = LayoutTopScreen(FleetSnapshot(), state, 80, 24, 1000);
  EXPECT_EQ(Lines(screen)[1].rfind("ERROR: query", 0), 0u) << Lines(screen)[1];
  state.error.clear();
  screen = LayoutTopScreen(FleetSnapshot(), state, 80, 24, 1000);
  EXPECT_EQ(Lines(screen)[1].rfind("waiting for the first answer", 0), 0u);
}

TEST(TopViewTest, TheHeaderNamesTheChosenMetricAndSaysLoadingUntilItsAnswer) {
  TopViewState state = Shown();
  state.metric = TopMetric::kTemperature;
  const TopScreen screen = LayoutTopScreen(Demo(), state, 80, 24, 1000);  // Demo() is utilisation
  EXPECT_EQ(Lines(screen)[0].rfind("gpuscope top | temperature C loading |", 0), 0u) << Lines(screen)[0];
  FleetSnapshot memory = Demo();
  memory.metric = TopMetric::kMemory;
  state.metric = TopMetric::kMemory;
  EXPECT_EQ(Lines(LayoutTopScreen(memory, state, 80, 24, 1000))[0].rfind("gpuscope top | memory % |", 0), 0u);
}

TEST(TopViewTest, HelpReplacesTheRowsAndThePromptShowsWhatIsTyped) {
  TopViewState state = Shown();
  state.help = true;
  TopScreen screen = LayoutTopScreen(Demo(), state, 100, 24, 1000);
  EXPECT_EQ(RowOf(screen, "gpu-node-01"), "");
  EXPECT_EQ(Lines(screen)[3], "Keys");
  state.help = false;
  state.prompt = true;
  state.prompt_text = "user=da";
  screen = LayoutTopScreen(Demo(), state, 100, 24, 1000);
  EXPECT_EQ(Lines(screen)[23], "filter (user= account= partition= words; empty clears): user=da_");
  state.prompt = false;
  state.message = "filter term 'x=1': keys are user, account and partition";
  screen = LayoutTopScreen(Demo(), state, 100, 24, 1000);
  EXPECT_EQ(Lines(screen)[23], state.message);
}

TEST(TopViewTest, TinyTerminalsNeverGetLinesLongerOrMoreThanTheyHold) {
  for (int width : {20, 40, 79, 119, 120}) {
    for (int height : {1, 3, 5, 10}) {
      const TopScreen screen = LayoutTopScreen(Demo(), Shown(), width, height, 1000);
      EXPECT_LE(static_cast<int>(screen.lines.size()), height);
      for (const std::string& line : Lines(screen)) EXPECT_LE(static_cast<int>(line.size()), width);
    }
  }
}

}  // namespace
}  // namespace gpuscope
