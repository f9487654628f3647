// The stand-in libdcgm.so.4 (sim/dcgm/), loaded with dlopen as the agent's DCGM backend loads it and
// called through function pointers typed from src/platform/dcgm/dcgm_api.h. Time is frozen
// (GPUSCOPE_SIM_TIME, moved with gpuscopeSimDcgmSetTime), so every value is deterministic; expected
// profiling values are recomputed from the simulator core's own integrals.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "sim/dcgm/dcgm_control.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "src/platform/command.h"
#include "src/platform/dcgm/dcgm_api.h"

namespace {

using gpuscope::sim::ActivityIntegrals;
using gpuscope::sim::Scenario;
using gpuscope::sim::Simulator;

std::string ScenarioPath(const char* name) { return std::string(GPUSCOPE_SIM_SCENARIO_DIR) + "/" + name; }

// A scenario file in the test's temporary directory.
std::string WriteScenario(const std::string& name, const std::string& yaml) {
  std::string path = ::testing::TempDir() + "/sim_dcgm_" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

// The entry points, resolved from the library by name with the agent's own types.
struct Dcgm {
  void* lib = nullptr;
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is a declarator here
#define GPUSCOPE_SIM_DCGM_TEST_POINTER(name, params, args) decltype(&::name) name = nullptr;
  GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_SIM_DCGM_TEST_POINTER)
#undef GPUSCOPE_SIM_DCGM_TEST_POINTER
  decltype(&::errorString) errorString = nullptr;
  decltype(&::gpuscopeSimDcgmSetTime) SetTime = nullptr;
};

template <typename F>
void Resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  ASSERT_NE(out, nullptr) << name;
}

// The library, loaded once for the whole test program (dcgmInit and dcgmShutdown count references, so
// each test starts and ends its own session).
Dcgm& Lib() {
  static Dcgm* dcgm = [] {
    auto* d = new Dcgm();
    d->lib = dlopen(GPUSCOPE_SIM_DCGM_PATH, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(d->lib, nullptr) << dlerror();
    if (d->lib == nullptr) return d;
#define GPUSCOPE_SIM_DCGM_TEST_RESOLVE(name, params, args) Resolve(d->lib, #name, d->name);
    GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_SIM_DCGM_TEST_RESOLVE)
#undef GPUSCOPE_SIM_DCGM_TEST_RESOLVE
    Resolve(d->lib, "errorString", d->errorString);
    Resolve(d->lib, gpuscope::sim::kSimDcgmSetTimeSymbol, d->SetTime);
    return d;
  }();
  return *dcgm;
}

Scenario LoadScenario(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = gpuscope::sim::ParseScenario(text.str());
  EXPECT_TRUE(std::holds_alternative<Scenario>(parsed)) << path;
  return std::holds_alternative<Scenario>(parsed) ? std::get<Scenario>(parsed) : Scenario{};
}

const std::vector<unsigned short> kProfilingFields = {
    DCGM_FI_PROF_GR_ENGINE_ACTIVE,   DCGM_FI_PROF_SM_ACTIVE,        DCGM_FI_PROF_SM_OCCUPANCY,
    DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE,      DCGM_FI_PROF_PIPE_FP64_ACTIVE,
    DCGM_FI_PROF_PIPE_FP32_ACTIVE,   DCGM_FI_PROF_PIPE_FP16_ACTIVE, DCGM_FI_PROF_PCIE_TX_BYTES,
    DCGM_FI_PROF_PCIE_RX_BYTES,      DCGM_FI_PROF_NVLINK_TX_BYTES,  DCGM_FI_PROF_NVLINK_RX_BYTES};

constexpr long long kOneSecondUs = 1000000;

class SimDcgm : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Lib().lib, nullptr);
    unsetenv("GPUSCOPE_SIM_SPEED");
    setenv("GPUSCOPE_SIM_KERNEL_LOG", "", 1);
  }
  void TearDown() override {
    while (d().dcgmShutdown() == DCGM_ST_OK) {
    }
  }

  Dcgm& d() { return Lib(); }

  // dcgmInit on `scenario` with time frozen at `t`.
  void Start(const std::string& scenario, double t) {
    setenv("GPUSCOPE_SIM_SCENARIO", scenario.c_str(), 1);
    setenv("GPUSCOPE_SIM_TIME", std::to_string(t).c_str(), 1);
    ASSERT_EQ(d().dcgmInit(), DCGM_ST_OK);
  }

  dcgmHandle_t Embedded(dcgmOperationMode_t mode = DCGM_OPERATION_MODE_AUTO) {
    dcgmHandle_t handle = 0;
    EXPECT_EQ(d().dcgmStartEmbedded(mode, &handle), DCGM_ST_OK);
    return handle;
  }

  dcgmReturn_t Connect(const char* address, dcgmHandle_t* handle, unsigned unix_socket = 0,
                       unsigned persist = 0) {
    dcgmConnectV2Params_t params{};
    params.version = dcgmConnectV2Params_version;
    params.persistAfterDisconnect = persist;
    params.timeoutMs = 1000;
    params.addressIsUnixSocket = unix_socket;
    return d().dcgmConnect_v2(address, &params, handle);
  }

  dcgmGpuGrp_t Group(dcgmHandle_t handle, const std::vector<dcgmGroupEntityPair_t>& entities) {
    dcgmGpuGrp_t group = 0;
    EXPECT_EQ(d().dcgmGroupCreate(handle, DCGM_GROUP_EMPTY, "gpuscope", &group), DCGM_ST_OK);
    for (const dcgmGroupEntityPair_t& e : entities) {
      EXPECT_EQ(d().dcgmGroupAddEntity(handle, group, e.entityGroupId, e.entityId), DCGM_ST_OK);
    }
    return group;
  }

  dcgmFieldGrp_t Fields(dcgmHandle_t handle, const std::vector<unsigned short>& fields, const char* name) {
    dcgmFieldGrp_t group = 0;
    EXPECT_EQ(d().dcgmFieldGroupCreate(handle, static_cast<int>(fields.size()), fields.data(), name, &group),
              DCGM_ST_OK);
    return group;
  }

  // Watches `fields` on `entities` every `update_us`.
  void Watch(dcgmHandle_t handle, const std::vector<dcgmGroupEntityPair_t>& entities,
             const std::vector<unsigned short>& fields, long long update_us = kOneSecondUs) {
    const dcgmGpuGrp_t group = Group(handle, entities);
    const dcgmFieldGrp_t field_group =
        Fields(handle, fields, ("fields" + std::to_string(++field_groups_)).c_str());
    ASSERT_EQ(d().dcgmWatchFields(handle, group, field_group, update_us, 3600, 0), DCGM_ST_OK);
  }

  std::vector<dcgmFieldValue_v2> Values(dcgmHandle_t handle, std::vector<dcgmGroupEntityPair_t> entities,
                                        std::vector<unsigned short> fields, unsigned flags = 0) {
    std::vector<dcgmFieldValue_v2> values(entities.size() * fields.size());
    EXPECT_EQ(d().dcgmEntitiesGetLatestValues(handle, entities.data(), static_cast<unsigned>(entities.size()),
                                              fields.data(), static_cast<unsigned>(fields.size()), flags,
                                              values.data()),
              DCGM_ST_OK);
    return values;
  }

  double Double(dcgmHandle_t handle, dcgmGroupEntityPair_t entity, unsigned short field) {
    const dcgmFieldValue_v2 v = Values(handle, {entity}, {field})[0];
    EXPECT_EQ(v.status, DCGM_ST_OK);
    EXPECT_EQ(v.fieldType, DCGM_FT_DOUBLE);
    return v.value.dbl;
  }

  std::unique_ptr<dcgmHealthResponse_t> Health(dcgmHandle_t handle, dcgmGpuGrp_t group) {
    auto response = std::make_unique<dcgmHealthResponse_t>();  // about 1 MiB: never on the stack
    response->version = dcgmHealthResponse_version;
    EXPECT_EQ(d().dcgmHealthCheck(handle, group, response.get()), DCGM_ST_OK);
    return response;
  }

  int field_groups_ = 0;
};

// The average of one activity integral over [t1, t2] of a GPU, from the simulator core: what the stand-in
// must report for an interval of a watch.
double ExpectedAverage(const std::string& scenario_path, unsigned gpu, double t1, double t2,
                       double ActivityIntegrals::*field) {
  Simulator sim(LoadScenario(scenario_path), {.speed = 1, .start_offset = 0, .frozen = 0.0});
  const double a = sim.StateAt(gpu, t1).integrals.*field;
  const double b = sim.StateAt(gpu, t2).integrals.*field;
  return (b - a) / (t2 - t1);
}

// --- The library itself ---

TEST(SimDcgmLibrary, ExportsExactlyTheAgentsDcgmEntryPointsAndTheTimeControl) {
  const gpuscope::CommandResult nm =
      gpuscope::RunCommandWithTimeout({GPUSCOPE_NM, "-D", "--defined-only", GPUSCOPE_SIM_DCGM_PATH},
                                      std::chrono::seconds(60), size_t{1} << 20);
  ASSERT_TRUE(nm.status.ok()) << nm.status.ToString() << nm.error;
  std::set<std::string> exported;
  static const std::regex kSymbol(R"(^[0-9a-f]+ (\S) (\S+)$)");
  std::istringstream lines(nm.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kSymbol) && m[1] != "A") exported.insert(m[2]);
  }
  std::set<std::string> expected = {"errorString", "gpuscopeSimDcgmSetTime"};
#define GPUSCOPE_SIM_DCGM_TEST_NAME(name, params, args) expected.insert(#name);
  GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_SIM_DCGM_TEST_NAME)
#undef GPUSCOPE_SIM_DCGM_TEST_NAME
  EXPECT_EQ(exported, expected);
}

// --- Init, shutdown, errors ---

TEST_F(SimDcgm, CallsBeforeInitAreUninitializedAndErrorStringIsNeverNull) {
  dcgmHandle_t handle = 0;
  EXPECT_EQ(d().dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &handle), DCGM_ST_UNINITIALIZED);
  EXPECT_EQ(Connect("localhost", &handle), DCGM_ST_UNINITIALIZED);
  EXPECT_EQ(d().dcgmProfPause(1), DCGM_ST_UNINITIALIZED);
  EXPECT_EQ(d().dcgmShutdown(), DCGM_ST_UNINITIALIZED);
  for (int code = 1; code >= -60; --code) {
    const char* text = d().errorString(static_cast<dcgmReturn_t>(code));
    ASSERT_NE(text, nullptr) << code;
    EXPECT_GT(std::strlen(text), 0u) << code;
  }
  EXPECT_STREQ(d().errorString(DCGM_ST_OK), "Success");
  EXPECT_STRNE(d().errorString(DCGM_ST_CONNECTION_NOT_VALID), d().errorString(DCGM_ST_BADPARAM));
}

TEST_F(SimDcgm, InitWithoutAScenarioIsAnInitError) {
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  EXPECT_EQ(d().dcgmInit(), DCGM_ST_INIT_ERROR);
  setenv("GPUSCOPE_SIM_SCENARIO", "/nonexistent/scenario.yaml", 1);
  EXPECT_EQ(d().dcgmInit(), DCGM_ST_INIT_ERROR);
}

TEST_F(SimDcgm, InitAndShutdownAreReferenceCountedAndHandlesDieWithTheLastShutdown) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  ASSERT_EQ(d().dcgmInit(), DCGM_ST_OK);
  const dcgmHandle_t handle = Embedded();
  ASSERT_EQ(d().dcgmShutdown(), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmProfPause(handle), DCGM_ST_OK);  // one reference left
  ASSERT_EQ(d().dcgmShutdown(), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmProfPause(handle), DCGM_ST_UNINITIALIZED);
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  EXPECT_EQ(d().dcgmProfPause(handle), DCGM_ST_BADPARAM);  // handles are never reused
  EXPECT_NE(Embedded(), handle);
}

// --- Devices and identities ---

TEST_F(SimDcgm, GpuIdsAreNvmlIndicesAndUuidsAreTheNvmlSimulatorsOwn) {
  const std::string path = ScenarioPath("a100-dcgm.yaml");
  Start(path, 10);
  const dcgmHandle_t h = Embedded();
  unsigned ids[DCGM_MAX_NUM_DEVICES] = {};
  int count = 0;
  ASSERT_EQ(d().dcgmGetAllSupportedDevices(h, ids, &count), DCGM_ST_OK);
  ASSERT_EQ(count, 4);
  Simulator sim(LoadScenario(path), {.speed = 1, .start_offset = 0, .frozen = 10.0});
  for (unsigned g = 0; g < 4; ++g) {
    EXPECT_EQ(ids[g], g);
    const dcgmFieldValue_v2 v = Values(h, {{DCGM_FE_GPU, g}}, {DCGM_FI_DEV_UUID}, DCGM_FV_FLAG_LIVE_DATA)[0];
    EXPECT_EQ(v.status, DCGM_ST_OK);
    EXPECT_EQ(v.fieldType, DCGM_FT_STRING);
    EXPECT_EQ(std::string(v.value.str), sim.Uuid(g));
  }
  // Cached values need a watch: without one, DCGM has none.
  dcgmFieldValue_v2 v = Values(h, {{DCGM_FE_GPU, 1}}, {DCGM_FI_DEV_UUID})[0];
  EXPECT_EQ(v.status, DCGM_ST_NOT_WATCHED);
  EXPECT_STREQ(v.value.str, "<<<NULL>>>");
  Watch(h, {{DCGM_FE_GPU, 1}}, {DCGM_FI_DEV_UUID});
  v = Values(h, {{DCGM_FE_GPU, 1}}, {DCGM_FI_DEV_UUID})[0];
  EXPECT_EQ(v.status, DCGM_ST_OK);
  EXPECT_EQ(std::string(v.value.str), sim.Uuid(1));
}

// --- Profiling fields ---

TEST_F(SimDcgm, TrainingProfilingValuesAverageTheLastCompletedWatchInterval) {
  const std::string path = ScenarioPath("a100-dcgm.yaml");
  Start(path, 30);
  const dcgmHandle_t h = Embedded();
  const std::vector<dcgmGroupEntityPair_t> gpus = {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 3}};
  Watch(h, gpus, kProfilingFields);

  // Before the first interval ends: blank values, status OK, as DCGM.
  for (double t : {30.0, 30.9}) {
    d().SetTime(t);
    for (const dcgmFieldValue_v2& v : Values(h, gpus, kProfilingFields)) {
      EXPECT_EQ(v.status, DCGM_ST_OK);
      if (v.fieldType == DCGM_FT_DOUBLE) {
        EXPECT_EQ(v.value.dbl, DCGM_FP64_BLANK) << v.fieldId;
      } else {
        EXPECT_EQ(v.value.i64, DCGM_INT64_BLANK) << v.fieldId;
      }
    }
  }

  d().SetTime(31.4);  // the interval [30, 31] is the last completed one
  const std::vector<dcgmFieldValue_v2> values = Values(h, gpus, kProfilingFields);
  ASSERT_EQ(values.size(), gpus.size() * kProfilingFields.size());
  for (size_t e = 0; e < gpus.size(); ++e) {
    for (size_t f = 0; f < kProfilingFields.size(); ++f) {
      const dcgmFieldValue_v2& v = values[e * kProfilingFields.size() + f];  // entity-major
      EXPECT_EQ(v.version, dcgmFieldValue_version2);
      EXPECT_EQ(v.entityGroupId, DCGM_FE_GPU);
      EXPECT_EQ(v.entityId, gpus[e].entityId);
      EXPECT_EQ(v.fieldId, kProfilingFields[f]);
      EXPECT_EQ(v.status, DCGM_ST_OK);
      EXPECT_GT(v.ts, 1600000000LL * 1000000);
      if (v.fieldId <= DCGM_FI_PROF_PIPE_FP16_ACTIVE) {
        EXPECT_EQ(v.fieldType, DCGM_FT_DOUBLE);
        EXPECT_GE(v.value.dbl, 0) << v.fieldId;
        EXPECT_LE(v.value.dbl, 1) << v.fieldId;
      } else {
        EXPECT_EQ(v.fieldType, DCGM_FT_INT64);
        EXPECT_GT(v.value.i64, 0) << v.fieldId;
        EXPECT_LT(v.value.i64, 1000LL * 1000 * 1000 * 1000) << v.fieldId;  // below 1 TB/s
      }
    }
  }
  const dcgmGroupEntityPair_t gpu0 = gpus[0];
  const double gr = Double(h, gpu0, DCGM_FI_PROF_GR_ENGINE_ACTIVE);
  EXPECT_GT(gr, 0.5);  // training: mostly busy
  EXPECT_LE(gr, 1);
  EXPECT_GT(Double(h, gpu0, DCGM_FI_PROF_SM_ACTIVE), 0);
  EXPECT_GT(Double(h, gpu0, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), 0);
  EXPECT_LT(Double(h, gpu0, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), gr);
  EXPECT_LT(Double(h, gpu0, DCGM_FI_PROF_SM_ACTIVE), gr);
  EXPECT_EQ(Double(h, gpu0, DCGM_FI_PROF_PIPE_FP64_ACTIVE), 0);  // training runs in half precision
  EXPECT_NEAR(gr, ExpectedAverage(path, 0, 30, 31, &ActivityIntegrals::util), 1e-9);
  EXPECT_NEAR(Double(h, gpu0, DCGM_FI_PROF_DRAM_ACTIVE),
              ExpectedAverage(path, 0, 30, 31, &ActivityIntegrals::dram), 1e-9);
  const dcgmFieldValue_v2 rx = Values(h, {gpu0}, {DCGM_FI_PROF_PCIE_RX_BYTES})[0];
  EXPECT_NEAR(static_cast<double>(rx.value.i64),
              ExpectedAverage(path, 0, 30, 31, &ActivityIntegrals::pcie_rx_bytes), 1);

  // The next interval's value carries a timestamp one interval later.
  d().SetTime(32.2);
  const dcgmFieldValue_v2 rx2 = Values(h, {gpu0}, {DCGM_FI_PROF_PCIE_RX_BYTES})[0];
  EXPECT_EQ(rx2.ts - rx.ts, kOneSecondUs);
}

TEST_F(SimDcgm, UnwatchedProfilingFieldsAreBlankWithNotWatched) {
  Start(ScenarioPath("a100-dcgm.yaml"), 30);
  const dcgmHandle_t h = Embedded();
  Watch(h, {{DCGM_FE_GPU, 0}}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_PCIE_TX_BYTES});
  d().SetTime(35);
  // Another field on the same GPU, and the same field on another GPU.
  const auto values =
      Values(h, {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 1}},
             {DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_NVLINK_RX_BYTES});
  EXPECT_EQ(values[0].status, DCGM_ST_NOT_WATCHED);
  EXPECT_EQ(values[0].value.dbl, DCGM_FP64_BLANK);
  EXPECT_EQ(values[1].status, DCGM_ST_OK);
  EXPECT_NE(values[1].value.dbl, DCGM_FP64_BLANK);
  EXPECT_EQ(values[2].status, DCGM_ST_NOT_WATCHED);
  EXPECT_EQ(values[2].value.i64, DCGM_INT64_BLANK);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(values[i].status, DCGM_ST_NOT_WATCHED) << i;
  // Live data does not apply to profiling fields.
  EXPECT_EQ(Values(h, {{DCGM_FE_GPU, 1}}, {DCGM_FI_PROF_SM_ACTIVE}, DCGM_FV_FLAG_LIVE_DATA)[0].status,
            DCGM_ST_NOT_WATCHED);
  // After an unwatch, the field is not watched any more.
  const dcgmGpuGrp_t group = Group(h, {{DCGM_FE_GPU, 0}});
  const dcgmFieldGrp_t fields = Fields(h, {DCGM_FI_PROF_GR_ENGINE_ACTIVE}, "gr");
  ASSERT_EQ(d().dcgmUnwatchFields(h, group, fields), DCGM_ST_OK);
  EXPECT_EQ(Values(h, {{DCGM_FE_GPU, 0}}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE})[0].status, DCGM_ST_NOT_WATCHED);
}

TEST_F(SimDcgm, InferenceProfilingValuesFollowTheLoad) {
  const std::string path = ScenarioPath("a100-inference.yaml");
  Start(path, 600);
  const dcgmHandle_t h = Embedded();
  const dcgmGroupEntityPair_t gpu{DCGM_FE_GPU, 2};
  Watch(h, {gpu}, kProfilingFields, 5 * kOneSecondUs);
  d().SetTime(612);  // last interval: [605, 610]
  const double gr = Double(h, gpu, DCGM_FI_PROF_GR_ENGINE_ACTIVE);
  EXPECT_GT(gr, 0);
  EXPECT_LE(gr, 1);
  EXPECT_LT(Double(h, gpu, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), gr);
  EXPECT_GT(Double(h, gpu, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), 0);
  EXPECT_NEAR(gr, ExpectedAverage(path, 2, 605, 610, &ActivityIntegrals::util), 1e-9);
  EXPECT_GT(Values(h, {gpu}, {DCGM_FI_PROF_PCIE_RX_BYTES})[0].value.i64, 0);
}

TEST_F(SimDcgm, ManualModeSamplesOnlyWhenUpdateAllFieldsIsCalled) {
  Start(ScenarioPath("a100-dcgm.yaml"), 30);
  const dcgmHandle_t h = Embedded(DCGM_OPERATION_MODE_MANUAL);
  const dcgmGroupEntityPair_t gpu{DCGM_FE_GPU, 0};
  Watch(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE});
  d().SetTime(33.5);
  EXPECT_EQ(Double(h, gpu, DCGM_FI_PROF_GR_ENGINE_ACTIVE), DCGM_FP64_BLANK);
  ASSERT_EQ(d().dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
  const dcgmFieldValue_v2 v = Values(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE})[0];
  EXPECT_NE(v.value.dbl, DCGM_FP64_BLANK);
  d().SetTime(40);  // no update since: still the interval [32, 33]
  EXPECT_EQ(Values(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE})[0].ts, v.ts);
}

// --- MIG ---

TEST_F(SimDcgm, GpuInstanceHierarchyListsTheScenariosInstances) {
  const std::string path = ScenarioPath("a100-mig.yaml");
  Start(path, 10);
  const dcgmHandle_t h = Embedded();
  auto hierarchy = std::make_unique<dcgmMigHierarchy_v2>();
  hierarchy->version = dcgmMigHierarchy_version2 + 1;
  EXPECT_EQ(d().dcgmGetGpuInstanceHierarchy(h, hierarchy.get()), DCGM_ST_VER_MISMATCH);
  hierarchy->version = dcgmMigHierarchy_version2;
  ASSERT_EQ(d().dcgmGetGpuInstanceHierarchy(h, hierarchy.get()), DCGM_ST_OK);
  ASSERT_EQ(hierarchy->count, 16u);  // GPUs 0 and 1: four GPU instances, each with its compute instance
  Simulator sim(LoadScenario(path), {.speed = 1, .start_offset = 0, .frozen = 10.0});
  const unsigned instance_ids[] = {1, 5, 13, 14};
  const unsigned slices[] = {3, 2, 1, 1};
  const unsigned gi_profiles[] = {3, 2, 1, 1};      // DcgmMigProfileGpuInstanceSlice3, 2, 1, 1
  const unsigned ci_profiles[] = {32, 31, 30, 30};  // DcgmMigProfileComputeInstanceSlice3, 2, 1, 1
  for (unsigned i = 0; i < hierarchy->count; ++i) {
    const dcgmMigHierarchyInfo_v2& e = hierarchy->entityList[i];
    const unsigned gpu = i / 8;
    const unsigned pos = (i % 8) / 2;
    const bool ci = i % 2 == 1;
    SCOPED_TRACE(i);
    EXPECT_EQ(e.entity.entityGroupId, ci ? DCGM_FE_GPU_CI : DCGM_FE_GPU_I);
    EXPECT_EQ(e.entity.entityId, gpu * 8 + pos);
    EXPECT_EQ(e.parent.entityGroupId, ci ? DCGM_FE_GPU_I : DCGM_FE_GPU);
    EXPECT_EQ(e.parent.entityId, ci ? gpu * 8 + pos : gpu);
    EXPECT_EQ(std::string(e.info.gpuUuid), sim.Uuid(gpu));
    EXPECT_EQ(e.info.nvmlGpuIndex, gpu);
    EXPECT_EQ(e.info.nvmlInstanceId, instance_ids[pos]);
    EXPECT_EQ(e.info.nvmlComputeInstanceId, ci ? 0u : 0xFFFFFFFFu);
    EXPECT_EQ(e.info.nvmlProfileSlices, slices[pos]);
    EXPECT_EQ(e.info.nvmlMigProfileId, ci ? ci_profiles[pos] : gi_profiles[pos]);
  }
}

TEST_F(SimDcgm, GpuInstanceValuesScaleWithTheInstancesLoadAndTheGpuWithItsSlices) {
  Start(ScenarioPath("a100-mig.yaml"), 120);
  const dcgmHandle_t h = Embedded();
  // GPU 0: 3g.40gb (load 1), 2g.20gb (load 1), 1g.10gb (load 0.6), 1g.10gb (load 0).
  const std::vector<dcgmGroupEntityPair_t> entities = {
      {DCGM_FE_GPU, 0}, {DCGM_FE_GPU_I, 0}, {DCGM_FE_GPU_I, 1}, {DCGM_FE_GPU_I, 2}, {DCGM_FE_GPU_I, 3}};
  Watch(h, entities, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_PCIE_RX_BYTES});
  d().SetTime(122.5);
  std::vector<double> gr;
  gr.reserve(entities.size());
  for (const dcgmGroupEntityPair_t& e : entities) gr.push_back(Double(h, e, DCGM_FI_PROF_GR_ENGINE_ACTIVE));
  ASSERT_GT(gr[1], 0);
  EXPECT_DOUBLE_EQ(gr[2], gr[1]);
  EXPECT_NEAR(gr[3] / gr[1], 0.6, 1e-12);
  EXPECT_EQ(gr[4], 0);
  EXPECT_NEAR(gr[0] / gr[1], (3 * 1.0 + 2 * 1.0 + 1 * 0.6 + 1 * 0.0) / 7, 1e-12);  // the slice-weighted sum
  const auto rx = Values(h, {entities[1], entities[3]}, {DCGM_FI_PROF_PCIE_RX_BYTES});
  EXPECT_NEAR(static_cast<double>(rx[1].value.i64) / static_cast<double>(rx[0].value.i64), 0.6, 1e-6);
}

// --- Pause ---

TEST_F(SimDcgm, PauseBlanksProfilingValuesAndResumeRestoresThem) {
  Start(ScenarioPath("a100-dcgm.yaml"), 30);
  const dcgmHandle_t h = Embedded();
  const dcgmGroupEntityPair_t gpu{DCGM_FE_GPU, 0};
  Watch(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FI_DEV_UUID});
  d().SetTime(33);
  const auto before =
      Values(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FI_DEV_UUID});
  ASSERT_NE(before[0].value.dbl, DCGM_FP64_BLANK);
  ASSERT_EQ(d().dcgmProfPause(h), DCGM_ST_OK);
  ASSERT_EQ(d().dcgmProfPause(h), DCGM_ST_OK);  // already paused: fine
  const auto paused =
      Values(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FI_DEV_UUID});
  EXPECT_EQ(paused[0].status, DCGM_ST_OK);
  EXPECT_EQ(paused[0].value.dbl, DCGM_FP64_BLANK);
  EXPECT_EQ(paused[1].status, DCGM_ST_OK);
  EXPECT_EQ(paused[1].value.i64, DCGM_INT64_BLANK);
  EXPECT_STREQ(paused[2].value.str, before[2].value.str);  // only profiling fields pause
  ASSERT_EQ(d().dcgmProfResume(h), DCGM_ST_OK);
  ASSERT_EQ(d().dcgmProfResume(h), DCGM_ST_OK);
  const auto resumed = Values(h, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_NVLINK_TX_BYTES});
  EXPECT_EQ(resumed[0].value.dbl, before[0].value.dbl);
  EXPECT_EQ(resumed[1].value.i64, before[1].value.i64);
}

// --- Health ---

TEST_F(SimDcgm, HealthReportsTheScenariosFaultsOnlyForWatchedSystems) {
  Start(ScenarioPath("a100-dcgm.yaml"), 30);
  const dcgmHandle_t h = Embedded();
  const dcgmGpuGrp_t group =
      Group(h, {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 1}, {DCGM_FE_GPU, 2}, {DCGM_FE_GPU, 3}});

  // No health watches yet: nothing to report.
  EXPECT_EQ(Health(h, group)->incidentCount, 0u);

  // GPU 2's corrupt InfoROM, but only the memory and PCIe systems watched; the DBE comes at 60 s.
  ASSERT_EQ(d().dcgmHealthSet(
                h, group, static_cast<dcgmHealthSystems_t>(DCGM_HEALTH_WATCH_MEM | DCGM_HEALTH_WATCH_PCIE)),
            DCGM_ST_OK);
  auto r = Health(h, group);
  EXPECT_EQ(r->incidentCount, 0u);
  EXPECT_EQ(r->overallHealth, DCGM_HEALTH_RESULT_PASS);

  ASSERT_EQ(d().dcgmHealthSet(h, group, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
  r = Health(h, group);
  ASSERT_EQ(r->incidentCount, 1u);
  EXPECT_EQ(r->overallHealth, DCGM_HEALTH_RESULT_WARN);
  EXPECT_EQ(r->incidents[0].system, DCGM_HEALTH_WATCH_INFOROM);
  EXPECT_EQ(r->incidents[0].health, DCGM_HEALTH_RESULT_WARN);
  EXPECT_EQ(r->incidents[0].error.code, 9u);  // DCGM_FR_CORRUPT_INFOROM
  EXPECT_NE(std::string(r->incidents[0].error.msg).find("GPU 2"), std::string::npos);
  EXPECT_EQ(r->incidents[0].entityInfo.entityGroupId, DCGM_FE_GPU);
  EXPECT_EQ(r->incidents[0].entityInfo.entityId, 2u);

  d().SetTime(61);
  r = Health(h, group);
  ASSERT_EQ(r->incidentCount, 2u);
  EXPECT_EQ(r->overallHealth, DCGM_HEALTH_RESULT_FAIL);
  EXPECT_EQ(r->incidents[0].system, DCGM_HEALTH_WATCH_MEM);  // GPUs in group order
  EXPECT_EQ(r->incidents[0].health, DCGM_HEALTH_RESULT_FAIL);
  EXPECT_EQ(r->incidents[0].error.code, 4u);  // DCGM_FR_VOLATILE_DBE_DETECTED
  EXPECT_STREQ(r->incidents[0].error.msg, "Detected 1 volatile double-bit ECC error(s) in GPU 1.");
  EXPECT_EQ(r->incidents[0].entityInfo.entityId, 1u);

  // The DBE without the memory watch, the InfoROM without its own.
  ASSERT_EQ(d().dcgmHealthSet(h, group, static_cast<dcgmHealthSystems_t>(DCGM_HEALTH_WATCH_INFOROM)),
            DCGM_ST_OK);
  r = Health(h, group);
  ASSERT_EQ(r->incidentCount, 1u);
  EXPECT_EQ(r->incidents[0].system, DCGM_HEALTH_WATCH_INFOROM);
  ASSERT_EQ(d().dcgmHealthSet(h, group, DCGM_HEALTH_WATCH_MEM), DCGM_ST_OK);
  r = Health(h, group);
  ASSERT_EQ(r->incidentCount, 1u);
  EXPECT_EQ(r->incidents[0].system, DCGM_HEALTH_WATCH_MEM);

  // A group of other GPUs sees neither.
  const dcgmGpuGrp_t healthy = Group(h, {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 3}});
  ASSERT_EQ(d().dcgmHealthSet(h, healthy, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
  EXPECT_EQ(Health(h, healthy)->overallHealth, DCGM_HEALTH_RESULT_PASS);
}

TEST_F(SimDcgm, HealthReportsPcieNvlinkPowerAndLostGpus) {
  const std::string path = WriteScenario("health", R"(
gpus: {count: 4, model: h100, workload: {type: training}}
faults:
  - {type: pcie_degraded, gpu: 0, from: 10, to: 100}
  - {type: nvlink_crc, gpu: 1, link: 7, rate: 50, from: 10, to: 100}
  - {type: power_brake, gpu: 2, from: 10, to: 100}
  - {type: fall_off_bus, gpu: 3, at: 10}
)");
  Start(path, 70);
  const dcgmHandle_t h = Embedded();
  const dcgmGpuGrp_t group =
      Group(h, {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 1}, {DCGM_FE_GPU, 2}, {DCGM_FE_GPU, 3}});
  ASSERT_EQ(d().dcgmHealthSet(h, group, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
  auto r = Health(h, group);
  std::multiset<std::pair<unsigned, unsigned>> seen;  // (GPU, dcgmError_t)
  for (unsigned i = 0; i < r->incidentCount; ++i) {
    seen.insert({r->incidents[i].entityInfo.entityId, r->incidents[i].error.code});
  }
  EXPECT_EQ(seen, (std::multiset<std::pair<unsigned, unsigned>>{{0, 3},
                                                                {0, 45},
                                                                {0, 46},  // replay rate, generation, width
                                                                {1, 13},  // NVLink errors
                                                                {2, 12},  // power brake
                                                                {3, 101}}));  // fallen off the bus (XID 79)
  EXPECT_EQ(r->overallHealth, DCGM_HEALTH_RESULT_FAIL);
  // The lost GPU's profiling values say so.
  Watch(h, {{DCGM_FE_GPU, 3}}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE});
  d().SetTime(75);
  EXPECT_EQ(Values(h, {{DCGM_FE_GPU, 3}}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE})[0].status, DCGM_ST_GPU_IS_LOST);
}

// --- Versions ---

TEST_F(SimDcgm, StructVersionsAreChecked) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  const dcgmHandle_t h = Embedded();
  const dcgmGpuGrp_t group = Group(h, {{DCGM_FE_GPU, 0}});
  auto response = std::make_unique<dcgmHealthResponse_t>();
  response->version = MAKE_DCGM_VERSION(dcgmHealthResponse_v5, 4);
  EXPECT_EQ(d().dcgmHealthCheck(h, group, response.get()), DCGM_ST_VER_MISMATCH);
  auto hierarchy = std::make_unique<dcgmMigHierarchy_v2>();
  hierarchy->version = MAKE_DCGM_VERSION(dcgmMigHierarchy_v2, 1);
  EXPECT_EQ(d().dcgmGetGpuInstanceHierarchy(h, hierarchy.get()), DCGM_ST_VER_MISMATCH);
  dcgmConnectV2Params_t params{};
  params.version = MAKE_DCGM_VERSION(dcgmConnectV2Params_v2, 1);
  dcgmHandle_t connection = 0;
  EXPECT_EQ(d().dcgmConnect_v2("localhost", &params, &connection), DCGM_ST_VER_MISMATCH);
}

// --- Groups and field groups ---

TEST_F(SimDcgm, BadGroupsEntitiesAndFieldGroupsAreRefusedAsDcgmDocuments) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  const dcgmHandle_t h = Embedded();
  const dcgmGpuGrp_t group = Group(h, {{DCGM_FE_GPU, 0}});
  const dcgmFieldGrp_t fields = Fields(h, {DCGM_FI_PROF_SM_ACTIVE}, "sm");
  const dcgmGpuGrp_t missing = group + 100;
  EXPECT_EQ(d().dcgmGroupAddEntity(h, missing, DCGM_FE_GPU, 1), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmGroupDestroy(h, missing), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmWatchFields(h, missing, fields, kOneSecondUs, 0, 0), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmHealthSet(h, missing, DCGM_HEALTH_WATCH_ALL), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmGroupAddEntity(h, group, DCGM_FE_GPU, 4), DCGM_ST_BADPARAM);    // no GPU 4
  EXPECT_EQ(d().dcgmGroupAddEntity(h, group, DCGM_FE_GPU_I, 0), DCGM_ST_BADPARAM);  // no MIG here
  EXPECT_EQ(d().dcgmGroupAddEntity(h, group, DCGM_FE_SWITCH, 0), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmGroupAddEntity(h, group, DCGM_FE_GPU, 0), DCGM_ST_BADPARAM);  // already in it
  EXPECT_EQ(d().dcgmWatchFields(h, group, fields + 100, kOneSecondUs, 0, 0), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmWatchFields(h, group, fields, 0, 0, 0), DCGM_ST_BADPARAM);
  dcgmFieldGrp_t other = 0;
  const unsigned short unknown[] = {9999};
  EXPECT_EQ(d().dcgmFieldGroupCreate(h, 1, unknown, "unknown", &other), DCGM_ST_BADPARAM);
  const unsigned short sm[] = {DCGM_FI_PROF_SM_ACTIVE};
  EXPECT_EQ(d().dcgmFieldGroupCreate(h, 0, sm, "empty", &other), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmFieldGroupCreate(h, 1, sm, "sm", &other), DCGM_ST_DUPLICATE_KEY);
  EXPECT_EQ(d().dcgmFieldGroupDestroy(h, fields), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmFieldGroupDestroy(h, fields), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmFieldGroupCreate(h, 1, sm, "sm", &other), DCGM_ST_OK);  // the name is free again
  EXPECT_EQ(d().dcgmGroupDestroy(h, group), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmGroupDestroy(h, group), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmGroupCreate(h, DCGM_GROUP_EMPTY, nullptr, &other), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmProfPause(h + 1000), DCGM_ST_BADPARAM);  // a handle never issued
  // DCGM's limit of 64 groups per engine.
  dcgmGpuGrp_t g = 0;
  dcgmReturn_t last = DCGM_ST_OK;
  for (int i = 0; i < 70 && last == DCGM_ST_OK; ++i)
    last = d().dcgmGroupCreate(h, DCGM_GROUP_DEFAULT, "many", &g);
  EXPECT_EQ(last, DCGM_ST_MAX_LIMIT);
}

// --- The host engine ---

TEST_F(SimDcgm, ConnectFailsWithoutAHostEngineInTheScenario) {
  Start(ScenarioPath("a100-mig.yaml"), 10);
  dcgmHandle_t h = 0;
  EXPECT_EQ(Connect("localhost:5555", &h), DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_NE(Embedded(), 0u);  // the embedded engine always starts
}

TEST_F(SimDcgm, ConnectReachesTheHostEngineOnlyAtItsAddress) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  dcgmHandle_t h = 0;
  for (const char* address : {"localhost:5555", "localhost", "127.0.0.1", "127.0.0.1:5555", "LOCALHOST"}) {
    EXPECT_EQ(Connect(address, &h), DCGM_ST_OK) << address;
    EXPECT_EQ(d().dcgmDisconnect(h), DCGM_ST_OK) << address;
  }
  for (const char* address : {"localhost:5556", "10.1.2.3", "gpu-node-01:5555"}) {
    EXPECT_EQ(Connect(address, &h), DCGM_ST_CONNECTION_NOT_VALID) << address;
  }
  EXPECT_EQ(Connect("/run/nvidia-dcgm.sock", &h, 1), DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_EQ(Connect("", &h), DCGM_ST_BADPARAM);
  EXPECT_EQ(Connect("localhost:99999", &h), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmConnect_v2("localhost", nullptr, &h), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmDisconnect(h + 1000), DCGM_ST_BADPARAM);
}

TEST_F(SimDcgm, UnixSocketHostEngineNeedsTheSocketFlagAndItsPath) {
  const std::string path = WriteScenario("unix", R"(
dcgm: {hostengine: true, address: "unix:/run/nvidia-dcgm/hostengine.sock"}
gpus: [{model: h100}]
)");
  Start(path, 10);
  dcgmHandle_t h = 0;
  EXPECT_EQ(Connect("/run/nvidia-dcgm/hostengine.sock", &h, 1), DCGM_ST_OK);
  EXPECT_EQ(Connect("unix:/run/nvidia-dcgm/hostengine.sock", &h, 1), DCGM_ST_OK);
  EXPECT_EQ(Connect("/run/nvidia-dcgm/hostengine.sock", &h, 0), DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_EQ(Connect("/run/other.sock", &h, 1), DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_EQ(Connect("localhost:5555", &h), DCGM_ST_CONNECTION_NOT_VALID);
}

TEST_F(SimDcgm, HostEngineRestartInvalidatesConnectionsForGoodAndForgetsTheirState) {
  Start(ScenarioPath("a100-dcgm.yaml"), 80);  // nv-hostengine is down from 90 s to 100 s
  dcgmHandle_t old_handle = 0;
  ASSERT_EQ(Connect("localhost:5555", &old_handle), DCGM_ST_OK);
  const dcgmGroupEntityPair_t gpu{DCGM_FE_GPU, 0};
  const dcgmGpuGrp_t group = Group(old_handle, {gpu});
  const dcgmFieldGrp_t fields = Fields(old_handle, {DCGM_FI_PROF_GR_ENGINE_ACTIVE}, "gr");
  ASSERT_EQ(d().dcgmWatchFields(old_handle, group, fields, kOneSecondUs, 0, 0), DCGM_ST_OK);
  ASSERT_EQ(d().dcgmProfPause(old_handle), DCGM_ST_OK);

  d().SetTime(95);
  dcgmHandle_t h = 0;
  EXPECT_EQ(Connect("localhost:5555", &h), DCGM_ST_CONNECTION_NOT_VALID);
  std::vector<dcgmFieldValue_v2> values(1);
  dcgmGroupEntityPair_t entities[] = {gpu};
  unsigned short field_ids[] = {DCGM_FI_PROF_GR_ENGINE_ACTIVE};
  EXPECT_EQ(d().dcgmEntitiesGetLatestValues(old_handle, entities, 1, field_ids, 1, 0, values.data()),
            DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_EQ(d().dcgmProfResume(old_handle), DCGM_ST_CONNECTION_NOT_VALID);
  EXPECT_EQ(d().dcgmGroupCreate(old_handle, DCGM_GROUP_EMPTY, "x", &h), DCGM_ST_CONNECTION_NOT_VALID);
  auto response = std::make_unique<dcgmHealthResponse_t>();
  response->version = dcgmHealthResponse_version;
  EXPECT_EQ(d().dcgmHealthCheck(old_handle, group, response.get()), DCGM_ST_CONNECTION_NOT_VALID);

  // Back up: the old connection stays broken, even were time to go back; a new one works.
  d().SetTime(101);
  EXPECT_EQ(d().dcgmUpdateAllFields(old_handle, 1), DCGM_ST_CONNECTION_NOT_VALID);
  d().SetTime(85);
  EXPECT_EQ(d().dcgmUpdateAllFields(old_handle, 1), DCGM_ST_CONNECTION_NOT_VALID);
  d().SetTime(101);
  dcgmHandle_t fresh = 0;
  ASSERT_EQ(Connect("localhost:5555", &fresh), DCGM_ST_OK);
  EXPECT_NE(fresh, old_handle);
  // The restarted host engine has forgotten the groups, field groups and watches, and is not paused.
  EXPECT_EQ(d().dcgmGroupDestroy(fresh, group), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(Values(fresh, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE})[0].status, DCGM_ST_NOT_WATCHED);
  Watch(fresh, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE});
  d().SetTime(102.5);
  EXPECT_GT(Double(fresh, gpu, DCGM_FI_PROF_GR_ENGINE_ACTIVE), 0);
  EXPECT_EQ(d().dcgmDisconnect(old_handle), DCGM_ST_OK);  // released
  EXPECT_EQ(d().dcgmDisconnect(old_handle), DCGM_ST_BADPARAM);
}

TEST_F(SimDcgm, ConnectionsShareTheHostEngineAndADisconnectDropsWhatItMade) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  dcgmHandle_t a = 0, b = 0, kept = 0;
  ASSERT_EQ(Connect("localhost", &a), DCGM_ST_OK);
  ASSERT_EQ(Connect("localhost", &b), DCGM_ST_OK);
  ASSERT_EQ(Connect("localhost", &kept, 0, /*persist=*/1), DCGM_ST_OK);
  const dcgmGpuGrp_t of_a = Group(a, {{DCGM_FE_GPU, 0}});
  const dcgmGpuGrp_t of_kept = Group(kept, {{DCGM_FE_GPU, 1}});
  EXPECT_EQ(d().dcgmGroupAddEntity(b, of_a, DCGM_FE_GPU, 2), DCGM_ST_OK);  // one host engine, one table
  ASSERT_EQ(d().dcgmDisconnect(a), DCGM_ST_OK);
  ASSERT_EQ(d().dcgmDisconnect(kept), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmGroupAddEntity(b, of_a, DCGM_FE_GPU, 3), DCGM_ST_NOT_CONFIGURED);
  EXPECT_EQ(d().dcgmGroupAddEntity(b, of_kept, DCGM_FE_GPU, 3), DCGM_ST_OK);  // persistAfterDisconnect
}

TEST_F(SimDcgm, EmbeddedEngineKeepsItsOwnGroupsWatchesAndPause) {
  Start(ScenarioPath("a100-dcgm.yaml"), 10);
  dcgmHandle_t host = 0;
  ASSERT_EQ(Connect("localhost", &host), DCGM_ST_OK);
  const dcgmHandle_t embedded = Embedded();
  dcgmHandle_t again = 0;
  ASSERT_EQ(d().dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &again), DCGM_ST_OK);
  EXPECT_EQ(again, embedded);  // one embedded engine per process
  const dcgmGroupEntityPair_t gpu{DCGM_FE_GPU, 0};
  Watch(embedded, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE});
  Watch(host, {gpu}, {DCGM_FI_PROF_GR_ENGINE_ACTIVE});
  const dcgmGpuGrp_t host_only = Group(host, {{DCGM_FE_GPU, 3}});
  EXPECT_EQ(d().dcgmGroupDestroy(embedded, host_only), DCGM_ST_NOT_CONFIGURED);
  ASSERT_EQ(d().dcgmProfPause(host), DCGM_ST_OK);
  d().SetTime(12);
  EXPECT_EQ(Double(host, gpu, DCGM_FI_PROF_GR_ENGINE_ACTIVE), DCGM_FP64_BLANK);
  EXPECT_NE(Double(embedded, gpu, DCGM_FI_PROF_GR_ENGINE_ACTIVE), DCGM_FP64_BLANK);
  ASSERT_EQ(d().dcgmStopEmbedded(embedded), DCGM_ST_OK);
  EXPECT_EQ(d().dcgmProfResume(embedded), DCGM_ST_BADPARAM);
  EXPECT_EQ(d().dcgmStopEmbedded(embedded), DCGM_ST_UNINITIALIZED);  // none runs
  EXPECT_EQ(d().dcgmProfResume(host), DCGM_ST_OK);
}

// --- Threads ---

TEST_F(SimDcgm, EntryPointsMayBeCalledFromManyThreadsAtOnce) {
  Start(ScenarioPath("a100-dcgm.yaml"), 30);
  const dcgmHandle_t h = Embedded();
  const std::vector<dcgmGroupEntityPair_t> gpus = {{DCGM_FE_GPU, 0}, {DCGM_FE_GPU, 1}, {DCGM_FE_GPU, 2}};
  Watch(h, gpus, kProfilingFields);
  const dcgmGpuGrp_t group = Group(h, gpus);
  ASSERT_EQ(d().dcgmHealthSet(h, group, DCGM_HEALTH_WATCH_ALL), DCGM_ST_OK);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto response = std::make_unique<dcgmHealthResponse_t>();
      std::vector<dcgmFieldValue_v2> values(gpus.size() * kProfilingFields.size());
      auto entities = gpus;
      auto fields = kProfilingFields;
      for (int i = 0; i < 50; ++i) {
        if (t == 0) d().SetTime(30 + i * 0.5);
        EXPECT_EQ(d().dcgmEntitiesGetLatestValues(h, entities.data(), 3, fields.data(),
                                                  static_cast<unsigned>(fields.size()), 0, values.data()),
                  DCGM_ST_OK);
        response->version = dcgmHealthResponse_version;
        EXPECT_EQ(d().dcgmHealthCheck(h, group, response.get()), DCGM_ST_OK);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
