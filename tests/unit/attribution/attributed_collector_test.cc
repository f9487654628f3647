// The attribution layer on the GPU collector's output: hpc_job labels as dcgm-exporter adds them (from
// each sample's subject, never its labels), the join series, allocated GPUs without a process and
// allocated GPUs idle over the window; with Kubernetes, the namespace, pod and container labels from
// PodTable views (copies per holding container, MIG instances, process series) and the gpuscope_k8s_*
// series.
#include "src/attribution/attributed_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "src/attribution/proc_resolver.h"
#include "src/node/gpu_directory.h"
#include "src/node/node_state.h"

namespace gpuscope {
namespace {

using ::testing::Contains;
using ::testing::Pair;

Labels GpuLabels(int index) {
  std::string i = std::to_string(index);
  return {{"gpu", i},
          {"UUID", "GPU-" + i},
          {"pci_bus_id", "00000000:1" + i + ":00.0"},
          {"device", "nvidia" + std::to_string(7 - index)},
          {"modelName", "NVIDIA H100 80GB HBM3"},
          {"Hostname", "n1"},
          {"DCGM_FI_DRIVER_VERSION", "550.90.07"}};
}

Labels With(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

SampleSubject On(int gpu, uint32_t pid = 0) { return {gpu, SampleSubject::kNone, pid}; }

// Stands in for the GPU collector: four GPUs; GPU 0 runs pids 1001 and 1002 (job 1234 in the proc
// fixture), GPU 1 runs pid 5001 (job 4321 through environ), GPUs 2 and 3 run nothing. GPU i's
// utilisation is `utilisation[i]` (ratio). With `mig`, GPU 3 has MIG instances 1 (MIG device "MIG-3-1")
// and 2 ("MIG-3-2"), each with a gpuscope_mig_memory_used_bytes sample. Like the GPU collector, it
// publishes its inventory to the node state and marks every sample with its subject.
class FakeGpuCollector : public Collector {
 public:
  FakeGpuCollector(NodeState* node, const double* utilisation, const HistogramValue* histogram = nullptr,
                   bool mig = false)
      : node_(node), utilisation_(utilisation), histogram_(histogram), mig_(mig) {}
  std::string_view Name() const override { return "gpu"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    MetricFamily up{"gpuscope_gpu_up", "", MetricType::kGauge, "", {}};
    MetricFamily util{"DCGM_FI_DEV_GPU_UTIL", "", MetricType::kGauge, "", {}};
    MetricFamily processes{"gpuscope_gpu_processes", "", MetricType::kGauge, "", {}};
    MetricFamily memory{"gpuscope_gpu_process_memory_bytes", "", MetricType::kGauge, "", {}};
    GpuInventory inventory;
    inventory.host_label = "Hostname";
    inventory.hostname = "n1";
    for (int i = 0; i < 4; ++i) {
      up.samples.push_back({GpuLabels(i), 1, On(i)});
      util.samples.push_back({GpuLabels(i), 100 * utilisation_[i], On(i)});
      GpuDeviceInventory device;
      device.index = static_cast<uint32_t>(i);
      device.opened = device.up = device.processes_listed = true;
      device.minor = static_cast<uint32_t>(7 - i);
      device.uuid = "GPU-" + std::to_string(i);
      device.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
      device.labels = GpuLabels(i);
      device.gpu_utilization = utilisation_[i];
      inventory.devices.push_back(device);
    }
    processes.samples = {{GpuLabels(0), 2, On(0)},
                         {GpuLabels(1), 1, On(1)},
                         {GpuLabels(2), 0, On(2)},
                         {GpuLabels(3), 0, On(3)}};
    memory.samples = {{With(With(GpuLabels(0), "pid", "1001"), "GPU_I_ID", ""), 1e9, On(0, 1001)},
                      {With(With(GpuLabels(0), "pid", "1002"), "GPU_I_ID", ""), 1e9, On(0, 1002)},
                      {With(With(GpuLabels(1), "pid", "5001"), "GPU_I_ID", ""), 1e9, On(1, 5001)}};
    inventory.processes = {{0, SampleSubject::kNone, 1001, 1000000000},
                           {0, SampleSubject::kNone, 1002, 1000000000},
                           {1, SampleSubject::kNone, 5001, 1000000000}};
    MetricFamily mig_memory{"gpuscope_mig_memory_used_bytes", "", MetricType::kGauge, "", {}};
    if (mig_) {
      for (uint32_t gi : {1u, 2u}) {
        inventory.devices[3].mig.push_back({gi, "1g.10gb", {"MIG-3-" + std::to_string(gi)}, std::nullopt});
        mig_memory.samples.push_back({With(GpuLabels(3), "GPU_I_ID", std::to_string(gi)), 1e9,
                                      SampleSubject{3, static_cast<int32_t>(gi), 0}});
      }
    }
    node_->PublishGpuInventory(std::move(inventory));
    out = {up, util, processes, memory};
    if (mig_) out.push_back(std::move(mig_memory));
    if (histogram_ != nullptr) {  // a histogram per GPU, the same value on each
      MetricFamily latency{"gpu_kernel_seconds", "", MetricType::kHistogram, "seconds", {}};
      auto value = std::make_shared<const HistogramValue>(*histogram_);
      for (int i = 0; i < 4; ++i) latency.samples.emplace_back(GpuLabels(i), value, On(i));
      out.push_back(std::move(latency));
    }
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override {
    return {{"DCGM_FI_DEV_GPU_UTIL", MetricType::kGauge, "util", "", {}, "nvml"}};
  }

 private:
  NodeState* node_;
  const double* utilisation_;
  const HistogramValue* histogram_;
  bool mig_;
};

const MetricFamily* Find(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const auto& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

std::string Label(const Sample& sample, std::string_view name) {
  for (const auto& [key, value] : sample.labels) {
    if (key == name) return value;
  }
  return "<absent>";
}

class AttributedCollectorTest : public ::testing::Test {
 protected:
  // `procfs`: the fixture /proc the resolver reads (a Slurm node's by default, where the fake's pids are
  // ranks of jobs; GPUSCOPE_K8S_PROC_FIXTURE puts them in pods' cgroups).
  std::unique_ptr<AttributedCollector> Make(AttributionOptions options = {},
                                            const char* procfs = GPUSCOPE_PROC_FIXTURE) {
    if (!options.now) options.now = [this] { return now_; };
    return std::make_unique<AttributedCollector>(
        std::make_unique<FakeGpuCollector>(&node_, utilisation_, histogram_, mig_), &node_,
        std::make_unique<ProcResolver>(procfs), std::move(options));
  }
  // The value of `family` for `job`; -1 when absent.
  static double ValueFor(const std::vector<MetricFamily>& out, std::string_view family,
                         const std::string& job);

  NodeState node_;
  JobTable& table_ = node_.jobs();
  double utilisation_[4] = {0.0, 0.1, 0.2, 0.3};
  const HistogramValue* histogram_ = nullptr;  // set: the collector adds a histogram family
  bool mig_ = false;                           // set: GPU 3 has MIG instances 1 and 2
  std::chrono::steady_clock::time_point now_{};
};

double AttributedCollectorTest::ValueFor(const std::vector<MetricFamily>& out, std::string_view family,
                                         const std::string& job) {
  const MetricFamily* f = Find(out, family);
  if (f == nullptr) return -1;
  for (const Sample& s : f->samples) {
    if (Label(s, "hpc_job") == job) return s.value;
  }
  return -1;
}

TEST_F(AttributedCollectorTest, GpuSeriesGetTheJobOfTheirGpuFromProcesses) {
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  const MetricFamily* util = Find(out, "DCGM_FI_DEV_GPU_UTIL");
  ASSERT_NE(util, nullptr);
  ASSERT_EQ(util->samples.size(), 4u);
  EXPECT_EQ(Label(util->samples[0], "hpc_job"), "1234");
  EXPECT_EQ(Label(util->samples[1], "hpc_job"), "4321");
  EXPECT_EQ(Label(util->samples[2], "hpc_job"), "") << "a free GPU keeps the label, empty (absent)";
  const MetricFamily* memory = Find(out, "gpuscope_gpu_process_memory_bytes");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(Label(memory->samples[0], "hpc_job"), "1234");
  EXPECT_EQ(Label(memory->samples[2], "hpc_job"), "4321");
}

TEST_F(AttributedCollectorTest, SeveralJobsOnOneGpuCopyTheSeriesOncePerJobAsDcgmExporterDoes) {
  table_.Update(AttributionSource::kMapping, {{{"2", "700", "", ""}, {"2", "701", "", ""}}, {}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  const MetricFamily* util = Find(out, "DCGM_FI_DEV_GPU_UTIL");
  std::vector<std::string> jobs_on_gpu2;
  for (const Sample& s : util->samples) {
    if (Label(s, "gpu") == "2") jobs_on_gpu2.push_back(Label(s, "hpc_job"));
  }
  EXPECT_EQ(jobs_on_gpu2, (std::vector<std::string>{"700", "701"}));
}

TEST_F(AttributedCollectorTest, HistogramSamplesKeepTheirValueWhenLabelledAndWhenCopiedPerJob) {
  HistogramValue value;
  value.buckets = HistogramBuckets::Make({0.5});
  value.counts = {3, 4};
  value.sum = 2.5;
  value.exemplars = {Exemplar{Labels{{"trace_id", "ab"}}, 0.25, 7}, Exemplar{}};
  histogram_ = &value;
  table_.Update(AttributionSource::kMapping, {{{"2", "700", "", ""}, {"2", "701", "", ""}}, {}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  const MetricFamily* latency = Find(out, "gpu_kernel_seconds");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->type, MetricType::kHistogram);
  std::vector<std::string> jobs;
  for (const Sample& s : latency->samples) {
    jobs.push_back(Label(s, "gpu") + ":" + Label(s, "hpc_job"));
    ASSERT_NE(s.histogram, nullptr) << jobs.back();
    EXPECT_EQ(s.histogram->counts, (std::vector<uint64_t>{3, 4}));
    EXPECT_EQ(s.histogram->sum, 2.5);
    ASSERT_EQ(s.histogram->exemplars.size(), 2u);
    EXPECT_EQ(s.histogram->exemplars[0].labels, (Labels{{"trace_id", "ab"}}));
  }
  // GPU 2 holds two jobs: its series is copied once per job, histogram and all.
  EXPECT_EQ(jobs, (std::vector<std::string>{"0:1234", "1:4321", "2:700", "2:701", "3:"}));
}

TEST_F(AttributedCollectorTest, JoinSeriesCarryUserAccountRankAndTheIdleAllocation) {
  table_.Update(AttributionSource::kMapping,
                {{{"3", "900", "", ""}}, {{"900", "alice", "1001", "ml", "gpu", "idle-notebook", "", ""}}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());

  const MetricFamily* info = Find(out, "gpuscope_job_info");
  ASSERT_NE(info, nullptr);
  bool found = false;
  for (const Sample& s : info->samples) {
    if (Label(s, "hpc_job") != "900") continue;
    found = true;
    EXPECT_EQ(Label(s, "user"), "alice");
    EXPECT_EQ(Label(s, "account"), "ml");
    EXPECT_EQ(Label(s, "partition"), "gpu");
    EXPECT_EQ(Label(s, "job_name"), "idle-notebook");
    EXPECT_EQ(Label(s, "Hostname"), "n1") << "joins match the job_info of the same node";
  }
  EXPECT_TRUE(found);

  const MetricFamily* allocation = Find(out, "gpuscope_gpu_allocation_info");
  ASSERT_NE(allocation, nullptr);
  std::map<std::string, std::string> rank_by_gpu;
  for (const Sample& s : allocation->samples)
    rank_by_gpu[Label(s, "gpu") + "/" + Label(s, "hpc_job")] = Label(s, "rank");
  EXPECT_THAT(rank_by_gpu, Contains(Pair("0/1234", "0")));
  EXPECT_THAT(rank_by_gpu, Contains(Pair("3/900", "")));
  EXPECT_EQ(Label(allocation->samples[0], "UUID"), "GPU-0") << "identity labels for the join";

  const MetricFamily* idle = Find(out, "gpuscope_gpu_allocated_without_process");
  ASSERT_NE(idle, nullptr);
  std::map<std::string, double> idle_by_job;
  for (const Sample& s : idle->samples) idle_by_job[Label(s, "hpc_job")] = s.value;
  EXPECT_EQ(idle_by_job["900"], 1) << "allocated, no process: the wasted GPU";
  EXPECT_EQ(idle_by_job["1234"], 0);
}

TEST_F(AttributedCollectorTest, EndedJobsVanishWithTheirMapping) {
  table_.Update(AttributionSource::kMapping, {{{"3", "900", "", ""}}, {}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  table_.Update(AttributionSource::kMapping, {});
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  for (const Sample& s : Find(out, "gpuscope_gpu_allocation_info")->samples)
    EXPECT_NE(Label(s, "hpc_job"), "900");
  for (const Sample& s : Find(out, "DCGM_FI_DEV_GPU_UTIL")->samples) EXPECT_NE(Label(s, "hpc_job"), "900");
}

TEST_F(AttributedCollectorTest, HpcJobLabelCanBeTurnedOffForCardinality) {
  table_.Update(AttributionSource::kMapping, {{{"2", "700", "", ""}, {"2", "701", "", ""}}, {}});
  AttributionOptions options;
  options.hpc_job_label = false;
  auto collector = Make(options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  const MetricFamily* util = Find(out, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(util->samples.size(), 4u) << "no copies per job";
  EXPECT_EQ(Label(util->samples[0], "hpc_job"), "<absent>");
  EXPECT_NE(Find(out, "gpuscope_gpu_allocation_info"), nullptr) << "the join series stay";
}

TEST_F(AttributedCollectorTest, AllocatedGpuIsIdleOnlyAfterAWholeWindowBelowTheThreshold) {
  // GPU 3 runs nothing at all, GPU 0 holds two processes that compute nothing (the notebook case), GPU 1
  // computes at 10%.
  table_.Update(AttributionSource::kMapping,
                {{{"0", "100", "", ""}, {"1", "101", "", ""}, {"3", "103", "", ""}}, {}});
  utilisation_[3] = 0.0;
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 0) << "not yet a whole window";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_without_process", "100"), 0) << "it holds processes";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_without_process", "103"), 1);
  now_ += AttributedCollector::kIdleWindow - std::chrono::seconds(1);
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 0);
  now_ += std::chrono::seconds(1);
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 1)
      << "a process holds memory but the GPU computed nothing for the whole window";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "103"), 1) << "no process, no work";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "101"), 0) << "10% is work";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "102"), -1) << "GPU 2 is not allocated";
}

TEST_F(AttributedCollectorTest, OneBusyCycleStartsTheIdleWindowAgain) {
  table_.Update(AttributionSource::kMapping, {{{"0", "100", "", ""}}, {}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  now_ += AttributedCollector::kIdleWindow;
  utilisation_[0] = AttributedCollector::kIdleUtilisation;  // at the threshold: busy
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 0);
  utilisation_[0] = 0.01;
  now_ += AttributedCollector::kIdleWindow - std::chrono::seconds(1);
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 0) << "quiet since the busy cycle only";
  now_ += std::chrono::seconds(1);
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "100"), 1);
}

TEST_F(AttributedCollectorTest, ANewJobOnAnIdleGpuStartsItsOwnWindow) {
  table_.Update(AttributionSource::kMapping, {{{"3", "900", "", ""}}, {}});
  utilisation_[3] = 0.0;
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  now_ += AttributedCollector::kIdleWindow;
  table_.Update(AttributionSource::kMapping, {{{"3", "901", "", ""}}, {}});
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "901"), 0) << "the job just got the GPU";
  EXPECT_EQ(ValueFor(out, "gpuscope_gpu_allocated_idle", "900"), -1) << "the ended job's series is gone";
}

TEST_F(AttributedCollectorTest, GpuProcessesWithTheirJobsGoToTheNodeState) {
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  auto processes = node_.gpu_processes().Current();
  ASSERT_EQ(processes->size(), 3u);
  EXPECT_EQ((*processes)[0].gpu, "0");
  EXPECT_EQ((*processes)[0].pci_bus_id, "00000000:10:00.0");
  EXPECT_EQ((*processes)[0].hpc_job, "1234");
  EXPECT_EQ((*processes)[2].pid, 5001u);
  EXPECT_EQ((*processes)[2].hpc_job, "4321");
}

TEST_F(AttributedCollectorTest, DescribeAddsHpcJobAndTheJoinFamilies) {
  auto collector = Make();
  auto described = collector->Describe();
  ASSERT_FALSE(described.empty());
  EXPECT_EQ(described[0].labels.back(), "hpc_job");
  bool join = false;
  for (const auto& d : described) join = join || d.name == "gpuscope_gpu_allocated_idle";
  EXPECT_TRUE(join);
}

// ---- Kubernetes: pod labels and the gpuscope_k8s_* series from PodTable views ----------------------

PodDeviceAllocation Held(std::string device, std::string resource, std::string ns, std::string pod,
                         std::string container, bool replica = false) {
  return {std::move(device), std::move(resource), replica,
          std::move(ns),     std::move(pod),      std::move(container)};
}

AttributionOptions WithKubernetes() {
  AttributionOptions options;
  options.kubernetes = true;
  return options;
}

// "gpu:namespace/pod/container" of each sample of `family`, in order.
std::vector<std::string> PodsOn(const std::vector<MetricFamily>& out, std::string_view family) {
  std::vector<std::string> pods;
  const MetricFamily* f = Find(out, family);
  if (f == nullptr) return pods;
  for (const Sample& s : f->samples) {
    const std::string instance = Label(s, "GPU_I_ID");
    pods.push_back(Label(s, "gpu") + (instance == "<absent>" || instance.empty() ? "" : "." + instance) +
                   ":" + Label(s, "namespace") + "/" + Label(s, "pod") + "/" + Label(s, "container"));
  }
  return pods;
}

// The value of a per-resource node count; -1 when absent.
double Count(const std::vector<MetricFamily>& out, std::string_view family, std::string_view resource) {
  const MetricFamily* f = Find(out, family);
  if (f == nullptr) return -1;
  for (const Sample& s : f->samples) {
    if (Label(s, "resource") == resource) return s.value;
  }
  return -1;
}

TEST_F(AttributedCollectorTest, EveryGpuSeriesGetsTheNamespacePodAndContainerHoldingItsGpu) {
  node_.pods().UpdateDevices({{Held("GPU-2", "nvidia.com/gpu", "ml", "trainer-0", "trainer")}, {}, {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "DCGM_FI_DEV_GPU_UTIL"),
            (std::vector<std::string>{"0://", "1://", "2:ml/trainer-0/trainer", "3://"}))
      << "free GPUs keep the labels, empty";
  const MetricFamily* util = Find(out, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(Label(util->samples[0], "hpc_job"), "1234") << "hpc_job stays beside the pod labels";
}

TEST_F(AttributedCollectorTest, PodLabelsFollowTheKubeletsViewInTheNextCycleWhenAPodMovesOrEnds) {
  node_.pods().UpdateDevices({{Held("GPU-2", "nvidia.com/gpu", "ml", "trainer-0", "trainer")}, {}, {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  node_.pods().UpdateDevices({{Held("GPU-3", "nvidia.com/gpu", "ml", "trainer-1", "trainer")}, {}, {}});
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "DCGM_FI_DEV_GPU_UTIL"),
            (std::vector<std::string>{"0://", "1://", "2://", "3:ml/trainer-1/trainer"}));
  node_.pods().UpdateDevices({});
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "DCGM_FI_DEV_GPU_UTIL"), (std::vector<std::string>{"0://", "1://", "2://", "3://"}));
  EXPECT_TRUE(Find(out, "gpuscope_k8s_gpu_allocation_info")->samples.empty());
}

TEST_F(AttributedCollectorTest, ATimeSlicedGpuGetsOneCopyOfEachSeriesPerHoldingContainer) {
  node_.pods().UpdateDevices({{Held("GPU-3", "nvidia.com/gpu", "notebooks", "alice", "notebook", true),
                               Held("GPU-3", "nvidia.com/gpu", "notebooks", "bob", "notebook", true)},
                              {{"GPU-3", "nvidia.com/gpu", 2}},
                              {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_up"),
            (std::vector<std::string>{"0://", "1://", "2://", "3:notebooks/alice/notebook",
                                      "3:notebooks/bob/notebook"}));
  const MetricFamily* info = Find(out, "gpuscope_k8s_gpu_allocation_info");
  ASSERT_EQ(info->samples.size(), 2u);
  for (const Sample& s : info->samples) {
    EXPECT_EQ(Label(s, "shared"), "true");
    EXPECT_EQ(Label(s, "resource"), "nvidia.com/gpu");
    EXPECT_EQ(Label(s, "UUID"), "GPU-3") << "the GPU's identity labels, for joins";
  }
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocatable", "nvidia.com/gpu"), 2) << "two replicas, two units";
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated", "nvidia.com/gpu"), 2);
}

TEST_F(AttributedCollectorTest, JobsAndPodsOnOneNodeGiveEachCombinationItsCopy) {
  table_.Update(AttributionSource::kMapping, {{{"2", "700", "", ""}}, {}});
  node_.pods().UpdateDevices(
      {{Held("GPU-2", "nvidia.com/gpu", "a", "p", "c"), Held("GPU-2", "nvidia.com/gpu", "b", "q", "d", true)},
       {},
       {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  std::vector<std::string> on_gpu2;
  for (const Sample& s : Find(out, "DCGM_FI_DEV_GPU_UTIL")->samples) {
    if (Label(s, "gpu") == "2") on_gpu2.push_back(Label(s, "hpc_job") + ":" + Label(s, "pod"));
  }
  EXPECT_EQ(on_gpu2, (std::vector<std::string>{"700:p", "700:q"}));
}

TEST_F(AttributedCollectorTest, AMigInstancesSeriesGetTheHolderOfItsMigDeviceAndTheParentKeepsItsOwn) {
  mig_ = true;
  node_.pods().UpdateDevices({{Held("MIG-3-1", "nvidia.com/mig-1g.10gb", "inference", "llm-0", "server"),
                               // A MIG device under nvidia.com/gpu (the single strategy): joined by its form.
                               Held("MIG-3-2", "nvidia.com/gpu", "inference", "embed-0", "server")},
                              {{"MIG-3-1", "nvidia.com/mig-1g.10gb", 1}, {"MIG-3-2", "nvidia.com/gpu", 1}},
                              {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_mig_memory_used_bytes"),
            (std::vector<std::string>{"3.1:inference/llm-0/server", "3.2:inference/embed-0/server"}));
  EXPECT_EQ(PodsOn(out, "DCGM_FI_DEV_GPU_UTIL")[3], "3://") << "no pod holds the whole GPU";
  EXPECT_EQ(PodsOn(out, "gpuscope_k8s_gpu_allocation_info"),
            (std::vector<std::string>{"3.1:inference/llm-0/server", "3.2:inference/embed-0/server"}));
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated", "nvidia.com/mig-1g.10gb"), 1);
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated", "nvidia.com/gpu"), 1);
}

TEST_F(AttributedCollectorTest, AProcessSeriesGetsThePodOnlyWhenExactlyOnePodHoldsItsGpu) {
  node_.pods().UpdateDevices({{Held("GPU-0", "nvidia.com/gpu", "ml", "trainer-0", "trainer"),
                               Held("GPU-1", "nvidia.com/gpu", "n", "alice", "nb", true),
                               Held("GPU-1", "nvidia.com/gpu", "n", "bob", "nb", true)},
                              {},
                              {}});
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0:ml/trainer-0/trainer", "0:ml/trainer-0/trainer", "1://"}))
      << "a process on a GPU two pods share is not guessed into one of them";
}

// The pods of tests/fixtures/proc/k8s_node: pid 1001 in alice's cgroup, 1002 in bob's, 5001 in a pod
// that holds no GPU here.
constexpr const char* kAliceUid = "a11ce000-0000-4000-8000-000000000001";
constexpr const char* kBobUid = "b0b00000-0000-4000-8000-000000000002";

PodMetadata Uid(std::string ns, std::string pod, std::string uid) {
  return PodMetadata{PodRef{std::move(ns), std::move(pod)}, std::move(uid), "", "", {}};
}

TEST_F(AttributedCollectorTest, AProcessOnASharedGpuGetsThePodWhoseUidItsCgroupNames) {
  // GPU 0 time-sliced between alice and bob (their processes 1001 and 1002), GPU 1 between carol and
  // dave while its process 5001 sits in a third pod's cgroup.
  node_.pods().UpdateDevices({{Held("GPU-0", "nvidia.com/gpu", "n", "alice", "nb", true),
                               Held("GPU-0", "nvidia.com/gpu", "n", "bob", "nb", true),
                               Held("GPU-1", "nvidia.com/gpu", "n", "carol", "nb", true),
                               Held("GPU-1", "nvidia.com/gpu", "n", "dave", "nb", true)},
                              {},
                              {{"n", "alice"}, {"n", "bob"}, {"n", "carol"}, {"n", "dave"}}});
  node_.pods().UpdateMetadata({Uid("n", "alice", kAliceUid), Uid("n", "bob", kBobUid),
                               Uid("n", "carol", "ca201000-0000-4000-8000-000000000003"),
                               Uid("n", "dave", "da4e0000-0000-4000-8000-000000000004")});
  auto collector = Make(WithKubernetes(), GPUSCOPE_K8S_PROC_FIXTURE);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0:n/alice/nb", "0:n/bob/nb", "1://"}))
      << "systemd and cgroupfs layouts alike; a UID no holder has is never guessed";
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_up")[0], "0:n/alice/nb") << "GPU series keep one copy per pod";
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_up")[1], "0:n/bob/nb");
}

TEST_F(AttributedCollectorTest, WithoutTheApiServersUidsAProcessOnASharedGpuStaysWithoutAPod) {
  node_.pods().UpdateDevices({{Held("GPU-0", "nvidia.com/gpu", "n", "alice", "nb", true),
                               Held("GPU-0", "nvidia.com/gpu", "n", "bob", "nb", true)},
                              {},
                              {{"n", "alice"}, {"n", "bob"}}});
  auto collector = Make(WithKubernetes(), GPUSCOPE_K8S_PROC_FIXTURE);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0://", "0://", "1://"}));
  // The API server answers: the next cycle names them.
  node_.pods().UpdateMetadata({Uid("n", "alice", kAliceUid), Uid("n", "bob", kBobUid)});
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0:n/alice/nb", "0:n/bob/nb", "1://"}));
}

TEST_F(AttributedCollectorTest, APodWithTwoContainersOnTheGpuGetsThePodButNoContainer) {
  node_.pods().UpdateDevices({{Held("GPU-0", "nvidia.com/gpu", "n", "alice", "nb", true),
                               Held("GPU-0", "nvidia.com/gpu", "n", "alice", "sidecar", true),
                               Held("GPU-0", "nvidia.com/gpu", "n", "bob", "nb", true)},
                              {},
                              {{"n", "alice"}, {"n", "bob"}}});
  node_.pods().UpdateMetadata({Uid("n", "alice", kAliceUid), Uid("n", "bob", kBobUid)});
  auto collector = Make(WithKubernetes(), GPUSCOPE_K8S_PROC_FIXTURE);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0:n/alice/", "0:n/bob/nb", "1://"}));
}

TEST_F(AttributedCollectorTest, AProcessOfAnotherPodOnAGpuOnePodHoldsIsNotGivenToThatPod) {
  // GPU 1 is held by carol alone, but its process 5001 runs in another pod's cgroup (a pod that sees
  // every GPU); GPU 0's processes are alice's and bob's, and alice holds it alone without a known UID.
  node_.pods().UpdateDevices({{Held("GPU-0", "nvidia.com/gpu", "n", "alice", "nb"),
                               Held("GPU-1", "nvidia.com/gpu", "n", "carol", "nb")},
                              {},
                              {{"n", "alice"}, {"n", "carol"}}});
  node_.pods().UpdateMetadata({Uid("n", "carol", "ca201000-0000-4000-8000-000000000003")});
  auto collector = Make(WithKubernetes(), GPUSCOPE_K8S_PROC_FIXTURE);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(PodsOn(out, "gpuscope_gpu_process_memory_bytes"),
            (std::vector<std::string>{"0:n/alice/nb", "0:n/alice/nb", "1://"}))
      << "a UID known on both sides and different contradicts the kubelet's sole holder";
}

TEST_F(AttributedCollectorTest, NodeCountsPerResourceAndTheIdleAllocationUseTheJobsIdleSignal) {
  // GPU 0: two processes, no work; GPU 2: 20% busy; GPU 3: nothing at all. A device of another node
  // (GPU-9) counts as allocated in the kubelet's units but joins nothing; an FPGA is no GPU.
  node_.pods().UpdateDevices(
      {{Held("GPU-0", "nvidia.com/gpu", "a", "p0", "c"), Held("GPU-2", "nvidia.com/gpu", "a", "p2", "c"),
        Held("GPU-3", "nvidia.com/gpu", "a", "p3", "c"), Held("GPU-9", "nvidia.com/gpu", "a", "p9", "c"),
        Held("fpga-0", "example.com/fpga", "a", "f", "c")},
       {{"GPU-0", "nvidia.com/gpu", 1},
        {"GPU-1", "nvidia.com/gpu", 1},
        {"GPU-2", "nvidia.com/gpu", 1},
        {"GPU-3", "nvidia.com/gpu", 1},
        {"fpga-0", "example.com/fpga", 1}},
       {}});
  utilisation_[3] = 0.0;
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocatable", "nvidia.com/gpu"), 4);
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated", "nvidia.com/gpu"), 4);
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_in_use", "nvidia.com/gpu"), 1)
      << "GPU 2 works; GPU 0's processes only hold it (held, not used)";
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated_idle", "nvidia.com/gpu"), 0) << "not yet a whole window";
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocatable", "example.com/fpga"), -1) << "not a GPU resource";
  now_ += AttributedCollector::kIdleWindow;
  out.clear();
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_allocated_idle", "nvidia.com/gpu"), 2) << "GPUs 0 and 3";
  EXPECT_EQ(Count(out, "gpuscope_k8s_gpus_in_use", "nvidia.com/gpu"), 1) << "in use and idle never overlap";
  std::vector<std::string> idle;
  for (const Sample& s : Find(out, "gpuscope_k8s_gpu_allocated_idle")->samples) {
    idle.push_back(Label(s, "pod") + "=" + std::to_string(static_cast<int>(s.value)));
  }
  EXPECT_EQ(idle, (std::vector<std::string>{"p0=1", "p2=0", "p3=1"}));
}

TEST_F(AttributedCollectorTest, NodeCountsAreAbsentUntilTheKubeletFirstAnswered) {
  auto collector = Make(WithKubernetes());
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_TRUE(Find(out, "gpuscope_k8s_gpus_allocatable")->samples.empty());
  EXPECT_EQ(PodsOn(out, "DCGM_FI_DEV_GPU_UTIL"), (std::vector<std::string>{"0://", "1://", "2://", "3://"}));
}

TEST_F(AttributedCollectorTest, WithoutKubernetesNoPodLabelsAndNoK8sSeries) {
  node_.pods().UpdateDevices({{Held("GPU-2", "nvidia.com/gpu", "ml", "trainer-0", "trainer")}, {}, {}});
  auto collector = Make();
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  EXPECT_EQ(Label(Find(out, "DCGM_FI_DEV_GPU_UTIL")->samples[2], "pod"), "<absent>");
  EXPECT_EQ(Find(out, "gpuscope_k8s_gpu_allocation_info"), nullptr);
}

TEST_F(AttributedCollectorTest, DescribeAddsThePodLabelsWithKubernetes) {
  auto described = Make(WithKubernetes())->Describe();
  ASSERT_FALSE(described.empty());
  EXPECT_EQ(described[0].labels, (std::vector<std::string>{"hpc_job", "namespace", "pod", "container"}));
  bool counts = false;
  for (const auto& d : described) counts = counts || d.name == "gpuscope_k8s_gpus_in_use";
  EXPECT_TRUE(counts);
}

}  // namespace
}  // namespace gpuscope
