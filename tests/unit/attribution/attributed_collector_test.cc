// The attribution layer on the GPU collector's output: hpc_job labels as dcgm-exporter adds them, the
// join series, allocated-but-idle GPUs, and the device map for the prolog.
#include "src/attribution/attributed_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "src/attribution/gpu_directory.h"
#include "src/attribution/proc_resolver.h"

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

// Stands in for the GPU collector: four GPUs; GPU 0 runs pids 1001 and 1002 (job 1234 in the proc
// fixture), GPU 1 runs pid 5001 (job 4321 through environ), GPUs 2 and 3 run nothing.
class FakeGpuCollector : public Collector {
 public:
  std::string_view Name() const override { return "gpu"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    MetricFamily up{"gpuscope_gpu_up", "", MetricType::kGauge, "", {}};
    MetricFamily util{"DCGM_FI_DEV_GPU_UTIL", "", MetricType::kGauge, "", {}};
    MetricFamily processes{"gpuscope_gpu_processes", "", MetricType::kGauge, "", {}};
    MetricFamily memory{"gpuscope_gpu_process_memory_bytes", "", MetricType::kGauge, "", {}};
    for (int i = 0; i < 4; ++i) {
      up.samples.push_back({GpuLabels(i), 1});
      util.samples.push_back({GpuLabels(i), 10.0 * i});
    }
    processes.samples = {{GpuLabels(0), 2}, {GpuLabels(1), 1}, {GpuLabels(2), 0}, {GpuLabels(3), 0}};
    memory.samples = {{With(With(GpuLabels(0), "pid", "1001"), "GPU_I_ID", ""), 1e9},
                      {With(With(GpuLabels(0), "pid", "1002"), "GPU_I_ID", ""), 1e9},
                      {With(With(GpuLabels(1), "pid", "5001"), "GPU_I_ID", ""), 1e9}};
    out = {up, util, processes, memory};
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override {
    return {{"DCGM_FI_DEV_GPU_UTIL", MetricType::kGauge, "util", "", {}, "nvml"}};
  }
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
  std::unique_ptr<AttributedCollector> Make(AttributionOptions options = {}) {
    return std::make_unique<AttributedCollector>(std::make_unique<FakeGpuCollector>(), &table_,
                                                 std::make_unique<ProcResolver>(GPUSCOPE_PROC_FIXTURE),
                                                 std::move(options));
  }
  JobTable table_;
};

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

  const MetricFamily* idle = Find(out, "gpuscope_gpu_allocated_idle");
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
  auto collector = Make({.hpc_job_label = false, .device_map_file = ""});
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  const MetricFamily* util = Find(out, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(util->samples.size(), 4u) << "no copies per job";
  EXPECT_EQ(Label(util->samples[0], "hpc_job"), "<absent>");
  EXPECT_NE(Find(out, "gpuscope_gpu_allocation_info"), nullptr) << "the join series stay";
}

TEST_F(AttributedCollectorTest, WritesTheDeviceMapThePrologReads) {
  std::string path = ::testing::TempDir() + "/gpuscope-devices-test/devices";
  auto collector = Make({.hpc_job_label = true, .device_map_file = path});
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector->Collect(out).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "# nvml_index minor pci_bus_id uuid (written by gpuscope-agent)\n"
            "0 7 00000000:10:00.0 GPU-0\n1 6 00000000:11:00.0 GPU-1\n"
            "2 5 00000000:12:00.0 GPU-2\n3 4 00000000:13:00.0 GPU-3\n");
}

// Stands in for the GPU collector on a MIG node: GPU 0 with GPU instance 1 holding two MIG devices.
class FakeMigGpuCollector : public Collector {
 public:
  std::string_view Name() const override { return "gpu"; }
  Status Collect(std::vector<MetricFamily>& out) override {
    MetricFamily up{"gpuscope_gpu_up", "", MetricType::kGauge, "", {{GpuLabels(0), 1}}};
    Labels instance =
        With(With(With(GpuLabels(0), "GPU_I_PROFILE", "3g.40gb"), "GPU_I_ID", "1"), "mig_uuid",
             "MIG-aaaaaaaa-0000-4000-8000-000000000001,MIG-aaaaaaaa-0000-4000-8000-000000000002");
    MetricFamily mig{"gpuscope_gpu_mig_instance_info", "", MetricType::kGauge, "", {{instance, 1}}};
    out = {up, mig};
    return Status::Ok();
  }
  std::vector<MetricDescription> Describe() const override { return {}; }
};

TEST_F(AttributedCollectorTest, PublishesEachGpuAndEachMigDeviceUuidToTheGpuDirectory) {
  GpuDirectory gpus;
  AttributionOptions options;
  options.gpus = &gpus;
  AttributedCollector collector(std::make_unique<FakeMigGpuCollector>(), &table_, nullptr, options);
  std::vector<MetricFamily> out;
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(gpus.GpuKeyOfUuid("GPU-0"), "0");
  EXPECT_EQ(gpus.GpuKeyOfUuid("MIG-aaaaaaaa-0000-4000-8000-000000000001"), "0.1");
  EXPECT_EQ(gpus.GpuKeyOfUuid("MIG-aaaaaaaa-0000-4000-8000-000000000002"), "0.1");
  ASSERT_TRUE(gpus.Find("00000000:10:00.0").has_value());
  EXPECT_EQ(gpus.Find("00000000:10:00.0")->mig.size(), 2u);
  uint64_t version = gpus.Version();
  out.clear();
  ASSERT_TRUE(collector.Collect(out).ok());
  EXPECT_EQ(gpus.Version(), version) << "the same GPUs again are no change for the mapping source";
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

}  // namespace
}  // namespace gpuscope
