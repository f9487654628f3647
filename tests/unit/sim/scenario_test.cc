// The simulator's scenario parser: shipped scenarios parse, defaults and shorthand expand as documented,
// and every kind of bad input is an error that names the offending key.
#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/faults.h"

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
  for (const char* name :
       {"h100-training", "h100-allocated-idle", "h100-nvlink-crc-incident", "a100-inference", "h200-training",
        "h100-faults", "a100-mig", "a100-k8s-inference", "h100-many-processes", "h100-16gpu-training",
        "h200-nvl72-training", "a100-dcgm"}) {
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

TEST(SimScenario, DcgmSectionDefaultsToNoHostEngineOnTheDefaultPort) {
  const Scenario s = ParseOk("gpus: [{model: a100}]\n");
  EXPECT_FALSE(s.dcgm.hostengine);
  EXPECT_EQ(s.dcgm.address, "localhost:5555");
  EXPECT_FALSE(s.dcgm.endpoint.unix_socket);
  EXPECT_EQ(s.dcgm.endpoint.host, "localhost");
  EXPECT_EQ(s.dcgm.endpoint.port, 5555u);
}

TEST(SimScenario, DcgmAddressIsTcpOrAUnixSocket) {
  Scenario s = ParseOk("dcgm: {hostengine: true, address: 10.0.0.7}\ngpus: [{model: a100}]\n");
  EXPECT_TRUE(s.dcgm.hostengine);
  EXPECT_EQ(s.dcgm.endpoint.host, "10.0.0.7");
  EXPECT_EQ(s.dcgm.endpoint.port, 5555u);  // the host alone: DCGM's port
  s = ParseOk("dcgm: {hostengine: true, address: \"127.0.0.1:6000\"}\ngpus: [{model: a100}]\n");
  EXPECT_EQ(s.dcgm.endpoint,
            (DcgmEndpoint{.unix_socket = false, .host = "localhost", .port = 6000, .path = ""}));
  s = ParseOk("dcgm: {hostengine: true, address: /run/dcgm.sock}\ngpus: [{model: a100}]\n");
  EXPECT_TRUE(s.dcgm.endpoint.unix_socket);
  EXPECT_EQ(s.dcgm.endpoint.path, "/run/dcgm.sock");
  s = ParseOk("dcgm: {hostengine: true, address: \"unix:/run/dcgm.sock\"}\ngpus: [{model: a100}]\n");
  EXPECT_EQ(s.dcgm.endpoint.path, "/run/dcgm.sock");
}

TEST(SimScenario, DcgmAddressParsingTreatsLoopbackSpellingsAsOneHost) {
  EXPECT_EQ(ParseDcgmAddress("LocalHost", false), ParseDcgmAddress("127.0.0.1:5555", false));
  EXPECT_EQ(ParseDcgmAddress("[::1]:5555", false), ParseDcgmAddress("localhost", false));
  EXPECT_EQ(ParseDcgmAddress("::1", false)->host, "localhost");  // a bare IPv6 address has no port
  EXPECT_NE(ParseDcgmAddress("localhost:5556", false), ParseDcgmAddress("localhost", false));
  EXPECT_EQ(ParseDcgmAddress("/run/x.sock", true)->path, "/run/x.sock");
  for (const char* bad : {"", ":5555", "host:", "host:0", "host:65536", "host:12a", "[::1", "[::1]x"}) {
    EXPECT_FALSE(ParseDcgmAddress(bad, false)) << bad;
  }
  EXPECT_FALSE(ParseDcgmAddress("relative.sock", true));
  EXPECT_FALSE(ParseDcgmAddress("unix:", true));
}

TEST(SimScenario, DcgmErrorsNameTheOffendingKey) {
  EXPECT_NE(ParseError("dcgm: {hostengine: true, port: 5555}\ngpus: [{model: a100}]")
                .find("dcgm: unknown key 'port'"),
            std::string::npos);
  EXPECT_NE(ParseError("dcgm: {hostengine: maybe}\ngpus: [{model: a100}]").find("dcgm.hostengine"),
            std::string::npos);
  EXPECT_NE(ParseError("dcgm: {address: \"localhost:99999\"}\ngpus: [{model: a100}]").find("dcgm.address"),
            std::string::npos);
  EXPECT_NE(ParseError("dcgm: {address: \"unix:\"}\ngpus: [{model: a100}]").find("dcgm.address"),
            std::string::npos);
  EXPECT_NE(ParseError("dcgm: [hostengine]\ngpus: [{model: a100}]").find("dcgm: expected a mapping"),
            std::string::npos);
}

TEST(SimScenario, HostEngineDownIsNodeWideAndNeedsAHostEngine) {
  const Scenario s = ParseOk(R"(
dcgm: {hostengine: true}
gpus: {count: 2, model: a100}
faults:
  - {type: hostengine_down, at: 90, duration: 10}
  - {type: inforom_corrupt, gpu: 1, from: 5}
)");
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kHostEngineDown);
  EXPECT_EQ(s.faults[0].from, 90);
  EXPECT_EQ(s.faults[0].to, 100);
  EXPECT_EQ(s.faults[1].kind, FaultKind::kInforomCorrupt);
  EXPECT_EQ(s.faults[1].gpu, 1u);
  EXPECT_NE(ParseError("dcgm: {hostengine: true}\ngpus: [{model: a100}]\n"
                       "faults: [{type: hostengine_down, gpu: 0, at: 1}]")
                .find("faults[0].gpu: hostengine_down is node-wide"),
            std::string::npos);
  EXPECT_NE(ParseError("gpus: [{model: a100}]\nfaults: [{type: hostengine_down, at: 1}]")
                .find("needs a host engine"),
            std::string::npos);
  EXPECT_NE(
      ParseError("gpus: [{model: a100}]\nfaults: [{type: inforom_corrupt, at: 1}]").find("gpu is required"),
      std::string::npos);
}

TEST(SimScenario, HostEngineWindowsCountStopsAndInforomCorruptIsAnEffect) {
  const Scenario s = ParseOk(R"(
dcgm: {hostengine: true}
gpus: {count: 2, model: a100}
faults:
  - {type: hostengine_down, from: 90, to: 100}
  - {type: hostengine_down, at: 200, duration: 1}
  - {type: inforom_corrupt, gpu: 1, from: 5, to: 50}
)");
  EXPECT_FALSE(HostEngineDownAt(s, 89.9));
  EXPECT_TRUE(HostEngineDownAt(s, 90));
  EXPECT_FALSE(HostEngineDownAt(s, 100));
  EXPECT_EQ(HostEngineStopsBy(s, 89), 0u);
  EXPECT_EQ(HostEngineStopsBy(s, 150), 1u);
  EXPECT_EQ(HostEngineStopsBy(s, 201), 2u);
  EXPECT_FALSE(EffectsAt(s, 0, 10).inforom_corrupt);
  EXPECT_TRUE(EffectsAt(s, 1, 10).inforom_corrupt);
  EXPECT_FALSE(EffectsAt(s, 1, 50).inforom_corrupt);
  EXPECT_EQ(CountersAt(s, 0, 300).dbe_volatile, 0u);  // the node-wide fault is no GPU's
}

}  // namespace
}  // namespace gpuscope::sim
