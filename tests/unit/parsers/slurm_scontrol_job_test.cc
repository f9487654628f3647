#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "src/parsers/scontrol_job.h"

namespace gpuscope {
namespace {

// A fixture captured from a real Slurm 22.05 (see its first line), without that provenance line.
std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUSCOPE_SLURM_FIXTURES) + "/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  EXPECT_EQ(text.rfind("# provenance:", 0), 0u) << name;
  return text.substr(text.find('\n') + 1);
}

const ScontrolJob* Find(const ScontrolJobs& parsed, const std::string& id) {
  for (const ScontrolJob& job : parsed.jobs) {
    if (job.job_id == id) return &job;
  }
  return nullptr;
}

TEST(SlurmScontrolJob, RealOutputGivesEveryJobWithUserAccountPartitionAndSpacesInTheName) {
  ScontrolJobs parsed = ParseScontrolShowJob(Fixture("slurm_scontrol_show_job_all.txt"));
  EXPECT_TRUE(parsed.rejected.empty());
  ASSERT_EQ(parsed.jobs.size(), 7u);
  const ScontrolJob* job = Find(parsed, "1");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->job_name, "train llama 70b lr=3e-4");
  EXPECT_EQ(job->user, "alice");
  EXPECT_EQ(job->uid, "1001");
  EXPECT_EQ(job->account, "physics");
  EXPECT_EQ(job->partition, "gpu");
  EXPECT_EQ(job->job_state, "RUNNING");
  EXPECT_EQ(job->node_list, "vm");
  EXPECT_TRUE(job->array_job_id.empty());
}

TEST(SlurmScontrolJob, ArrayTasksKeepTheirOwnJobIdAndTheArrayIds) {
  ScontrolJobs parsed = ParseScontrolShowJob(Fixture("slurm_scontrol_show_job_all.txt"));
  const ScontrolJob* task = Find(parsed, "6");
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(task->array_job_id, "2");
  EXPECT_EQ(task->array_task_id, "0");
  EXPECT_EQ(task->account, "chem");
  EXPECT_EQ(task->partition, "debug");
  // The array's last task carries the array's own job id.
  const ScontrolJob* last = Find(parsed, "2");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->array_task_id, "2");
}

TEST(SlurmScontrolJob, NullAccountAndPendingNodeListAreEmptyAndStatesAreKept) {
  ScontrolJobs parsed = ParseScontrolShowJob(Fixture("slurm_scontrol_show_job_all.txt"));
  const ScontrolJob* root_job = Find(parsed, "3");
  ASSERT_NE(root_job, nullptr);
  EXPECT_EQ(root_job->user, "root");
  EXPECT_EQ(root_job->uid, "0");
  EXPECT_EQ(root_job->account, "");
  const ScontrolJob* pending = Find(parsed, "4");
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->job_state, "PENDING");
  EXPECT_EQ(pending->node_list, "");
  EXPECT_EQ(Find(parsed, "5")->job_state, "CANCELLED");
}

TEST(SlurmScontrolJob, DetailOutputWithGresIndicesParsesTheSame) {
  ScontrolJobs parsed = ParseScontrolShowJob(Fixture("slurm_scontrol_show_job_detail.txt"));
  ASSERT_EQ(parsed.jobs.size(), 1u);
  EXPECT_EQ(parsed.jobs[0].job_name, "train llama 70b lr=3e-4");
  EXPECT_EQ(parsed.jobs[0].account, "physics");
}

TEST(SlurmScontrolJob, FreeTextValuesKeepInnerSpacesAndEndAtTheNextKnownKey) {
  auto fields = SplitScontrolRecord(
      "JobId=7 JobName=a  b=c d UserId=bob(1002) Comment=nightly eval, run 7  StdErr=/x y/out Power=");
  ASSERT_EQ(fields.size(), 6u);
  EXPECT_EQ(fields[1].second, "a  b=c d");
  EXPECT_EQ(fields[3].first, "Comment");
  EXPECT_EQ(fields[3].second, "nightly eval, run 7");
  EXPECT_EQ(fields[4].second, "/x y/out");
  EXPECT_EQ(fields[5].second, "");
}

TEST(SlurmScontrolJob, JobNameImitatingAnIdentityKeyRejectsTheRecordInsteadOfMislabelling) {
  ScontrolJobs parsed = ParseScontrolShowJob(
      "JobId=9 JobName=x Account=admin UserId=eve(1003) Account=students Partition=gpu JobState=RUNNING\n"
      "JobId=10 JobName=ok UserId=bob(1002) Account=chem Partition=gpu JobState=RUNNING\n");
  ASSERT_EQ(parsed.jobs.size(), 1u);
  EXPECT_EQ(parsed.jobs[0].job_id, "10");
  ASSERT_EQ(parsed.rejected.size(), 1u);
  EXPECT_NE(parsed.rejected[0].find("Account"), std::string::npos);
}

TEST(SlurmScontrolJob, NoJobsMessageAndBlankLinesGiveNothingAndGarbageIsRejected) {
  EXPECT_TRUE(ParseScontrolShowJob("No jobs in the system\n").jobs.empty());
  EXPECT_TRUE(ParseScontrolShowJob("No jobs in the system\n").rejected.empty());
  EXPECT_TRUE(ParseScontrolShowJob("\n  \n").rejected.empty());
  ScontrolJobs garbage = ParseScontrolShowJob("JobId=abc UserId=x(1)\nhello world\n\x01\x02=\n");
  EXPECT_TRUE(garbage.jobs.empty());
  EXPECT_EQ(garbage.rejected.size(), 3u);
}

TEST(SlurmScontrolJob, UnknownUserKeepsTheUidAndCrLfLinesParse) {
  ScontrolJobs parsed =
      ParseScontrolShowJob("JobId=11 JobName=w UserId=(null)(4242) Account=a Partition=p\r\n");
  ASSERT_EQ(parsed.jobs.size(), 1u);
  EXPECT_EQ(parsed.jobs[0].user, "");
  EXPECT_EQ(parsed.jobs[0].uid, "4242");
  EXPECT_EQ(parsed.jobs[0].partition, "p");
}

}  // namespace
}  // namespace gpuscope
