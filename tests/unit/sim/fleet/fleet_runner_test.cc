// The fleet runner end to end in one process: nodes of two scenarios on the real simulator library, each
// serving its own /metrics through the agent's endpoint, with its own Hostname, GPUs, identities and the
// job the runner's records gave it; jobs churn; file_sd lists every node; stopping closes every port.
#include "sim/fleet/fleet_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "src/agent/registry.h"
#include "src/parsers/prom_text.h"
#include "src/platform/file.h"
#include "src/platform/http_client.h"

namespace gpuscope::fleet {
namespace {

using ::testing::HasSubstr;

struct Scrape {
  bool ok = false;
  std::string error;                                   // why the scrape failed
  std::map<std::string, std::string> job_of_gpu_uuid;  // UUID -> hpc_job ("" when none)
  std::set<std::string> hostnames;
};

Scrape ScrapeNode(const std::string& address) {
  Scrape out;
  std::unique_ptr<HttpClient> client;
  HttpClientOptions options;
  options.max_response_body_bytes = 16 << 20;
  Status status = HttpClient::Create("http://" + address, options, &client);
  HttpClientResponse response;
  if (status.ok()) status = client->Get("/metrics", {}, &response);
  if (!status.ok() || response.status != 200) {
    out.error = status.ToString() + " HTTP " + std::to_string(response.status);
    return out;
  }
  PromTextParse parsed = ParsePromText(response.body, PromTextOptions{.mixed_label_names = true});
  if (!parsed.error.empty()) {
    out.error = parsed.error;
    return out;
  }
  for (const MetricFamily& family : parsed.families) {
    if (family.name != "DCGM_FI_DEV_GPU_TEMP") continue;
    for (const Sample& sample : family.samples) {
      std::string uuid, job;
      for (const auto& [name, value] : sample.labels) {
        if (name == "UUID") uuid = value;
        if (name == "hpc_job") job = value;
        if (name == "Hostname") out.hostnames.insert(value);
      }
      out.job_of_gpu_uuid[uuid] = job;
    }
  }
  out.ok = !out.job_of_gpu_uuid.empty();
  return out;
}

// The job id the runner's record in `node`'s mapping directory names; "" without one.
std::string RecordedJob(const std::string& state_dir, const std::string& node) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir + "/" + node + "/mapping", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gpuscope-job.", 0) == 0) return name.substr(13);
  }
  return "";
}

class FleetRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/fleet_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  std::string WriteScenario(const std::string& name, unsigned gpus) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "seed: 5\ngpus:\n  count: " << gpus
                        << "\n  model: h100-sxm\n  workload: {type: training}\n";
    return path;
  }

  FleetOptions Options(int nodes, std::chrono::seconds job_duration) {
    FleetOptions options;
    options.description.nodes = nodes;
    options.description.groups = {{WriteScenario("two.yaml", 2), 1}, {WriteScenario("three.yaml", 3), 1}};
    options.description.jobs.idle_nodes_percent = 25;
    options.description.jobs.sizes = {1};
    options.description.jobs.min_duration = job_duration;
    options.description.jobs.max_duration = job_duration;
    options.nvml_library = GPUSCOPE_SIM_NVML_PATH;
    options.state_dir = dir_ + "/state";
    options.file_sd = dir_ + "/targets.json";
    BuiltinCollectors().FillDefaults(&options.agent);
    for (auto& [name, collector] : options.agent.collectors) collector.enabled = name == "gpu";
    options.agent.collectors["gpu"].interval = std::chrono::milliseconds(100);
    return options;
  }

  // Scrapes `address` until `done` holds (each node's first cycles take a moment), at most ~30 s.
  template <typename Done>
  Scrape ScrapeUntil(const std::string& address, Done done) {
    Scrape last;
    for (int i = 0; i < 300; ++i) {
      last = ScrapeNode(address);
      if (last.ok && done(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return last;
  }

  std::string dir_;
};

TEST_F(FleetRunnerTest, EachNodeServesItsOwnGpusHostnameAndJobThroughTheAgentsEndpoint) {
  Status status;
  auto fleet = FleetRunner::Start(Options(4, std::chrono::seconds(3600)), &status);
  ASSERT_NE(fleet, nullptr) << status.ToString();
  ASSERT_EQ(fleet->targets().size(), 4u);
  EXPECT_EQ(fleet->running_jobs(), 3u);  // 25 % of 4 nodes stay free

  std::set<std::string> uuids;
  int free_nodes = 0;
  for (size_t i = 0; i < 4; ++i) {
    const FleetTarget& target = fleet->targets()[i];
    EXPECT_EQ(target.hostname, NodeHostname("fleet-node-", static_cast<int>(i)));
    const std::string job = RecordedJob(dir_ + "/state", target.hostname);
    free_nodes += job.empty();
    // Groups alternate: 2 GPUs, 3 GPUs, 2, 3.
    const size_t gpus = i % 2 == 0 ? 2 : 3;
    Scrape scrape = ScrapeUntil(target.address, [&](const Scrape& s) {
      if (s.job_of_gpu_uuid.size() != gpus) return false;
      for (const auto& [uuid, j] : s.job_of_gpu_uuid) {
        if (j != job) return false;
      }
      return true;
    });
    ASSERT_EQ(scrape.job_of_gpu_uuid.size(), gpus) << target.hostname << ": " << scrape.error;
    EXPECT_EQ(scrape.hostnames, std::set<std::string>{target.hostname});
    for (const auto& [uuid, j] : scrape.job_of_gpu_uuid) {
      EXPECT_EQ(j, job) << target.hostname << " " << uuid;
      EXPECT_TRUE(uuids.insert(uuid).second) << uuid << " on two nodes: nodes must have their own seeds";
    }
  }
  EXPECT_EQ(free_nodes, 1);

  const std::optional<std::string> file_sd = ReadWholeFile(dir_ + "/targets.json");
  ASSERT_TRUE(file_sd.has_value());
  EXPECT_EQ(*file_sd, RenderFileSd(fleet->targets()));
  EXPECT_THAT(*file_sd, HasSubstr("{\"targets\": [\"" + fleet->targets()[0].address +
                                  "\"], \"labels\": {\"node\": \"fleet-node-0001\"}}"));
}

TEST_F(FleetRunnerTest, WhenJobsEndTheirNodesGetNewJobsAndTheMetricsFollow) {
  Status status;
  auto fleet = FleetRunner::Start(Options(2, std::chrono::seconds(1)), &status);
  ASSERT_NE(fleet, nullptr) << status.ToString();
  const FleetTarget target = fleet->targets()[0];
  const std::string first = RecordedJob(dir_ + "/state", target.hostname);
  ASSERT_FALSE(first.empty());
  Scrape before = ScrapeUntil(target.address,
                              [&](const Scrape& s) { return s.job_of_gpu_uuid.begin()->second == first; });
  ASSERT_EQ(before.job_of_gpu_uuid.begin()->second, first);

  EXPECT_GT(fleet->Advance(std::chrono::seconds(2)), 0u);
  const std::string second = RecordedJob(dir_ + "/state", target.hostname);
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second, first);
  Scrape after = ScrapeUntil(target.address,
                             [&](const Scrape& s) { return s.job_of_gpu_uuid.begin()->second == second; });
  for (const auto& [uuid, job] : after.job_of_gpu_uuid) EXPECT_EQ(job, second) << uuid;
  EXPECT_GE(fleet->started_jobs(), 2u);
}

TEST_F(FleetRunnerTest, StopClosesEveryNodesPortAndIsIdempotent) {
  Status status;
  auto fleet = FleetRunner::Start(Options(3, std::chrono::seconds(3600)), &status);
  ASSERT_NE(fleet, nullptr) << status.ToString();
  const std::vector<FleetTarget> targets = fleet->targets();
  fleet->Stop();
  fleet->Stop();
  for (const FleetTarget& target : targets) {
    std::unique_ptr<HttpClient> client;
    ASSERT_TRUE(HttpClient::Create("http://" + target.address, HttpClientOptions{}, &client).ok());
    HttpClientResponse response;
    EXPECT_FALSE(client->Get("/metrics", {}, &response).ok()) << target.address << " still answers";
  }
}

TEST_F(FleetRunnerTest, BadInputsAreRefusedWithTheirReasonAndNothingKeepsRunning) {
  Status status;
  FleetOptions missing = Options(2, std::chrono::seconds(60));
  missing.description.groups[1].scenario = dir_ + "/nope.yaml";
  EXPECT_EQ(FleetRunner::Start(missing, &status), nullptr);
  EXPECT_THAT(status.message(), HasSubstr("nope.yaml"));

  FleetOptions invalid = Options(2, std::chrono::seconds(60));
  std::ofstream(dir_ + "/bad.yaml") << "gpus: {count: 2, model: h100-sxm}\ncolour: red\n";
  invalid.description.groups[0].scenario = dir_ + "/bad.yaml";
  EXPECT_EQ(FleetRunner::Start(invalid, &status), nullptr);
  EXPECT_THAT(status.message(), HasSubstr("colour"));

  FleetOptions not_sim = Options(2, std::chrono::seconds(60));
  not_sim.nvml_library = "libm.so.6";
  EXPECT_EQ(FleetRunner::Start(not_sim, &status), nullptr);
  EXPECT_THAT(status.message(), HasSubstr("is not the gpuscope simulator"));

  FleetOptions no_groups = Options(2, std::chrono::seconds(60));
  no_groups.description.groups.clear();
  EXPECT_EQ(FleetRunner::Start(no_groups, &status), nullptr);
  EXPECT_THAT(status.message(), HasSubstr("no scenario"));
}

}  // namespace
}  // namespace gpuscope::fleet
