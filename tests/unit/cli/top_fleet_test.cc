// gpuscope top's fleet snapshot: how the four queries' answers join into nodes, GPUs, jobs, idle flags and
// alerts, and that a refresh costs the same fixed number of queries for 1 node and for 1,000.
#include "src/cli/top_fleet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

PromSeries Sample(std::map<std::string, std::string> labels, double value) {
  PromSeries s;
  s.labels = std::move(labels);
  s.points.push_back({1000, value});
  return s;
}

PromSeries GpuValue(const std::string& host, const std::string& gpu, double value,
                    const std::string& job = "") {
  std::map<std::string, std::string> labels = {
      {"Hostname", host}, {"gpu", gpu}, {"modelName", "NVIDIA H100 80GB HBM3"}, {"instance", host + ":9400"}};
  if (!job.empty()) labels["hpc_job"] = job;
  return Sample(labels, value);
}

TEST(TopFleetTest, JoinsValuesJobsIdleFlagsAndAlertsPerGpu) {
  const std::vector<PromSeries> values = {GpuValue("gpu-node-01", "0", 97, "4101"),
                                          GpuValue("gpu-node-01", "1", 3, "4101"),
                                          GpuValue("gpu-node-02", "0", 50)};
  const std::vector<PromSeries> jobs = {Sample({{"__name__", "gpuscope_job_info"},
                                                {"Hostname", "gpu-node-01"},
                                                {"hpc_job", "4101"},
                                                {"user", "alice"},
                                                {"account", "llm"},
                                                {"partition", "train"},
                                                {"job_name", "llama"}},
                                               1)};
  const std::vector<PromSeries> idle = {
      Sample({{"Hostname", "gpu-node-01"}, {"gpu", "1"}, {"hpc_job", "4101"}}, 1)};
  const std::vector<PromSeries> alerts = {
      Sample({{"alertname", "GpuTemperatureHigh"}, {"Hostname", "gpu-node-02"}, {"gpu", "0"}}, 1),
      Sample({{"alertname", "GpuNodeDraining"}, {"Hostname", "gpu-node-02"}}, 1),
      Sample({{"alertname", "GpuscopeAgentDown"}, {"instance", "gpu-node-01:9400"}}, 1),
      Sample({{"alertname", "GpuPartitionAllocationHigh"}, {"partition", "train"}}, 1)};

  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kUtilization, values, jobs, idle, alerts);

  ASSERT_EQ(snapshot.nodes.size(), 2u);
  const TopNode& one = snapshot.nodes[0];
  EXPECT_EQ(one.hostname, "gpu-node-01");
  EXPECT_EQ(one.model, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(one.gpus.size(), 2u);
  EXPECT_EQ(one.gpus[0].value, 97);
  EXPECT_EQ(one.gpus[0].job, "4101");
  EXPECT_FALSE(one.gpus[0].allocated_idle);
  EXPECT_TRUE(one.gpus[1].allocated_idle);
  EXPECT_EQ(one.IdleGpus(), 1);
  ASSERT_EQ(one.jobs.count("4101"), 1u);
  EXPECT_EQ(one.jobs.at("4101").user, "alice");
  EXPECT_EQ(one.jobs.at("4101").account, "llm");
  EXPECT_EQ(one.jobs.at("4101").partition, "train");
  EXPECT_EQ(one.jobs.at("4101").name, "llama");
  // An alert naming only the agent's instance lands on that instance's node.
  EXPECT_EQ(one.alerts, std::vector<std::string>{"GpuscopeAgentDown"});

  const TopNode& two = snapshot.nodes[1];
  EXPECT_TRUE(two.jobs.empty());
  EXPECT_EQ(two.gpus[0].alerts, std::vector<std::string>{"GpuTemperatureHigh"});
  EXPECT_EQ(two.alerts, std::vector<std::string>{"GpuNodeDraining"});
  EXPECT_TRUE(two.HasAlert());
  EXPECT_EQ(snapshot.fleet_alerts, std::vector<std::string>{"GpuPartitionAllocationHigh"});
}

TEST(TopFleetTest, OrdersNodesAndGpusWithNumbersComparedAsNumbers) {
  const std::vector<PromSeries> values = {GpuValue("gpu-node-10", "0", 1), GpuValue("gpu-node-2", "10", 1),
                                          GpuValue("gpu-node-2", "2", 1), GpuValue("gpu-node-2", "0", 1)};
  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kUtilization, values, {}, {}, {});
  ASSERT_EQ(snapshot.nodes.size(), 2u);
  EXPECT_EQ(snapshot.nodes[0].hostname, "gpu-node-2");
  EXPECT_EQ(snapshot.nodes[1].hostname, "gpu-node-10");
  // GPUs 0, 2 and 10 answered; the ones between keep their places without a value.
  ASSERT_EQ(snapshot.nodes[0].gpus.size(), 11u);
  for (int i = 0; i <= 10; ++i) EXPECT_EQ(snapshot.nodes[0].gpus[i].index, std::to_string(i));
  EXPECT_EQ(snapshot.nodes[0].gpus[2].value, 1);
  EXPECT_EQ(snapshot.nodes[0].gpus[10].value, 1);
  EXPECT_LT(snapshot.nodes[0].gpus[9].value, 0);
  EXPECT_TRUE(NaturalLess("node-007", "node-10"));
  EXPECT_FALSE(NaturalLess("node-10", "node-10"));
  EXPECT_TRUE(NaturalLess("node", "node-1"));
}

TEST(TopFleetTest, AGpuWithoutASampleKeepsItsPlaceAndItsAlert) {
  // GPU 1 fell off the bus: no utilisation sample, but GpuLost fires on it.
  const std::vector<PromSeries> values = {GpuValue("n1", "0", 90), GpuValue("n1", "2", 80)};
  const std::vector<PromSeries> alerts = {
      Sample({{"alertname", "GpuLost"}, {"Hostname", "n1"}, {"gpu", "1"}}, 1)};
  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kUtilization, values, {}, {}, alerts);
  const TopNode& node = snapshot.nodes.at(0);
  ASSERT_EQ(node.gpus.size(), 3u);
  EXPECT_EQ(node.gpus[1].index, "1");
  EXPECT_LT(node.gpus[1].value, 0);
  EXPECT_EQ(node.gpus[1].alerts, std::vector<std::string>{"GpuLost"});
  EXPECT_TRUE(node.alerts.empty());
  EXPECT_EQ(node.MeanValue(), 85);
}

TEST(TopFleetTest, KubernetesPodIsTheJobAndItsNamespaceTheAccount) {
  const std::vector<PromSeries> values = {GpuValue("gpu-node-06", "0", 20), GpuValue("gpu-node-06", "1", 0)};
  const std::vector<PromSeries> jobs = {Sample({{"__name__", "gpuscope_k8s_gpu_allocation_info"},
                                                {"Hostname", "gpu-node-06"},
                                                {"gpu", "1"},
                                                {"namespace", "serving"},
                                                {"pod", "vllm-0"},
                                                {"container", "server"}},
                                               1)};
  const std::vector<PromSeries> idle = {
      Sample({{"Hostname", "gpu-node-06"}, {"gpu", "1"}, {"namespace", "serving"}, {"pod", "vllm-0"}}, 1)};
  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kUtilization, values, jobs, idle, {});
  const TopNode& node = snapshot.nodes.at(0);
  EXPECT_TRUE(node.gpus[0].job.empty());
  ASSERT_FALSE(node.gpus[1].job.empty());
  const TopJob& pod = node.jobs.at(node.gpus[1].job);
  EXPECT_EQ(pod.id, "vllm-0");
  EXPECT_EQ(pod.account, "serving");
  EXPECT_TRUE(node.gpus[1].allocated_idle);
}

TEST(TopFleetTest, ReadsTheDcgmCompatLowercaseHostnameAndAJobWithoutItsInfo) {
  const std::vector<PromSeries> values = {Sample({{"hostname", "n1"}, {"gpu", "0"}, {"hpc_job", "77"}}, 40)};
  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kUtilization, values, {}, {}, {});
  ASSERT_EQ(snapshot.nodes.size(), 1u);
  EXPECT_EQ(snapshot.nodes[0].hostname, "n1");
  // gpuscope_job_info not scraped yet: the job shows by its id alone.
  EXPECT_EQ(snapshot.nodes[0].jobs.at("77").id, "77");
  EXPECT_TRUE(snapshot.nodes[0].jobs.at("77").user.empty());
}

TEST(TopFleetTest, ASampleThatIsNotANumberLeavesTheGpuWithoutAValue) {
  const std::vector<PromSeries> values = {GpuValue("n1", "0", std::nan(""))};
  const FleetSnapshot snapshot = BuildFleetSnapshot(TopMetric::kMemory, values, {}, {}, {});
  ASSERT_EQ(snapshot.nodes.at(0).gpus.size(), 1u);
  EXPECT_LT(snapshot.nodes[0].gpus[0].value, 0);
  EXPECT_LT(snapshot.nodes[0].MeanValue(), 0);
}

TEST(TopFleetTest, AFailedQueryStopsTheRefreshAndKeepsTheLastSnapshot) {
  FleetSnapshot snapshot;
  snapshot.nodes.push_back(TopNode{"kept", "", {}, {}, {}});
  int calls = 0;
  Status status = FetchFleetSnapshot(
      [&](const std::string& expr, std::vector<PromSeries>* series) {
        ++calls;
        if (calls == 2) return Status::Unavailable("query " + expr + ": connection refused");
        series->push_back(GpuValue("n1", "0", 1));
        return Status::Ok();
      },
      TopMetric::kUtilization, &snapshot);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("connection refused"), std::string::npos);
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(snapshot.nodes.size(), 1u);
  EXPECT_EQ(snapshot.nodes[0].hostname, "kept");
}

// A stand-in Prometheus for `nodes` nodes of 8 GPUs: answers each of the four queries for the whole fleet
// and counts the queries.
struct SyntheticPrometheus {
  explicit SyntheticPrometheus(int n) : nodes(n) {}
  int nodes;
  int queries = 0;
  std::vector<std::string> asked;

  Status operator()(const std::string& expr, std::vector<PromSeries>* series) {
    ++queries;
    asked.push_back(expr);
    for (int n = 0; n < nodes; ++n) {
      const std::string host = "node-" + std::to_string(n);
      const std::string job = std::to_string(100000 + n);
      if (expr.rfind("gpuscope_job_info", 0) == 0) {
        series->push_back(
            Sample({{"Hostname", host}, {"hpc_job", job}, {"user", "u" + std::to_string(n % 50)}}, 1));
      } else if (expr.rfind("gpuscope_gpu_allocated_idle", 0) == 0) {
        if (n % 10 == 0) series->push_back(Sample({{"Hostname", host}, {"gpu", "3"}}, 1));
      } else if (expr.rfind("ALERTS", 0) == 0) {
        if (n % 100 == 0)
          series->push_back(Sample({{"alertname", "GpuXidCritical"}, {"Hostname", host}, {"gpu", "5"}}, 1));
      } else {
        for (int g = 0; g < 8; ++g) series->push_back(GpuValue(host, std::to_string(g), (n + g) % 101, job));
      }
    }
    return Status::Ok();
  }
};

TEST(TopFleetTest, ARefreshOfAThousandNodesRunsFourQueriesAsOneNodeDoes) {
  for (TopMetric metric :
       {TopMetric::kUtilization, TopMetric::kMemory, TopMetric::kPower, TopMetric::kTemperature}) {
    SyntheticPrometheus small(1);
    SyntheticPrometheus fleet(1000);
    FleetSnapshot a, b;
    ASSERT_TRUE(FetchFleetSnapshot(std::ref(small), metric, &a).ok());
    ASSERT_TRUE(FetchFleetSnapshot(std::ref(fleet), metric, &b).ok());
    EXPECT_EQ(small.queries, kFleetQueriesPerRefresh);
    EXPECT_EQ(fleet.queries, kFleetQueriesPerRefresh);
    EXPECT_EQ(fleet.asked, FleetQueries(metric));
    EXPECT_EQ(fleet.asked[0], MetricInfo(metric).promql);

    ASSERT_EQ(b.nodes.size(), 1000u);
    size_t gpus = 0;
    int idle = 0, alerting = 0;
    for (const TopNode& node : b.nodes) {
      gpus += node.gpus.size();
      idle += node.IdleGpus();
      alerting += node.HasAlert() ? 1 : 0;
      ASSERT_EQ(node.jobs.size(), 1u);
    }
    EXPECT_EQ(gpus, 8000u);
    EXPECT_EQ(idle, 100);
    EXPECT_EQ(alerting, 10);
  }
}

TEST(TopFleetTest, MetricsParseByFlagOrName) {
  TopMetric metric = TopMetric::kUtilization;
  EXPECT_TRUE(ParseTopMetric("temperature", &metric));
  EXPECT_EQ(metric, TopMetric::kTemperature);
  EXPECT_TRUE(ParseTopMetric("memory", &metric));
  EXPECT_EQ(metric, TopMetric::kMemory);
  EXPECT_TRUE(ParseTopMetric("util", &metric));
  EXPECT_EQ(metric, TopMetric::kUtilization);
  EXPECT_FALSE(ParseTopMetric("fan", &metric));
  EXPECT_EQ(metric, TopMetric::kUtilization);
}

}  // namespace
}  // namespace gpuscope
