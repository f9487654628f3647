// The simulator's scenario parser: shipped scenarios parse, defaults and shorthand expand as documented,
// and every kind of bad input is an error that names the offending key.
#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpuscope::sim {
namespace {

Scenario ParseOk(const std::string& yaml) {
  auto result = ParseScenario(yaml);
  if (auto* error = std::get_if<ScenarioError>(&result)) ADD_FAILURE() << error->message;
  return std::holds_alternative<Scenario>(result) ? std::get<Scenario>(result) : Scenario{};
}

std::string ParseError(const std::string& yaml) {
  auto result = ParseScenario(yaml);
  if (std::holds_alternative<Scenario>(result)) {
    ADD_FAILURE() << "parsed, expected an error: " << yaml;
    return "";
  }
  return std::get<ScenarioError>(result).message;
}

TEST(SimScenario, EveryShippedScenarioParses) {
  for (const char* name : {"h100-training", "h100-allocated-idle", "h100-nvlink-crc-incident",
                           "a100-inference", "h200-training", "h100-faults", "a100-mig", "a100-k8s-inference",
                           "h100-many-processes", "h100-16gpu-training", "h200-nvl72-training"}) {
    std::ifstream in(std::string(GPUSCOPE_SIM_SCENARIO_DIR) + "/" + name + ".yaml");
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().rfind("# ", 0), 0u) << name << " must start with a comment saying what it shows";
    auto result = ParseScenario(text.str());
    EXPECT_TRUE(std::holds_alternative<Scenario>(result))
        << name << ": " << std::get<ScenarioError>(result).message;
  }
}

TEST(SimScenario, ShorthandExpandsToCountGpusWithOverrides) {
  const Scenario s = ParseOk(R"(
seed: 5
gpus:
  count: 4
  model: h100
  workload: {type: training, memory_gib: 50}
  overrides:
    2: {workload: {type: idle}, power_limit_w: 500}
)");
  ASSERT_EQ(s.gpus.size(), 4u);
  EXPECT_EQ(s.seed, 5u);
  EXPECT_EQ(s.gpus[0].model->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.gpus[0].workload.kind, WorkloadKind::kTraining);
  EXPECT_EQ(s.gpus[0].workload.memory_gib, 50);
  EXPECT_EQ(s.gpus[0].power_limit_w, 700);  // defaults to the TDP
  EXPECT_EQ(s.gpus[2].workload.kind, WorkloadKind::kIdle);
  EXPECT_EQ(s.gpus[2].workload.processes, 0u);  // idle without memory holds no process
  EXPECT_EQ(s.gpus[2].power_limit_w, 500);
}

TEST(SimScenario, DefaultsMatchTheReadme) {
  const Scenario s = ParseOk("gpus: [{model: a100}]\n");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.driver_version, "550.90.07");
  EXPECT_EQ(s.speed, 1);
  EXPECT_EQ(s.start_offset, 0);
  EXPECT_EQ(s.gpus[0].workload.kind, WorkloadKind::kIdle);
  EXPECT_EQ(s.gpus[0].ambient_c, 30);
  EXPECT_TRUE(s.gpus[0].mig.empty());
}

TEST(SimScenario, FaultTimesAcceptAtFromToAndDuration) {
  const Scenario s = ParseOk(R"(
gpus: {count: 2, model: h100}
faults:
  - {type: xid, gpu: 1, at: 10, code: 79}
  - {type: slow_calls, gpu: 0, from: 5, to: 9, delay_ms: 100}
  - {type: sbe_burst, gpu: 0, at: 3, duration: 4, count: 10}
  - {type: pcie_degraded, gpu: 1, from: 0}
)");
  ASSERT_EQ(s.faults.size(), 4u);
  EXPECT_EQ(s.faults[0].from, 10);
  EXPECT_EQ(s.faults[0].to, kForever);
  EXPECT_EQ(s.faults[1].to, 9);
  EXPECT_EQ(s.faults[2].to, 7);
  EXPECT_EQ(s.faults[3].pcie_gen, 4u);  // one generation below the H100's Gen5
  EXPECT_EQ(s.faults[3].pcie_width, 8u);
}

TEST(SimScenario, MigInstancesResolveProfilesOfTheModel) {
  const Scenario s = ParseOk(R"(
gpus: [{model: a100, mig: [{profile: 3g.40gb, gpu_instance_id: 5}, {profile: 1g.10gb, load: 0.5}]}]
)");
  ASSERT_EQ(s.gpus[0].mig.size(), 2u);
  EXPECT_EQ(s.gpus[0].mig[0].profile->slices, 3u);
  EXPECT_EQ(s.gpus[0].mig[0].gpu_instance_id, 5u);
  EXPECT_EQ(s.gpus[0].mig[1].gpu_instance_id, 2u);  // default: position + 1
  EXPECT_EQ(s.gpus[0].mig[1].load, 0.5);
}

TEST(SimScenario, ErrorsNameTheOffendingKey) {
  EXPECT_NE(ParseError("gpus: [{model: a100, colour: red}]").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: v100}]").find("unknown model 'v100'"), std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: a100, mig: [{profile: 1g.18gb}]}]").find("unknown profile"),
            std::string::npos);
  EXPECT_NE(
      ParseError("gpus: [{model: a100, mig: [{profile: 4g.40gb}, {profile: 4g.40gb, gpu_instance_id: 9}]}]")
          .find("more than 7"),
      std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: a100, power_limit_w: 900}]").find("power_limit_w"), std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100}]\nfaults: [{type: xid, gpu: 3, at: 1, code: 13}]")
                .find("faults[0].gpu"),
            std::string::npos);
  EXPECT_NE(
      ParseError("gpus: [{model: a100}]\nfaults: [{type: nvlink_crc, gpu: 0, link: 12, rate: 1, at: 0}]")
          .find("12 links"),
      std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100}]\nfaults: [{type: meteor, gpu: 0, at: 1}]").find("meteor"),
            std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100, workload: {type: training, memory_gib: 90}}]").find("exceeds"),
            std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100, workload: {step_s: fast}}]").find("expected a number"),
            std::string::npos);
  EXPECT_NE(ParseError("seed: 1\n").find("gpus is required"), std::string::npos);
  EXPECT_NE(ParseError("just text").find("mapping"), std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: a100}\n").find("malformed YAML"), std::string::npos);
  EXPECT_NE(ParseError("").find("mapping"), std::string::npos);
}

TEST(SimScenario, ProcessMemorySharesNeedOneWeightPerProcess) {
  const Scenario ok = ParseOk(
      "gpus: [{model: h100, workload: {type: training, processes: 2, "
      "process_memory_shares: [4, 1]}}]\n");
  EXPECT_EQ(ok.gpus[0].workload.process_memory_shares, (std::vector<double>{4, 1}));
  EXPECT_NE(ParseError("gpus: [{model: h100, workload: {type: training, processes: 3, "
                       "process_memory_shares: [4, 1]}}]\n")
                .find("process_memory_shares: 2 weights for 3 processes"),
            std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100, workload: {type: training, processes: 1, "
                       "process_memory_shares: [0]}}]\n")
                .find("process_memory_shares[0]"),
            std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: h100, workload: {type: training, processes: 1, "
                       "process_memory_shares: 1}}]\n")
                .find("one per process"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscope::sim
