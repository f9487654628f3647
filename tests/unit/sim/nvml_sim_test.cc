// The simulated libnvidia-ml.so.1, driven through its C entry points as the agent drives real NVML.
// Most tests freeze simulated time (GPUSCOPE_SIM_TIME) and move it by hand (gpuscopeSimSetTime), so
// no assertion depends on wall-clock speed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/control.h"
#include "src/platform/nvml/nvml_api.h"

namespace {

std::string ScenarioPath(const char* name) { return std::string(GPUSCOPE_SIM_SCENARIO_DIR) + "/" + name; }

class SimNvml : public ::testing::Test {
 protected:
  void TearDown() override {
    while (nvmlShutdown() == NVML_SUCCESS) {
    }
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    unsetenv("GPUSCOPE_SIM_TIME");
    unsetenv("GPUSCOPE_SIM_SPEED");
    unsetenv("GPUSCOPE_SIM_KERNEL_LOG");
  }

  std::string Write(const std::string& yaml) {
    const std::string path = ::testing::TempDir() + "/sim_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                             std::to_string(files_++) + ".yaml";
    std::ofstream(path) << yaml;
    return path;
  }

  // Initialises with time frozen at t.
  void Init(const std::string& path, double t) {
    setenv("GPUSCOPE_SIM_SCENARIO", path.c_str(), 1);
    At(t);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }

  // Before Init: the frozen start time; after: moves the running simulator's time.
  static void At(double t) {
    setenv("GPUSCOPE_SIM_TIME", std::to_string(t).c_str(), 1);
    gpuscopeSimSetTime(t);
  }

  static nvmlDevice_t Dev(unsigned i) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    return d;
  }
  static unsigned Power(nvmlDevice_t d) {
    unsigned mw = 0;
    EXPECT_EQ(nvmlDeviceGetPowerUsage(d, &mw), NVML_SUCCESS);
    return mw;
  }
  static unsigned Temp(nvmlDevice_t d) {
    unsigned c = 0;
    EXPECT_EQ(nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &c), NVML_SUCCESS);
    return c;
  }
  static unsigned long long Reasons(nvmlDevice_t d) {
    unsigned long long r = 0;
    EXPECT_EQ(nvmlDeviceGetCurrentClocksEventReasons(d, &r), NVML_SUCCESS);
    return r;
  }
  static unsigned Util(nvmlDevice_t d) {
    nvmlUtilization_t u{};
    EXPECT_EQ(nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
    return u.gpu;
  }
  static unsigned long long Ecc(nvmlDevice_t d, nvmlMemoryErrorType_t type, nvmlEccCounterType_t counter) {
    unsigned long long n = 0;
    EXPECT_EQ(nvmlDeviceGetTotalEccErrors(d, type, counter, &n), NVML_SUCCESS);
    return n;
  }
  static unsigned long long Crc(nvmlDevice_t d, unsigned link) {
    unsigned long long n = 0;
    EXPECT_EQ(nvmlDeviceGetNvLinkErrorCounter(d, link, NVML_NVLINK_ERROR_DL_CRC_FLIT, &n), NVML_SUCCESS);
    return n;
  }
  static unsigned long long NvlinkTxKib(nvmlDevice_t d, unsigned link) {
    nvmlFieldValue_t f{};
    f.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    f.scopeId = link;
    EXPECT_EQ(nvmlDeviceGetFieldValues(d, 1, &f), NVML_SUCCESS);
    EXPECT_EQ(f.nvmlReturn, NVML_SUCCESS);
    return f.value.ullVal;
  }

  // Many readings of one GPU at the current simulated time.
  static std::vector<unsigned long long> Readings(nvmlDevice_t d) {
    std::vector<unsigned long long> v;
    unsigned long long energy = 0;
    nvmlDeviceGetTotalEnergyConsumption(d, &energy);
    unsigned sm = 0;
    nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &sm);
    nvmlMemory_v2_t mem{};
    mem.version = nvmlMemory_v2;
    nvmlDeviceGetMemoryInfo_v2(d, &mem);
    unsigned pcie = 0;
    nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &pcie);
    v = {Power(d), Temp(d), energy, sm, mem.used, pcie, Util(d), Reasons(d), NvlinkTxKib(d, 0)};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDeviceGetUUID(d, uuid, sizeof(uuid));
    v.push_back(std::hash<std::string>{}(uuid));
    return v;
  }

  int files_ = 0;
};

constexpr const char* kTwoTrainingGpus = R"(
seed: %SEED%
gpus: {count: 2, model: h100, workload: {type: training, step_s: 1.3}}
)";

std::string WithSeed(std::string yaml, int seed) {
  yaml.replace(yaml.find("%SEED%"), 6, std::to_string(seed));
  return yaml;
}

TEST_F(SimNvml, SameSeedAndFrozenTimeGiveIdenticalValues) {
  Init(ScenarioPath("h100-training.yaml"), 1234.5);
  const auto first = Readings(Dev(3));
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(Readings(Dev(3)), first);
}

TEST_F(SimNvml, DifferentSeedGivesDifferentValues) {
  Init(Write(WithSeed(kTwoTrainingGpus, 1)), 300);
  const auto seed1 = Readings(Dev(0));
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  Init(Write(WithSeed(kTwoTrainingGpus, 2)), 300);
  const auto seed2 = Readings(Dev(0));
  EXPECT_NE(seed1, seed2);
  EXPECT_NE(seed1.back(), seed2.back());  // the UUID
}

TEST_F(SimNvml, ValuesDoNotDependOnHowOftenOrInWhichOrderTimeWasQueried) {
  Init(Write(WithSeed(kTwoTrainingGpus, 9)), 77.7);
  const auto direct = Readings(Dev(1));
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  Init(Write(WithSeed(kTwoTrainingGpus, 9)), 0);
  for (double t : {5.0, 12.3, 40.0, 100.0}) {  // including a later time: the state replays from 0
    At(t);
    Readings(Dev(1));
  }
  At(77.7);
  EXPECT_EQ(Readings(Dev(1)), direct);
}

TEST_F(SimNvml, CountersAreMonotonic) {
  Init(ScenarioPath("h100-nvlink-crc-incident.yaml"), 0);
  nvmlDevice_t d = Dev(3);
  unsigned long long last_energy = 0, last_tx = 0, last_crc = 0, last_violation = 0, last_replay = 0;
  for (double t = 0; t < 1300; t += 13.7) {
    At(t);
    unsigned long long energy = 0;
    ASSERT_EQ(nvmlDeviceGetTotalEnergyConsumption(d, &energy), NVML_SUCCESS);
    const unsigned long long tx = NvlinkTxKib(d, 7);
    const unsigned long long crc = Crc(d, 7);
    unsigned long long replay = 0;
    ASSERT_EQ(nvmlDeviceGetNvLinkErrorCounter(d, 7, NVML_NVLINK_ERROR_DL_REPLAY, &replay), NVML_SUCCESS);
    nvmlViolationTime_t v{};
    ASSERT_EQ(nvmlDeviceGetViolationStatus(d, NVML_PERF_POLICY_TOTAL_BASE_CLOCKS, &v), NVML_SUCCESS);
    if (t > 0) {
      EXPECT_GT(energy, last_energy) << t;
    }
    EXPECT_GE(tx, last_tx) << t;
    EXPECT_GE(crc, last_crc) << t;
    EXPECT_GE(replay, last_replay) << t;
    EXPECT_GE(v.violationTime, last_violation) << t;
    last_energy = energy, last_tx = tx, last_crc = crc, last_replay = replay,
    last_violation = v.violationTime;
  }
  EXPECT_GT(last_crc, 0u);
}

TEST_F(SimNvml, PowerStaysWithinTheLimitAndSwPowerCapIsSetExactlyWhenCapped) {
  Init(ScenarioPath("h200-training.yaml"), 0);
  nvmlDevice_t d = Dev(2);
  unsigned limit = 0;
  ASSERT_EQ(nvmlDeviceGetEnforcedPowerLimit(d, &limit), NVML_SUCCESS);
  EXPECT_EQ(limit, 600000u);
  int capped = 0, free_running = 0;
  unsigned max_sm = 0;
  ASSERT_EQ(nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &max_sm), NVML_SUCCESS);
  for (double t = 0.05; t < 60; t += 0.3) {
    At(t);
    const unsigned mw = Power(d);
    const bool cap = (Reasons(d) & nvmlClocksEventReasonSwPowerCap) != 0;
    unsigned sm = 0;
    ASSERT_EQ(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &sm), NVML_SUCCESS);
    EXPECT_LE(mw, limit) << t;
    EXPECT_EQ(cap, mw == limit) << t;
    if (cap) {
      EXPECT_LT(sm, max_sm) << t;
    }
    (cap ? capped : free_running) += 1;
  }
  EXPECT_GT(capped, 0);
  EXPECT_GT(free_running, 0);
  nvmlViolationTime_t v{};
  ASSERT_EQ(nvmlDeviceGetViolationStatus(d, NVML_PERF_POLICY_POWER, &v), NVML_SUCCESS);
  EXPECT_GT(v.violationTime, 0u);
}

TEST_F(SimNvml, TemperatureFollowsPowerWithALag) {
  // Compute only, no checkpoint: a constant load, so power is a step function of the brake.
  Init(Write("gpus: [{model: h100, workload: {type: training, compute_fraction: 1, checkpoint_every_s: "
             "100000}}]\n"
             "faults: [{type: power_brake, gpu: 0, from: 400, to: 800}]\n"),
       1);
  nvmlDevice_t d = Dev(0);
  const unsigned warm_idle = Temp(d);
  EXPECT_GT(Power(d), 400000u);       // under load at once...
  EXPECT_LE(Temp(d), warm_idle + 1);  // ...but not hot yet
  At(300);
  const unsigned hot = Temp(d);
  EXPECT_GT(hot, warm_idle + 15);
  At(399.9);
  const unsigned before_brake = Temp(d);
  const unsigned power_before = Power(d);
  At(400.2);
  EXPECT_LT(Power(d), power_before * 0.8);  // power drops at once...
  EXPECT_GE(Temp(d) + 1, before_brake);     // ...the temperature only slowly
  EXPECT_NE(Reasons(d) & nvmlClocksThrottleReasonHwPowerBrakeSlowdown, 0u);
  At(600);
  EXPECT_LT(Temp(d) + 5, before_brake);
}

TEST_F(SimNvml, ThermalSlowdownBitsAreSetExactlyAtTheSlowdownTemperature) {
  Init(Write("gpus: [{model: h100, ambient_c: 52, workload: {type: training, power_intensity: 1.0}}]\n"), 0);
  nvmlDevice_t d = Dev(0);
  int throttled = 0, cool = 0;
  for (double t = 0; t < 900; t += 1.1) {
    At(t);
    const unsigned temp = Temp(d);
    const unsigned long long r = Reasons(d);
    EXPECT_EQ((r & nvmlClocksEventReasonSwThermalSlowdown) != 0, temp >= 87) << t << " " << temp;
    EXPECT_EQ((r & nvmlClocksThrottleReasonHwThermalSlowdown) != 0, temp >= 90) << t << " " << temp;
    ((r & nvmlClocksEventReasonSwThermalSlowdown) ? throttled : cool) += 1;
  }
  EXPECT_GT(throttled, 0);
  EXPECT_GT(cool, 0);
  nvmlViolationTime_t v{};
  ASSERT_EQ(nvmlDeviceGetViolationStatus(d, NVML_PERF_POLICY_THERMAL, &v), NVML_SUCCESS);
  EXPECT_GT(v.violationTime, 0u);
}

TEST_F(SimNvml, AllocatedButIdleGpusHoldMemoryWithAProcessAndReportGpuIdle) {
  Init(ScenarioPath("h100-allocated-idle.yaml"), 500);
  nvmlDevice_t d = Dev(0);
  EXPECT_EQ(Util(d), 0u);
  EXPECT_NE(Reasons(d) & nvmlClocksEventReasonGpuIdle, 0u);
  nvmlMemory_v2_t mem{};
  mem.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(d, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used, 71ULL << 30);
  EXPECT_EQ(mem.total, 81559ULL << 20);
  EXPECT_EQ(mem.used + mem.free + mem.reserved, mem.total);
  nvmlProcessInfo_t p[4];
  unsigned n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(p[0].usedGpuMemory, 71ULL << 30);
  EXPECT_EQ(p[0].gpuInstanceId, 0xFFFFFFFFu);
}

TEST_F(SimNvml, ProcessMemoryIsSplitByTheScenariosSharesInPidOrder) {
  Init(Write("gpus: [{model: h100, workload: {type: idle, memory_gib: 50, processes: 2, "
             "process_memory_shares: [4, 1]}}]\n"),
       10);
  nvmlProcessInfo_t p[4];
  unsigned n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(0), &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  EXPECT_LT(p[0].pid, p[1].pid);
  EXPECT_EQ(p[0].usedGpuMemory, 40ULL << 30) << "four fifths to the first pid";
  EXPECT_EQ(p[1].usedGpuMemory, 10ULL << 30);
}

TEST_F(SimNvml, ProcessListFollowsTheInsufficientSizeProtocol) {
  Init(Write("gpus: [{model: h100, workload: {type: training, processes: 3}}, {model: h100}]\n"), 10);
  unsigned n = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(0), &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 3u);
  nvmlProcessInfo_t p[3];
  n = 2;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(0), &n, p), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(0), &n, p), NVML_SUCCESS);
  EXPECT_EQ((std::set<unsigned>{p[0].pid, p[1].pid, p[2].pid}.size()), 3u);
  EXPECT_GT(p[0].usedGpuMemory, 10ULL << 30);
  n = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Dev(1), &n, nullptr), NVML_SUCCESS);  // idle: none
  EXPECT_EQ(n, 0u);
}

TEST_F(SimNvml, XidEventsAreDeliveredOncePerEventSet) {
  Init(ScenarioPath("h100-faults.yaml"), 80);  // after XIDs 13, 31, 48, 94; before GPU 6's slow calls
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  nvmlEventSet_t set{}, other{};
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvmlEventSetCreate(&other), NVML_SUCCESS);
  for (unsigned i = 0; i < count; ++i) {
    ASSERT_EQ(nvmlDeviceRegisterEvents(Dev(i), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  }
  ASSERT_EQ(nvmlDeviceRegisterEvents(Dev(5), nvmlEventTypeXidCriticalError, other), NVML_SUCCESS);
  std::vector<unsigned long long> xids;
  nvmlEventData_t e{};
  while (nvmlEventSetWait_v2(set, &e, 0) == NVML_SUCCESS) xids.push_back(e.eventData);
  EXPECT_EQ(xids, (std::vector<unsigned long long>{13, 31, 48, 94}));
  EXPECT_EQ(nvmlEventSetWait_v2(set, &e, 5), NVML_ERROR_TIMEOUT);
  // The other set registered GPU 5 only, and gets its events too.
  ASSERT_EQ(nvmlEventSetWait_v2(other, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 48u);
  EXPECT_EQ(e.device, Dev(5));
  EXPECT_EQ(e.eventType, nvmlEventTypeXidCriticalError);
  At(130);
  ASSERT_EQ(nvmlEventSetWait_v2(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(nvmlEventSetWait_v2(set, &e, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetFree(other), NVML_SUCCESS);
}

TEST_F(SimNvml, EventWaitWakesWhenAnEventFallsDueInRunningTime) {
  setenv("GPUSCOPE_SIM_SCENARIO",
         Write("speed: 20\ngpus: [{model: a100}]\nfaults: [{type: xid, gpu: 0, at: 2, code: 43}]\n").c_str(),
         1);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t d = Dev(0);
  nvmlEventSet_t set{};
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceRegisterEvents(d, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlEventData_t e{};
  // Due after 0.1 s of real time; only a wait that never wakes would run into the minute.
  ASSERT_EQ(nvmlEventSetWait_v2(set, &e, 60000), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 43u);
  nvmlEventSetFree(set);
}

TEST_F(SimNvml, FallOffBusLosesThatGpuOnly) {
  Init(ScenarioPath("h100-faults.yaml"), 119);
  nvmlDevice_t lost = Dev(1);
  nvmlDevice_t fine = Dev(0);
  EXPECT_GT(Power(lost), 0u);
  At(121);
  unsigned value = 0;
  nvmlDevice_t handle = nullptr;
  EXPECT_EQ(nvmlDeviceGetPowerUsage(lost, &value), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvmlDeviceGetTemperature(lost, NVML_TEMPERATURE_GPU, &value), NVML_ERROR_GPU_IS_LOST);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EXPECT_EQ(nvmlDeviceGetName(lost, name, sizeof(name)), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &handle), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvmlDeviceGetPowerUsage(fine, &value), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetCount_v2(&value), NVML_SUCCESS);
  EXPECT_EQ(value, 8u);
}

TEST_F(SimNvml, SlowCallsTakeAtLeastTheirDelayAndStillAnswer) {
  Init(Write("gpus: {count: 2, model: h100}\nfaults: [{type: slow_calls, gpu: 1, from: 10, to: 20, delay_ms: "
             "80}]\n"),
       15);
  nvmlDevice_t d = Dev(1);
  const auto start = std::chrono::steady_clock::now();
  unsigned mw = 0;
  EXPECT_EQ(nvmlDeviceGetPowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(80));
  At(25);
  EXPECT_EQ(nvmlDeviceGetPowerUsage(d, &mw), NVML_SUCCESS);
}

TEST_F(SimNvml, HungCallsBlockUntilShutdown) {
  Init(Write("gpus: {count: 2, model: h100}\nfaults: [{type: hang, gpu: 0, from: 5}]\n"), 10);
  nvmlDevice_t hung = nullptr;
  nvmlDevice_t fine = Dev(1);
  At(1);
  hung = Dev(0);
  At(10);
  auto call = std::async(std::launch::async, [hung] {
    unsigned mw = 0;
    return nvmlDeviceGetPowerUsage(hung, &mw);
  });
  EXPECT_EQ(call.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  unsigned mw = 0;
  EXPECT_EQ(nvmlDeviceGetPowerUsage(fine, &mw), NVML_SUCCESS);  // the other GPU still answers
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(call.get(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimNvml, SbeBurstRaisesCorrectedCountersOverItsDuration) {
  Init(ScenarioPath("h100-faults.yaml"), 39);
  nvmlDevice_t d = Dev(5);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 0u);
  At(50);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 60u);
  At(70);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 120u);
  EXPECT_GE(Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), 120u);
  EXPECT_EQ(Ecc(Dev(4), NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 0u);
}

TEST_F(SimNvml, DbeCountsRetiresAPageAndRemapsARowPendingThenDone) {
  Init(ScenarioPath("h100-faults.yaml"), 59);
  nvmlDevice_t d = Dev(5);
  unsigned corr = 9, unc = 9, pending = 9, failure = 9;
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 0u);
  ASSERT_EQ(nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(unc, 0u);
  At(61);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 1u);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), 1u);
  unsigned pages = 0;
  EXPECT_EQ(nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(pages, 1u);
  unsigned long long address = 0;
  ASSERT_EQ(nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, &address),
            NVML_SUCCESS);
  EXPECT_NE(address, 0u);
  nvmlEnableState_t retire_pending{};
  ASSERT_EQ(nvmlDeviceGetRetiredPagesPendingStatus(d, &retire_pending), NVML_SUCCESS);
  EXPECT_EQ(retire_pending, NVML_FEATURE_ENABLED);
  ASSERT_EQ(nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(unc, 1u);
  EXPECT_EQ(pending, 1u);
  EXPECT_EQ(failure, 0u);
  At(125);
  ASSERT_EQ(nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(unc, 1u);
  EXPECT_EQ(pending, 0u);
}

TEST_F(SimNvml, RowRemapFailurePcieDegradationAndPowerBrakeShowUp) {
  Init(Write("gpus: {count: 2, model: h100, workload: {type: training}}\n"
             "faults:\n"
             "  - {type: row_remap_failure, gpu: 0, at: 30}\n"
             "  - {type: pcie_degraded, gpu: 1, from: 30, gen: 3, width: 8, rate: 2}\n"
             "  - {type: power_brake, gpu: 1, from: 30}\n"),
       20);
  unsigned corr, unc, pending, failure, gen, width, replays;
  ASSERT_EQ(nvmlDeviceGetRemappedRows(Dev(0), &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(failure, 0u);
  ASSERT_EQ(nvmlDeviceGetCurrPcieLinkGeneration(Dev(1), &gen), NVML_SUCCESS);
  EXPECT_EQ(gen, 5u);
  EXPECT_EQ(Reasons(Dev(1)) & nvmlClocksThrottleReasonHwPowerBrakeSlowdown, 0u);
  At(40);
  ASSERT_EQ(nvmlDeviceGetRemappedRows(Dev(0), &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(failure, 1u);
  ASSERT_EQ(nvmlDeviceGetCurrPcieLinkGeneration(Dev(1), &gen), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetCurrPcieLinkWidth(Dev(1), &width), NVML_SUCCESS);
  EXPECT_EQ(gen, 3u);
  EXPECT_EQ(width, 8u);
  ASSERT_EQ(nvmlDeviceGetMaxPcieLinkGeneration(Dev(1), &gen), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetMaxPcieLinkWidth(Dev(1), &width), NVML_SUCCESS);
  EXPECT_EQ(gen, 5u);
  EXPECT_EQ(width, 16u);
  ASSERT_EQ(nvmlDeviceGetPcieReplayCounter(Dev(1), &replays), NVML_SUCCESS);
  EXPECT_EQ(replays, 20u);
  const unsigned long long r = Reasons(Dev(1));
  EXPECT_NE(r & nvmlClocksThrottleReasonHwPowerBrakeSlowdown, 0u);
  EXPECT_NE(r & nvmlClocksThrottleReasonHwSlowdown, 0u);
}

// Average of the GPU utilisation (percent) over (t1, t2], read at every tick.
double AverageUtil(nvmlDevice_t d, double t1, double t2) {
  double sum = 0;
  int n = 0;
  for (int k = static_cast<int>(std::lround(t1 * 10)) + 1; k <= std::lround(t2 * 10); ++k) {
    gpuscopeSimSetTime(k / 10.0 + 0.001);
    nvmlUtilization_t u{};
    nvmlDeviceGetUtilizationRates(d, &u);
    sum += u.gpu;
    ++n;
  }
  return sum / n;
}

TEST_F(SimNvml, NvlinkCrcIncidentRaisesCountersOnOneLinkAndSlowsEveryRank) {
  Init(ScenarioPath("h100-nvlink-crc-incident.yaml"), 599);
  nvmlDevice_t bad = Dev(3);
  EXPECT_EQ(Crc(bad, 7), 0u);
  const double before_bad_gpu = AverageUtil(bad, 500, 600);
  const double before_other = AverageUtil(Dev(0), 500, 600);
  At(500);
  const auto tx7_500 = NvlinkTxKib(bad, 7), tx6_500 = NvlinkTxKib(bad, 6);
  At(600);
  const auto tx7_600 = NvlinkTxKib(bad, 7), tx6_600 = NvlinkTxKib(bad, 6);
  const double after_other = AverageUtil(Dev(0), 650, 750);
  At(650);
  const auto tx7_650 = NvlinkTxKib(bad, 7), tx6_650 = NvlinkTxKib(bad, 6);
  At(750);
  const auto tx7_750 = NvlinkTxKib(bad, 7), tx6_750 = NvlinkTxKib(bad, 6);
  EXPECT_EQ(Crc(bad, 7), 6000u);  // 40/s for 150 s
  EXPECT_EQ(Crc(bad, 6), 0u);
  EXPECT_EQ(Crc(Dev(0), 7), 0u);
  EXPECT_LT(after_other, before_other - 5);               // everyone waits on the slow rank
  EXPECT_LT(tx7_750 - tx7_650, (tx7_600 - tx7_500) / 2);  // the bad link carries much less
  EXPECT_LT(tx7_750 - tx7_650, (tx6_750 - tx6_650) / 2);  // than its healthy neighbour
  EXPECT_LT(tx6_750 - tx6_650, tx6_600 - tx6_500);        // and the stretched allreduce slows all links
  EXPECT_GT(before_bad_gpu, 80);
  At(901);
  nvmlEventSet_t set{};
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceRegisterEvents(bad, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlEventData_t e{};
  ASSERT_EQ(nvmlEventSetWait_v2(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 74u);
  nvmlEventSetFree(set);
}

std::vector<double> Gpm(nvmlGpmSample_t s1, nvmlGpmSample_t s2, std::vector<unsigned> ids) {
  nvmlGpmMetricsGet_t get{};
  get.version = NVML_GPM_METRICS_GET_VERSION;
  get.numMetrics = static_cast<unsigned>(ids.size());
  get.sample1 = s1;
  get.sample2 = s2;
  for (size_t i = 0; i < ids.size(); ++i) get.metrics[i].metricId = ids[i];
  EXPECT_EQ(nvmlGpmMetricsGet(&get), NVML_SUCCESS);
  std::vector<double> values;
  for (size_t i = 0; i < ids.size(); ++i) {
    values.push_back(get.metrics[i].nvmlReturn == NVML_SUCCESS ? get.metrics[i].value : -1);
  }
  return values;
}

TEST_F(SimNvml, GpmMetricsAreCoherentWithUtilisation) {
  Init(ScenarioPath("h100-training.yaml"), 100);
  nvmlDevice_t d = Dev(2);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(nvmlGpmQueryDeviceSupport(d, &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1u);
  nvmlGpmSample_t s1{}, s2{};
  ASSERT_EQ(nvmlGpmSampleAlloc(&s1), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpmSampleAlloc(&s2), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpmSampleGet(d, s1), NVML_SUCCESS);
  At(160);
  ASSERT_EQ(nvmlGpmSampleGet(d, s2), NVML_SUCCESS);
  const auto v = Gpm(s1, s2,
                     {NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                      NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC, 99});
  const double util = AverageUtil(d, 100, 160);
  EXPECT_NEAR(v[0], util, 1.0);
  EXPECT_LT(v[1], v[0]);  // SMs are active for part of the time a kernel runs
  EXPECT_GT(v[1], 0.5 * v[0]);
  EXPECT_GT(v[2], 10);
  EXPECT_GT(v[3], 1000);  // MiB/s over 18 links
  EXPECT_GT(v[4], 100);
  EXPECT_EQ(v[5], -1);  // unknown metric: NOT_SUPPORTED
  // The same instant twice (frozen time): the instantaneous rates.
  ASSERT_EQ(nvmlGpmSampleGet(d, s1), NVML_SUCCESS);
  EXPECT_NEAR(Gpm(s1, s2, {NVML_GPM_METRIC_GRAPHICS_UTIL})[0], Util(d), 0.51);
  EXPECT_EQ(nvmlGpmSampleFree(s1), NVML_SUCCESS);
  EXPECT_EQ(nvmlGpmSampleFree(s2), NVML_SUCCESS);
}

TEST_F(SimNvml, A100HasNoGpm) {
  Init(ScenarioPath("a100-inference.yaml"), 100);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(nvmlGpmQueryDeviceSupport(Dev(0), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 0u);
  nvmlGpmSample_t s{};
  ASSERT_EQ(nvmlGpmSampleAlloc(&s), NVML_SUCCESS);
  EXPECT_EQ(nvmlGpmSampleGet(Dev(0), s), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpmSampleFree(s);
}

TEST_F(SimNvml, InferenceFollowsTheDailyCurve) {
  Init(ScenarioPath("a100-inference.yaml"), 0);
  const double night = AverageUtil(Dev(0), 3 * 3600, 3 * 3600 + 60);
  const double peak = AverageUtil(Dev(0), 14 * 3600, 14 * 3600 + 60);
  EXPECT_LT(night, 30);
  EXPECT_GT(peak, 75);
  unsigned dec = 0, period = 0;
  ASSERT_EQ(nvmlDeviceGetDecoderUtilization(Dev(7), &dec, &period), NVML_SUCCESS);
  EXPECT_GT(dec, 30u);
}

TEST_F(SimNvml, MigDevicesHaveTheirOwnHandlesNamesAndMemory) {
  Init(ScenarioPath("a100-mig.yaml"), 1000);
  nvmlDevice_t gpu = Dev(0);
  unsigned current = 9, pending = 9, max = 0;
  ASSERT_EQ(nvmlDeviceGetMigMode(gpu, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  ASSERT_EQ(nvmlDeviceGetMigMode(Dev(2), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  ASSERT_EQ(nvmlDeviceGetMaxMigDeviceCount(gpu, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);
  nvmlDevice_t mig[4];
  for (unsigned i = 0; i < 4; ++i)
    ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu, i, &mig[i]), NVML_SUCCESS);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu, 4, &none), NVML_ERROR_NOT_FOUND);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(mig[0], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
  ASSERT_EQ(nvmlDeviceGetUUID(mig[0], uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_EQ(std::string(uuid).rfind("MIG-", 0), 0u);
  unsigned gi = 0, ci = 9;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceId(mig[2], &gi), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetComputeInstanceId(mig[2], &ci), NVML_SUCCESS);
  EXPECT_EQ(gi, 13u);
  EXPECT_EQ(ci, 0u);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceId(gpu, &gi), NVML_ERROR_INVALID_ARGUMENT);
  nvmlMemory_v2_t mem{};
  mem.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(mig[0], &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40192ULL << 20);
  EXPECT_GT(mem.used, 1ULL << 30);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(mig[3], &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used, 0u);  // the unused instance
  unsigned mw = 0;
  EXPECT_EQ(nvmlDeviceGetPowerUsage(mig[0], &mw), NVML_ERROR_NOT_SUPPORTED);
  nvmlUtilization_t u{};
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(gpu, &u), NVML_ERROR_NOT_SUPPORTED);
  nvmlProcessInfo_t p[8];
  unsigned n = 8;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(gpu, &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(p[1].gpuInstanceId, 5u);
  n = 8;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(mig[2], &n, p), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(p[0].gpuInstanceId, 13u);
}

TEST_F(SimNvml, GpmMigSamplesScaleWithTheInstanceLoad) {
  Init(Write("gpus: [{model: h100, workload: {type: inference, memory_gib: 5, noise: 0},\n"
             "        mig: [{profile: 3g.40gb, gpu_instance_id: 1}, {profile: 3g.40gb, gpu_instance_id: 2, "
             "load: 0.5}]}]\n"),
       40000);
  nvmlGpmSample_t a1{}, a2{}, b1{}, b2{};
  for (auto* s : {&a1, &a2, &b1, &b2}) ASSERT_EQ(nvmlGpmSampleAlloc(s), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpmMigSampleGet(Dev(0), 1, a1), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpmMigSampleGet(Dev(0), 2, b1), NVML_SUCCESS);
  At(40100);
  ASSERT_EQ(nvmlGpmMigSampleGet(Dev(0), 1, a2), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpmMigSampleGet(Dev(0), 2, b2), NVML_SUCCESS);
  EXPECT_EQ(nvmlGpmMigSampleGet(Dev(0), 7, b2), NVML_ERROR_NOT_FOUND);
  const double full = Gpm(a1, a2, {NVML_GPM_METRIC_SM_UTIL})[0];
  const double half = Gpm(b1, b2, {NVML_GPM_METRIC_SM_UTIL})[0];
  EXPECT_GT(full, 10);
  EXPECT_NEAR(half, full / 2, 0.01);
  for (auto s : {a1, a2, b1, b2}) nvmlGpmSampleFree(s);
}

// "GPU-" then hex groups of 8-4-4-4-12 characters.
bool LooksLikeGpuUuid(const std::string& uuid) {
  const std::string shape = "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
  if (uuid.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const bool hex = (uuid[i] >= '0' && uuid[i] <= '9') || (uuid[i] >= 'a' && uuid[i] <= 'f');
    if (shape[i] == 'x' ? !hex : uuid[i] != shape[i]) return false;
  }
  return true;
}

TEST_F(SimNvml, IdentitiesLookLikeAnHgxBoard) {
  Init(ScenarioPath("h100-training.yaml"), 10);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], version[80];
  ASSERT_EQ(nvmlDeviceGetUUID(Dev(0), uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_TRUE(LooksLikeGpuUuid(uuid)) << uuid;
  EXPECT_EQ(nvmlDeviceGetUUID(Dev(0), uuid, 10), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(nvmlDeviceGetName(Dev(0), name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(Dev(0), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:18:00.0");
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(Dev(7), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:DB:00.0");
  unsigned minor = 0;
  ASSERT_EQ(nvmlDeviceGetMinorNumber(Dev(5), &minor), NVML_SUCCESS);
  EXPECT_EQ(minor, 5u);
  ASSERT_EQ(nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_SUCCESS);
  EXPECT_STREQ(version, "550.90.07");
  unsigned mhz = 0;
  ASSERT_EQ(nvmlDeviceGetMaxClockInfo(Dev(0), NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
  EXPECT_EQ(mhz, 1980u);
  ASSERT_EQ(nvmlDeviceGetMaxClockInfo(Dev(0), NVML_CLOCK_MEM, &mhz), NVML_SUCCESS);
  EXPECT_EQ(mhz, 2619u);
  nvmlFieldValue_t f[2] = {};
  f[0].fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
  f[1].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  ASSERT_EQ(nvmlDeviceGetFieldValues(Dev(0), 2, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].value.uiVal, 18u);
  EXPECT_GT(f[1].value.uiVal, Temp(Dev(0)));  // HBM runs hotter than the GPU sensor
}

TEST_F(SimNvml, ConcurrentCallsFromManyThreadsAgree) {
  Init(ScenarioPath("h100-training.yaml"), 321.0);
  std::vector<std::future<std::vector<unsigned long long>>> calls;
  for (int i = 0; i < 9; ++i)
    calls.push_back(std::async(std::launch::async, [] { return Readings(Dev(4)); }));
  const auto expected = calls[0].get();
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_EQ(calls[i].get(), expected);
}

TEST_F(SimNvml, KernelLogGetsRealXidLines) {
  const std::string log = ::testing::TempDir() + "/sim_kern_" + std::to_string(getpid()) + ".log";
  std::remove(log.c_str());
  Init(Write("kernel_log: " + log +
             "\ngpus: {count: 2, model: h100}\nfaults:\n"
             "  - {type: fall_off_bus, gpu: 0, at: 20}\n  - {type: xid, gpu: 1, at: 30, code: 13, pid: 4242, "
             "process: python3}\n"),
       25);
  Power(Dev(1));
  At(35);
  Power(Dev(1));
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(
      text.str(),
      "[   20.000000] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', GPU has fallen off the bus.\n"
      "[   30.000000] NVRM: Xid (PCI:0000:2a:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on "
      "(GPC 0, TPC 1, SM 0): Out Of Range Address\n");
  std::remove(log.c_str());
}

TEST_F(SimNvml, KernelLogVariableMovesTheScenariosLogSoNodesDoNotShareIt) {
  const std::string base = ::testing::TempDir() + "/sim_kern_env_" + std::to_string(getpid());
  const std::string scenario_log = base + "_scenario.log";
  const std::string node_log = base + "_node.log";
  std::remove(scenario_log.c_str());
  std::remove(node_log.c_str());
  setenv("GPUSCOPE_SIM_KERNEL_LOG", node_log.c_str(), 1);
  Init(Write("kernel_log: " + scenario_log +
             "\ngpus: {count: 1, model: h100}\nfaults:\n  - {type: xid, gpu: 0, at: 10, code: 31}\n"),
       15);
  Power(Dev(0));
  std::ifstream in(node_log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("NVRM: Xid (PCI:0000:18:00): 31,"), std::string::npos) << text.str();
  EXPECT_FALSE(std::ifstream(scenario_log).good());
  std::remove(node_log.c_str());
}

TEST_F(SimNvml, EmptyKernelLogVariableWritesNoKernelLog) {
  const std::string scenario_log =
      ::testing::TempDir() + "/sim_kern_off_" + std::to_string(getpid()) + ".log";
  std::remove(scenario_log.c_str());
  setenv("GPUSCOPE_SIM_KERNEL_LOG", "", 1);
  Init(Write("kernel_log: " + scenario_log +
             "\ngpus: {count: 1, model: h100}\nfaults:\n  - {type: xid, gpu: 0, at: 10, code: 31}\n"),
       15);
  Power(Dev(0));
  EXPECT_FALSE(std::ifstream(scenario_log).good());
}

TEST_F(SimNvml, BadScenarioGivesAClearErrorNotACrash) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(nvmlInit_v2(), NVML_ERROR_LIBRARY_NOT_FOUND);  // no GPUSCOPE_SIM_SCENARIO
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gpuscope-sim: GPUSCOPE_SIM_SCENARIO is not set"), std::string::npos) << err;

  setenv("GPUSCOPE_SIM_SCENARIO", "/nonexistent/scenario.yaml", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(nvmlInit_v2(), NVML_ERROR_LIBRARY_NOT_FOUND);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gpuscope-sim: cannot read scenario file /nonexistent/scenario.yaml"), std::string::npos)
      << err;

  setenv("GPUSCOPE_SIM_SCENARIO", Write("gpus: [{model: h100, workload: {type: mining}}]\n").c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(nvmlInit_v2(), NVML_ERROR_LIBRARY_NOT_FOUND);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gpus[0].workload.type: unknown workload 'mining'"), std::string::npos) << err;

  unsigned count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

// The fleet runner's nodes: each its own scenario, seed and clock; a thread's calls go to the node it is
// bound to, an unbound thread's to the process's simulator; init and shutdown count per node.
TEST_F(SimNvml, BoundThreadsAnswerFromTheirOwnNodeAndUnboundOnesFromTheProcesssSimulator) {
  const std::string two = "gpus: {count: 2, model: h100-sxm}\n";
  const std::string three = "gpus: {count: 3, model: h200}\n";
  gpuscopeSimNode* a = gpuscopeSimNodeCreate(two.c_str(), 11, 0, 0, nullptr, 0);
  gpuscopeSimNode* b = gpuscopeSimNodeCreate(three.c_str(), 12, 0, 0, nullptr, 0);
  gpuscopeSimNode* a_twin = gpuscopeSimNodeCreate(two.c_str(), 13, 0, 0, nullptr, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(a_twin, nullptr);

  auto count_and_uuid = [](gpuscopeSimNode* node, unsigned* count, std::string* uuid) {
    gpuscopeSimBindThread(node);
    ASSERT_EQ(nvmlDeviceGetCount_v2(count), NVML_SUCCESS);
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    ASSERT_EQ(nvmlDeviceGetUUID(Dev(0), text, sizeof(text)), NVML_SUCCESS);
    *uuid = text;
  };
  for (gpuscopeSimNode* node : {a, b, a_twin}) {
    gpuscopeSimBindThread(node);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }
  unsigned count_a = 0, count_b = 0, count_twin = 0;
  std::string uuid_a, uuid_b, uuid_twin;
  count_and_uuid(a, &count_a, &uuid_a);
  count_and_uuid(b, &count_b, &uuid_b);
  count_and_uuid(a_twin, &count_twin, &uuid_twin);
  EXPECT_EQ(count_a, 2u);
  EXPECT_EQ(count_b, 3u);
  EXPECT_EQ(count_twin, 2u);
  EXPECT_NE(uuid_a, uuid_twin) << "same scenario, other seed: other identities";
  // Another thread bound to `b` meanwhile does not move this one.
  std::thread([&] {
    unsigned n = 0;
    std::string u;
    count_and_uuid(b, &n, &u);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(u, uuid_b);
  }).join();
  unsigned again = 0;
  std::string same;
  count_and_uuid(a, &again, &same);
  EXPECT_EQ(same, uuid_a);

  // Unbound: the process's own simulator, not initialised here.
  gpuscopeSimBindThread(nullptr);
  unsigned count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);

  // Per-node reference counts: a second init needs a second shutdown.
  gpuscopeSimBindThread(a);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  gpuscopeSimBindThread(b);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS) << "shutting node a down left b running";

  gpuscopeSimBindThread(nullptr);
  gpuscopeSimNodeDestroy(a);
  gpuscopeSimNodeDestroy(b);  // still initialised: destroying it shuts it down
  gpuscopeSimNodeDestroy(a_twin);
  gpuscopeSimNodeDestroy(nullptr);
}

TEST_F(SimNvml, ANodeWithAnInvalidScenarioIsRefusedWithTheReason) {
  char error[256] = {};
  EXPECT_EQ(gpuscopeSimNodeCreate("gpus: {count: 2, model: h100-sxm}\ncolour: red\n", 1, 0, 0, error,
                                  sizeof(error)),
            nullptr);
  EXPECT_NE(std::string(error).find("colour"), std::string::npos) << error;
  char tiny[8] = {};
  EXPECT_EQ(gpuscopeSimNodeCreate("gpus: 3\n", 1, 0, 0, tiny, sizeof(tiny)), nullptr);
  EXPECT_EQ(std::string(tiny).size(), 7u) << "truncated to the buffer, terminated";
  EXPECT_EQ(gpuscopeSimNodeCreate(nullptr, 1, 0, 0, error, sizeof(error)), nullptr);
  EXPECT_EQ(gpuscopeSimNodeCreate("gpus: {count: 1, model: h100-sxm}\n", 1, -5, 0, error, sizeof(error)),
            nullptr);
  EXPECT_NE(std::string(error).find("start_offset"), std::string::npos) << error;
  EXPECT_EQ(gpuscopeSimNodeCreate("gpus: {count: 1, model: h100-sxm}\n", 1, 0, -1, error, sizeof(error)),
            nullptr);
  EXPECT_NE(std::string(error).find("speed"), std::string::npos) << error;
}

}  // namespace
