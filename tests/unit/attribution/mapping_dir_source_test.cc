// MappingDirSource watches a real directory with inotify and publishes what its files say into the
// JobTable; bad entries are ignored and counted. Tests wait for the table's version (or a counter) to
// change with a generous timeout; they never assert on elapsed time.
#include "src/attribution/mapping_dir_source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>

#include "src/node/gpu_directory.h"
#include "src/parsers/mapping_files.h"
#include "tests/unit/node/test_inventory.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;
constexpr auto kPatience = std::chrono::seconds(20);

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gpuscope-mapping-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Writes atomically (temp file + rename), as the prolog does.
void WriteFile(const fs::path& path, const std::string& content) {
  fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
  }
  fs::rename(tmp, path);
}

bool WaitFor(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

double Metric(const MappingDirSource& source, const std::string& name, const std::string& label_value = "") {
  for (const MetricFamily& family : source.SelfMetrics()) {
    if (family.name != name) continue;
    for (const Sample& sample : family.samples)
      if (label_value.empty() || (!sample.labels.empty() && sample.labels[0].second == label_value))
        return sample.value;
  }
  return -1;
}

std::string JobsOn(const JobTable& table, const std::string& gpu) {
  std::string out;
  // Hold the view: a temporary shared_ptr in the range expression dies before the loop body runs.
  std::shared_ptr<const JobTable::View> view = table.Current();
  for (const Allocation* allocation : view->JobsOn(gpu)) {
    if (!out.empty()) out += ",";
    out += allocation->job_id;
  }
  return out;
}

MappingDirOptions FastOptions() {
  MappingDirOptions options;
  options.debounce = std::chrono::milliseconds(10);
  options.dir_poll = std::chrono::milliseconds(50);
  options.settle = std::chrono::milliseconds(200);
  return options;
}

TEST(MappingDirSource, PublishesFilesPresentAtStartAndFollowsChanges) {
  TempDir dir;
  WriteFile(dir.path() / "0", "100\n");
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, FastOptions());
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100"; }));

  WriteFile(dir.path() / "0", "100\n101\n");
  WriteFile(dir.path() / "3.1", "300\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100,101" && JobsOn(table, "3.1") == "300"; }))
      << "two jobs sharing GPU 0 and a MIG instance are attributed separately";

  fs::remove(dir.path() / "0");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0").empty(); })) << "the epilog's deletion ends the job";
  EXPECT_EQ(JobsOn(table, "3.1"), "300");
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files", "dcgm"), 1);
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_dir_present"), 1);
  source.Stop();
}

TEST(MappingDirSource, ReadsTheGpuscopeRecordAndMergesItWithTheDcgmFiles) {
  TempDir dir;
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, FastOptions());
  ASSERT_TRUE(source.Start().ok());
  WriteFile(dir.path() / "2", "500\n");
  WriteFile(dir.path() / "gpuscope-job.500",
            "version=1\njob_id=500\nuser=alice\nuid=1001\naccount=physics\npartition=gpu\njob_name=t\n"
            "array_job_id=498\narray_task_id=2\nstep_id=\ngpus=2,5\nminors=2,4\n");
  ASSERT_TRUE(WaitFor([&] {
    auto view = table.Current();
    const JobInfo* job = view->Job("500");
    return job != nullptr && job->account == "physics" && view->JobsOn("5").size() == 1;
  }));
  auto view = table.Current();
  const JobInfo* job = view->Job("500");
  EXPECT_EQ(job->user, "alice");
  EXPECT_EQ(job->uid, "1001");
  EXPECT_EQ(job->partition, "gpu");
  EXPECT_EQ(job->array_job_id, "498");
  EXPECT_EQ(job->array_task_id, "2");
  EXPECT_EQ(JobsOn(table, "2"), "500");
  EXPECT_EQ(JobsOn(table, "5"), "500") << "the record's GPU list counts even without a dcgm file";
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files", "gpuscope"), 1);
}

TEST(MappingDirSource, ReadsJobstatsAndAmdFilesByAutoDetection) {
  TempDir dir;
  WriteFile(dir.path() / "1", "700 4242\n");
  WriteFile(dir.path() / "4", R"({"SLURM_JOB_ID":"701","SLURM_JOB_USER":"bob","SLURM_JOB_PARTITION":"amd"})");
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, FastOptions());
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "1") == "700" && JobsOn(table, "4") == "701"; }));
  auto view = table.Current();
  EXPECT_EQ(view->Job("700")->uid, "4242");
  EXPECT_EQ(view->Job("701")->user, "bob");
  EXPECT_EQ(view->Job("701")->partition, "amd");
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files", "jobstats"), 1);
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files", "amd"), 1);
}

TEST(MappingDirSource, AForcedFormatRejectsFilesOfAnotherFormat) {
  TempDir dir;
  WriteFile(dir.path() / "1", "700 4242\n");
  WriteFile(dir.path() / "2", "800\n");
  MappingDirOptions options = FastOptions();
  ASSERT_TRUE(ParseMappingFormatOption("dcgm", &options.format));
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "2") == "800"; }));
  EXPECT_EQ(JobsOn(table, "1"), "");
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files_ignored_total", "invalid_job_id"), 1);
  MappingDirOptions::Format unchanged = options.format;
  EXPECT_FALSE(ParseMappingFormatOption("xml", &options.format));
  EXPECT_EQ(options.format, unchanged);
}

TEST(MappingDirSource, IgnoresSymlinksFifosDirectoriesBadNamesAndBadContentAndCountsEachOnce) {
  TempDir dir;
  TempDir outside;
  WriteFile(outside.path() / "secret", "999\n");
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, FastOptions());
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Metric(source, "gpuscope_attribution_mapping_scans_total") >= 1; }));

  fs::create_symlink(outside.path() / "secret", dir.path() / "5");
  ASSERT_EQ(mkfifo((dir.path() / "6").c_str(), 0600), 0);
  fs::create_directory(dir.path() / "7");
  WriteFile(dir.path() / "..5", "998\n");  // a dot name: skipped silently like the prolog's temp files
  WriteFile(dir.path() / "passwd", "997\n");
  WriteFile(dir.path() / "1", std::string("12\0"
                                          "34\n",
                                          6));
  WriteFile(dir.path() / "2", "../../etc/passwd\n");
  std::string huge;
  while (huge.size() <= kMaxMappingFileBytes) huge += "1234\n";
  WriteFile(dir.path() / "3", huge);
  WriteFile(dir.path() / "0", "100\n");

  auto counted = [&](const char* reason) {
    return Metric(source, "gpuscope_attribution_mapping_files_ignored_total", reason);
  };
  ASSERT_TRUE(WaitFor([&] {
    return JobsOn(table, "0") == "100" && counted("symlink") == 1 && counted("not_regular") == 2 &&
           counted("invalid_name") == 1 && counted("binary") == 1 && counted("invalid_job_id") == 1 &&
           counted("too_large") == 1;
  }));
  auto view = table.Current();
  EXPECT_EQ(view->Job("999"), nullptr) << "the symlink was not followed";
  EXPECT_EQ(view->allocations.size(), 1u) << "nothing but the good file made it into the table";

  // More events: the same bad files are not counted again.
  double scans = Metric(source, "gpuscope_attribution_mapping_scans_total");
  WriteFile(dir.path() / "0", "100\n101\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100,101"; }));
  EXPECT_GT(Metric(source, "gpuscope_attribution_mapping_scans_total"), scans);
  EXPECT_EQ(counted("symlink"), 1);
  EXPECT_EQ(counted("binary"), 1);
  EXPECT_EQ(counted("not_regular"), 2);
}

TEST(MappingDirSource, ADirectoryThatDisappearsEmptiesTheTableAndIsWatchedAgainWhenItReturns) {
  TempDir parent;
  fs::path dir = parent.path() / "jobs";
  JobTable table;
  MappingDirSource source(dir.string(), &table, FastOptions());
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Metric(source, "gpuscope_attribution_mapping_dir_present") == 0; }))
      << "a missing directory at start is not an error";

  fs::create_directory(dir);
  WriteFile(dir / "0", "100\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100"; }));
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_dir_present"), 1);

  fs::remove_all(dir);
  ASSERT_TRUE(WaitFor([&] { return table.Current()->allocations.empty(); }));
  ASSERT_TRUE(WaitFor([&] { return Metric(source, "gpuscope_attribution_mapping_dir_present") == 0; }));

  fs::create_directory(dir);
  WriteFile(dir / "1", "200\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "1") == "200"; }));
  WriteFile(dir / "2", "201\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "2") == "201"; })) << "the new directory is watched";

  // Moved away and replaced (e.g. a tmpfs remount): the watch follows the path, not the old inode.
  fs::rename(dir, parent.path() / "old");
  fs::create_directory(dir);
  WriteFile(dir / "3", "300\n");
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "3") == "300" && JobsOn(table, "1").empty(); }));
}

TEST(MappingDirSource, KeepsThePreviousContentOfAFileCaughtMidWrite) {
  TempDir dir;
  WriteFile(dir.path() / "0", "100\n");
  JobTable table;
  MappingDirOptions options = FastOptions();
  options.settle = std::chrono::hours(1);  // the half-written file never settles within this test
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100"; }));

  // A non-atomic writer has written half a line (no newline yet) and closed the file.
  {
    std::ofstream out(dir.path() / "0", std::ios::app);
    out << "10";
  }
  WriteFile(dir.path() / "1", "200\n");  // an event after it: the re-scan has seen the half file
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "1") == "200"; }));
  EXPECT_EQ(JobsOn(table, "0"), "100") << "the half-written id '10' must never become a label";
}

TEST(MappingDirSource, TakesAnUnterminatedLastLineOnceTheFileHasSettled) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "0");
    out << "100\n101";  // some third-party prologs write the last id without '\n'
  }
  JobTable table;
  MappingDirOptions options = FastOptions();
  options.settle = std::chrono::milliseconds(0);
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100,101"; }));
}

TEST(MappingDirSource, StopReturnsPromptlyAndScanNowWorksWithoutAThread) {
  TempDir dir;
  WriteFile(dir.path() / "0", "100\n");
  JobTable table;
  {
    MappingDirSource source(dir.path().string(), &table, MappingDirOptions{});
    ASSERT_TRUE(source.Start().ok());
    source.Stop();
    source.Stop();
  }
  MappingDirSource manual(dir.path().string(), &table, MappingDirOptions{});
  EXPECT_EQ(manual.ScanNow(), 0);
  EXPECT_EQ(JobsOn(table, "0"), "100");
  uint64_t version = table.Current()->version;
  manual.ScanNow();
  EXPECT_EQ(table.Current()->version, version) << "an unchanged directory publishes nothing new";
}

// Copies a fixture directory (tests/fixtures/mapping/...) file by file, as the prolog would write it.
void CopyFixtureDir(const std::string& relative, const fs::path& to) {
  for (const auto& entry : fs::directory_iterator(fs::path(GPUSCOPE_MAPPING_FIXTURES) / relative)) {
    std::ifstream in(entry.path(), std::ios::binary);
    WriteFile(to / entry.path().filename(), std::string(std::istreambuf_iterator<char>(in), {}));
  }
}

constexpr const char* kGpu1Uuid = "GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d";  // tests/fixtures/.../gpustat
constexpr const char* kMigUuid = "MIG-265a219d-a49f-578a-825d-222c72699c16";   // .../gpustat-mig
constexpr const char* kOtherMigUuid = "MIG-0b7e2d1c-5a4f-4e3d-8c2b-1a0f9e8d7c6b";  // same GPU instance

// What the GPU cycle publishes for a node with GPU 1 (whole) and GPU 2 in MIG mode, whose GPU instance 3
// holds two MIG devices (compute instances).
std::shared_ptr<const GpuInventory> FixtureGpus() {
  return testing::OneWholeGpuAndOneInMig(kGpu1Uuid, {kOtherMigUuid, kMigUuid});
}

TEST(MappingDirSource, JobstatsFilesNamedByGpuUuidResolveToTheGpuAndMergeWithTheIndexFile) {
  TempDir dir;
  CopyFixtureDir("jobstats/gpustat", dir.path());  // "1" and "GPU-<uuid of GPU 1>", one job
  GpuDirectory gpus;
  gpus.Publish(FixtureGpus());
  MappingDirOptions options = FastOptions();
  options.gpus = &gpus;
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "1") == "45916257"; }));
  EXPECT_EQ(table.Current()->allocations.size(), 1u) << "the index file and the UUID file are one allocation";
  EXPECT_EQ(table.Current()->Job("45916257")->uid, "262563");
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files", "jobstats"), 2);
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files_unresolved"), 0);

  // The index file alone goes (a prolog that names only by UUID): the UUID file still holds the GPU.
  fs::remove(dir.path() / "1");
  ASSERT_TRUE(WaitFor([&] { return Metric(source, "gpuscope_attribution_mapping_files", "jobstats") == 1; }));
  EXPECT_EQ(JobsOn(table, "1"), "45916257");
  fs::remove(dir.path() / kGpu1Uuid);
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "1").empty(); })) << "the epilog's deletion ends the job";
}

TEST(MappingDirSource, AMigUuidFileResolvesToItsGpuInstance) {
  TempDir dir;
  CopyFixtureDir("jobstats/gpustat-mig", dir.path());
  WriteFile(dir.path() / kOtherMigUuid, "45916300 1000\n");  // the other compute instance, another job
  GpuDirectory gpus;
  gpus.Publish(FixtureGpus());
  MappingDirOptions options = FastOptions();
  options.gpus = &gpus;
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "2.3") == "45916256,45916300"; }));
  EXPECT_EQ(JobsOn(table, "2"), "") << "a MIG device's job holds its instance, not the whole GPU";
  EXPECT_EQ(table.Current()->Job("45916256")->uid, "262563");
}

TEST(MappingDirSource, AUuidNoGpuShowsYetIsKeptAndAppliedWhenTheGpuAppears) {
  TempDir dir;
  CopyFixtureDir("jobstats/gpustat-mig", dir.path());
  WriteFile(dir.path() / "0", "100\n");
  GpuDirectory gpus;  // the mapping source starts before the first GPU cycle: nothing published yet
  MappingDirOptions options = FastOptions();
  options.gpus = &gpus;
  JobTable table;
  MappingDirSource source(dir.path().string(), &table, options);
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "0") == "100"; }));
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files_unresolved"), 1);
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files_ignored_total", "invalid_name"), 0);
  EXPECT_EQ(table.Current()->Job("45916256"), nullptr);

  gpus.Publish(FixtureGpus());  // the GPU cycle opened the GPUs; no file changed
  ASSERT_TRUE(WaitFor([&] { return JobsOn(table, "2.3") == "45916256"; }));
  EXPECT_EQ(JobsOn(table, "0"), "100");
  EXPECT_EQ(Metric(source, "gpuscope_attribution_mapping_files_unresolved"), 0);

  // The GPUs are gone again (driver reloaded): the file is kept, waiting for them.
  gpus.Publish(std::make_shared<GpuInventory>());
  ASSERT_TRUE(WaitFor([&] { return Metric(source, "gpuscope_attribution_mapping_files_unresolved") == 1; }));
  EXPECT_EQ(JobsOn(table, "2.3"), "");
}

TEST(MappingDirSource, ScanNowResolvesUuidFilesWithTheDirectoryAsItIsThen) {
  TempDir dir;
  WriteFile(dir.path() / kGpu1Uuid, "77 1000\n");
  GpuDirectory gpus;
  MappingDirOptions options;
  options.gpus = &gpus;
  JobTable table;
  MappingDirSource manual(dir.path().string(), &table, options);
  manual.ScanNow();
  EXPECT_EQ(JobsOn(table, "1"), "");
  gpus.Publish(FixtureGpus());
  manual.ScanNow();
  EXPECT_EQ(JobsOn(table, "1"), "77");
}

}  // namespace
}  // namespace gpuscope
