#include "src/cli/job_accounting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace gpuscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(JobAccounting, ParsesTheJobsAllocationLine) {
  JobAccounting accounting;
  ASSERT_TRUE(ParseSacctOutput("4103|FAILED|00:12:01|1:0|billing=16,cpu=16,gres/gpu=8,mem=256G,node=1\n"
                               "4104|COMPLETED|01:02:03|0:0|billing=8,cpu=8,gres/gpu=4,mem=64G,node=1\n",
                               "4104", &accounting)
                  .ok());
  EXPECT_TRUE(accounting.reachable);
  EXPECT_EQ(accounting.state, "COMPLETED");
  EXPECT_EQ(accounting.elapsed, "01:02:03");
  EXPECT_EQ(accounting.exit_code, "0:0");
  EXPECT_EQ(accounting.alloc_tres, "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1");
  EXPECT_EQ(accounting.gpus, 4);
}

TEST(JobAccounting, NoLineForTheJobIsNotFoundAndAShortLineIsInvalid) {
  JobAccounting accounting;
  EXPECT_EQ(ParseSacctOutput("", "4104", &accounting).code(), Status::Code::kNotFound);
  EXPECT_EQ(ParseSacctOutput("4103|FAILED|00:12:01|1:0|cpu=1\n", "4104", &accounting).code(),
            Status::Code::kNotFound);
  EXPECT_EQ(ParseSacctOutput("4104|RUNNING\n", "4104", &accounting).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(accounting.reachable);
}

TEST(JobAccounting, GpuCountOfAllocTres) {
  EXPECT_EQ(GpusOfTres("cpu=8,gres/gpu=4,mem=64G,node=1"), 4);
  EXPECT_EQ(GpusOfTres("cpu=8,gres/gpu:h100=2,gres/gpu:a100=1"), 3);  // typed only: summed
  EXPECT_EQ(GpusOfTres("gres/gpu:h100=2,gres/gpu=2"), 2);             // the untyped total wins
  EXPECT_EQ(GpusOfTres("cpu=8,mem=64G,node=1"), -1);
  EXPECT_EQ(GpusOfTres("gres/gpu=x"), -1);
  EXPECT_EQ(GpusOfTres(""), -1);
}

class FakeSacct : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuscope-sacct-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A sacct stand-in that records its arguments and prints `output` (exit `code`).
  std::string Write(const std::string& output, int code) {
    const fs::path path = dir_ / "sacct";
    std::ofstream(path) << "#!/bin/sh\necho \"$@\" > " << (dir_ / "argv").string() << "\nprintf '%s' '"
                        << output << "'\necho 'sacct: some complaint' >&2\nexit " << code << "\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }
  std::string Argv() const {
    std::ifstream in(dir_ / "argv");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(FakeSacct, AsksForTheAllocationLineAndParsesIt) {
  JobAccounting a = QuerySlurmAccounting(Write("4104|RUNNING|00:05:00|0:0|cpu=2,gres/gpu=8\n", 0), "4104",
                                         std::chrono::seconds(10));
  EXPECT_EQ(Argv(), "-X -j 4104 --parsable2 --noheader --format=JobID,State,Elapsed,ExitCode,AllocTRES\n");
  EXPECT_TRUE(a.queried);
  EXPECT_TRUE(a.reachable);
  EXPECT_EQ(a.state, "RUNNING");
  EXPECT_EQ(a.gpus, 8);
}

TEST_F(FakeSacct, AFailingOrMissingSacctSaysWhy) {
  JobAccounting failed = QuerySlurmAccounting(Write("", 1), "4104", std::chrono::seconds(10));
  EXPECT_TRUE(failed.queried);
  EXPECT_FALSE(failed.reachable);
  EXPECT_THAT(failed.error, HasSubstr("sacct: some complaint"));
  JobAccounting empty = QuerySlurmAccounting(Write("", 0), "4104", std::chrono::seconds(10));
  EXPECT_FALSE(empty.reachable);
  EXPECT_EQ(empty.error, "sacct has no record of job 4104");
  JobAccounting missing =
      QuerySlurmAccounting((dir_ / "no-such-sacct").string(), "4104", std::chrono::seconds(10));
  EXPECT_FALSE(missing.reachable);
  EXPECT_FALSE(missing.error.empty());
}

}  // namespace
}  // namespace gpuscope
