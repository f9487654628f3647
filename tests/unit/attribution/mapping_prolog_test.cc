// deploy/slurm/prolog.sh and epilog.sh, run with a fake Slurm environment on a temp directory (no Slurm
// needed): shared GPUs, concurrent prologs, the minor -> NVML index remap, arrays, hostile values, and a
// reader that never sees half a file. Output is checked with the agent's own parsers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>

#include "src/parsers/mapping_files.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gpuscope-prolog-XXXXXX").string();
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

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class SlurmScripts : public ::testing::Test {
 protected:
  fs::path jobs() const { return dir_.path() / "jobs"; }

  // The command line that runs `script` ("prolog" or "epilog") with only `env` (plus our defaults).
  std::string Command(const std::string& script, const std::map<std::string, std::string>& env) const {
    std::map<std::string, std::string> all = {
        {"PATH", "/usr/bin:/bin"},
        {"GPUSCOPE_MAPPING_DIR", jobs().string()},
        {"GPUSCOPE_DEVICE_MAP", (dir_.path() / "devices").string()},
        {"GPUSCOPE_PROC_NVIDIA_GPUS", (dir_.path() / "proc-gpus").string()},
        {"GPUSCOPE_NVIDIA_SMI", (dir_.path() / "no-nvidia-smi").string()},
        {"GPUSCOPE_SYSLOG", "0"},
    };
    for (const auto& [k, v] : env) all[k] = v;
    std::string command = "env -i";
    for (const auto& [k, v] : all) command += " " + k + "=" + Quote(v);
    return command + " /bin/bash " + Quote(std::string(GPUSCOPE_SLURM_SCRIPTS) + "/" + script + ".sh");
  }

  // Runs the script; returns its exit status (stderr goes to the test log).
  int Run(const std::string& script, const std::map<std::string, std::string>& env) const {
    int status = std::system(Command(script, env).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<std::string> JobsOn(const std::string& gpu) const {
    if (!fs::exists(jobs() / gpu)) return {};
    DcgmMappingFile file = ParseDcgmMapping(Read(jobs() / gpu));
    EXPECT_EQ(file.error, MappingError::kNone);
    EXPECT_TRUE(file.terminated);
    return file.job_ids;
  }

  GpuscopeRecord Record(const std::string& job_id) const {
    return ParseGpuscopeRecord(Read(jobs() / ("gpuscope-job." + job_id)), job_id);
  }

  TempDir dir_;
};

TEST_F(SlurmScripts, TwoJobsOnOneGpuBothAppearAndTheEpilogOfOneLeavesTheOther) {
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "100"}, {"SLURM_JOB_GPUS", "0,1"}}), 0);
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "101"}, {"SLURM_JOB_GPUS", "1"}}), 0);
  EXPECT_THAT(JobsOn("0"), ElementsAre("100"));
  EXPECT_THAT(JobsOn("1"), ElementsAre("100", "101"));

  ASSERT_EQ(Run("epilog", {{"SLURM_JOB_ID", "100"}}), 0);
  EXPECT_FALSE(fs::exists(jobs() / "0")) << "a GPU file left empty is deleted";
  EXPECT_THAT(JobsOn("1"), ElementsAre("101"));
  EXPECT_FALSE(fs::exists(jobs() / "gpuscope-job.100"));
  EXPECT_TRUE(fs::exists(jobs() / "gpuscope-job.101"));

  ASSERT_EQ(Run("epilog", {{"SLURM_JOB_ID", "101"}}), 0);
  for (const auto& entry : fs::directory_iterator(jobs()))
    EXPECT_EQ(entry.path().filename().string().front(), '.') << entry.path() << " left behind";
}

TEST_F(SlurmScripts, TheRecordCarriesTheJobDetailsAndARequeuedJobIsListedOnce) {
  std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "200"},          {"SLURM_JOB_GPUS", "2-3"},
                                            {"SLURM_JOB_USER", "alice"},      {"SLURM_JOB_UID", "1001"},
                                            {"SLURM_JOB_ACCOUNT", "physics"}, {"SLURM_JOB_PARTITION", "gpu"},
                                            {"SLURM_JOB_NAME", "train llm"}};
  ASSERT_EQ(Run("prolog", env), 0);
  ASSERT_EQ(Run("prolog", env), 0);  // requeue: the prolog runs again for the same job id
  EXPECT_THAT(JobsOn("2"), ElementsAre("200"));
  GpuscopeRecord record = Record("200");
  ASSERT_EQ(record.error, MappingError::kNone);
  EXPECT_EQ(record.job.user, "alice");
  EXPECT_EQ(record.job.uid, "1001");
  EXPECT_EQ(record.job.account, "physics");
  EXPECT_EQ(record.job.partition, "gpu");
  EXPECT_EQ(record.job.job_name, "train llm");
  EXPECT_THAT(record.job.gpus, ElementsAre("2", "3"));
}

TEST_F(SlurmScripts, ArrayTasksAreRecordedUnderTheirOwnJobIdWithTheArrayIds) {
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "503"},
                           {"SLURM_ARRAY_JOB_ID", "500"},
                           {"SLURM_ARRAY_TASK_ID", "3"},
                           {"SLURM_JOB_GPUS", "0"}}),
            0);
  EXPECT_THAT(JobsOn("0"), ElementsAre("503"));
  GpuscopeRecord record = Record("503");
  ASSERT_EQ(record.error, MappingError::kNone);
  EXPECT_EQ(record.job.array_job_id, "500");
  EXPECT_EQ(record.job.array_task_id, "3");
  EXPECT_EQ(record.job.account, "") << "a missing SLURM_JOB_ACCOUNT is an empty field, not an error";
}

TEST_F(SlurmScripts, MinorsAreMappedToNvmlIndicesThroughTheAgentsDeviceMap) {
  // NVML index 0 is /dev/nvidia2, index 1 is /dev/nvidia0, index 2 is /dev/nvidia1.
  std::ofstream(dir_.path() / "devices") << "0 2 0000:3b:00.0 GPU-a\n1 0 0000:5e:00.0 GPU-b\n"
                                         << "2 1 0000:86:00.0 GPU-c\n";
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "300"}, {"SLURM_JOB_GPUS", "0,1"}}), 0);
  EXPECT_FALSE(fs::exists(jobs() / "0")) << "Slurm's index 0 is minor 0, which is NVML index 1";
  EXPECT_THAT(JobsOn("1"), ElementsAre("300"));
  EXPECT_THAT(JobsOn("2"), ElementsAre("300"));
  GpuscopeRecord record = Record("300");
  EXPECT_THAT(record.job.gpus, ElementsAre("1", "2"));
  EXPECT_THAT(record.job.minors, ElementsAre("0", "1"));
}

TEST_F(SlurmScripts, WithoutADeviceMapMinorsAreMappedThroughProcAndNvidiaSmi) {
  fs::path proc = dir_.path() / "proc-gpus";
  fs::create_directories(proc / "0000:3b:00.0");
  fs::create_directories(proc / "0000:86:00.0");
  std::ofstream(proc / "0000:3b:00.0" / "information") << "Model: \t\t NVIDIA H100\nDevice Minor: \t 1\n";
  std::ofstream(proc / "0000:86:00.0" / "information") << "Model: \t\t NVIDIA H100\nDevice Minor: \t 0\n";
  fs::path smi = dir_.path() / "nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\nprintf '0, 00000000:3B:00.0\\n1, 00000000:86:00.0\\n'\n";
  fs::permissions(smi, fs::perms::owner_all);
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "301"}, {"SLURM_JOB_GPUS", "0"}, {"GPUSCOPE_NVIDIA_SMI", smi}}),
            0);
  EXPECT_THAT(JobsOn("1"), ElementsAre("301")) << "minor 0 is the GPU at 86:00.0, NVML index 1";
  EXPECT_FALSE(fs::exists(jobs() / "0"));
}

TEST_F(SlurmScripts, AMinorMissingFromTheDeviceMapIsSkippedRatherThanGuessed) {
  std::ofstream(dir_.path() / "devices") << "0 1 0000:3b:00.0 GPU-a\n";
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "302"}, {"SLURM_JOB_GPUS", "0,1"}}), 0);
  EXPECT_THAT(JobsOn("0"), ElementsAre("302")) << "minor 1 -> index 0";
  EXPECT_FALSE(fs::exists(jobs() / "1")) << "minor 0 is unknown: no guess";
}

TEST_F(SlurmScripts, GpuscopeGresMinorsMapsSlurmIndicesWhenGresConfIsNotInMinorOrder) {
  ASSERT_EQ(
      Run("prolog", {{"SLURM_JOB_ID", "303"}, {"SLURM_JOB_GPUS", "0"}, {"GPUSCOPE_GRES_MINORS", "5,4"}}), 0);
  EXPECT_THAT(Record("303").job.minors, ElementsAre("5"));
  EXPECT_THAT(JobsOn("5"), ElementsAre("303")) << "identity minor -> index without a device map";
}

TEST_F(SlurmScripts, MappingErrorsNeverFailTheJobUnlessStrict) {
  EXPECT_EQ(Run("prolog", {{"SLURM_JOB_ID", "1;rm -rf /"}, {"SLURM_JOB_GPUS", "0"}}), 0);
  EXPECT_EQ(Run("prolog", {{"SLURM_JOB_ID", "400"}, {"SLURM_JOB_GPUS", "0,x"}}), 0);
  EXPECT_EQ(Run("epilog", {{"SLURM_JOB_ID", ""}}), 0);
  EXPECT_FALSE(fs::exists(jobs() / "0"));
  EXPECT_EQ(
      Run("prolog", {{"SLURM_JOB_ID", "400"}, {"SLURM_JOB_GPUS", "0,x"}, {"GPUSCOPE_PROLOG_STRICT", "1"}}),
      1);
  EXPECT_EQ(Run("prolog", {{"SLURM_JOB_ID", "401"}}), 0) << "a job without GPUs is not an error";
  EXPECT_FALSE(fs::exists(jobs() / "gpuscope-job.401"));
}

TEST_F(SlurmScripts, HostileValuesCannotForgeRecordFields) {
  ASSERT_EQ(Run("prolog", {{"SLURM_JOB_ID", "500"},
                           {"SLURM_JOB_GPUS", "0"},
                           {"SLURM_JOB_NAME", "x\naccount=evil\ngpus=7"},
                           {"SLURM_JOB_USER", "bad\xff\xfe"},
                           {"SLURM_JOB_UID", "0 0"}}),
            0);
  GpuscopeRecord record = Record("500");
  ASSERT_EQ(record.error, MappingError::kNone);
  EXPECT_EQ(record.job.account, "");
  EXPECT_THAT(record.job.gpus, ElementsAre("0"));
  EXPECT_EQ(record.job.uid, "");
  EXPECT_EQ(record.job.job_name, "x account=evil gpus=7");
}

TEST_F(SlurmScripts, EightConcurrentPrologsOnTheSameGpusAllAppearAndConcurrentEpilogsRemoveThemAll) {
  std::string all;
  for (int i = 0; i < 8; ++i)
    all += Command("prolog", {{"SLURM_JOB_ID", std::to_string(600 + i)}, {"SLURM_JOB_GPUS", "0,1"}}) + " & ";
  ASSERT_EQ(std::system((all + "wait").c_str()), 0);
  for (const char* gpu : {"0", "1"}) {
    EXPECT_THAT(JobsOn(gpu), UnorderedElementsAre("600", "601", "602", "603", "604", "605", "606", "607"))
        << "GPU " << gpu;
  }
  all.clear();
  for (int i = 0; i < 8; ++i) all += Command("epilog", {{"SLURM_JOB_ID", std::to_string(600 + i)}}) + " & ";
  ASSERT_EQ(std::system((all + "wait").c_str()), 0);
  EXPECT_FALSE(fs::exists(jobs() / "0"));
  EXPECT_FALSE(fs::exists(jobs() / "1"));
}

TEST_F(SlurmScripts, AReaderNeverSeesHalfAFileWhilePrologsAndEpilogsRun) {
  std::string loop = "for i in $(seq 1 30); do ";
  loop += Command("prolog", {{"SLURM_JOB_ID", "700"}, {"SLURM_JOB_GPUS", "0"}}) + "; ";
  loop += Command("prolog", {{"SLURM_JOB_ID", "701"}, {"SLURM_JOB_GPUS", "0"}}) + "; ";
  loop += Command("epilog", {{"SLURM_JOB_ID", "700"}}) + "; ";
  loop += Command("epilog", {{"SLURM_JOB_ID", "701"}}) + "; done";
  std::atomic<bool> done{false};
  int loop_status = -1;
  std::thread writer([&] {
    loop_status = std::system(("/bin/bash -c " + Quote(loop)).c_str());
    done = true;
  });
  int reads = 0;
  int bad = 0;
  while (!done) {
    std::ifstream in(jobs() / "0", std::ios::binary);
    if (!in) {
      std::this_thread::yield();
      continue;
    }
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    DcgmMappingFile file = ParseDcgmMapping(content);
    ++reads;
    if (file.error != MappingError::kNone || !file.terminated || file.job_ids.empty()) {
      ++bad;
      ADD_FAILURE() << "half or empty file seen: '" << content << "'";
      if (bad > 3) break;
    }
    std::ifstream record_in(jobs() / "gpuscope-job.700", std::ios::binary);
    if (record_in) {
      std::string record((std::istreambuf_iterator<char>(record_in)), std::istreambuf_iterator<char>());
      GpuscopeRecord parsed = ParseGpuscopeRecord(record, "700");
      if (parsed.error != MappingError::kNone || parsed.job.gpus.empty()) {
        ++bad;
        ADD_FAILURE() << "half record seen: '" << record << "'";
      }
    }
  }
  writer.join();
  EXPECT_EQ(loop_status, 0);
  EXPECT_GT(reads, 0) << "the reader saw the file at least once";
}

}  // namespace
}  // namespace gpuscope
