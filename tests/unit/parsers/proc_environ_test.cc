#include "src/parsers/proc_environ.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscope {
namespace {

std::string Env(std::initializer_list<std::string> entries) {
  std::string out;
  for (const auto& e : entries) {
    out += e;
    out.push_back('\0');
  }
  return out;
}

TEST(ProcEnvironTest, AllWhitelistedVariablesAreRead) {
  SlurmEnviron env = ParseSlurmEnviron(
      Env({"SLURM_JOB_ID=1234", "SLURM_ARRAY_JOB_ID=1200", "SLURM_ARRAY_TASK_ID=34", "SLURM_STEP_ID=2",
           "SLURM_PROCID=7", "SLURM_LOCALID=3", "SLURM_JOB_ACCOUNT=physics", "SLURM_JOB_USER=alice",
           "SLURM_JOB_UID=1001", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_NAME=train llm (v2)"}));
  EXPECT_EQ(env.job_id, "1234");
  EXPECT_EQ(env.array_job_id, "1200");
  EXPECT_EQ(env.array_task_id, "34");
  EXPECT_EQ(env.step_id, "2");
  EXPECT_EQ(env.proc_id, "7");
  EXPECT_EQ(env.local_id, "3");
  EXPECT_EQ(env.account, "physics");
  EXPECT_EQ(env.user, "alice");
  EXPECT_EQ(env.uid, "1001");
  EXPECT_EQ(env.partition, "gpu");
  EXPECT_EQ(env.job_name, "train llm (v2)");
  EXPECT_FALSE(env.truncated);
  EXPECT_EQ(env.rejected, 0u);
}

TEST(ProcEnvironTest, SecretsAndOtherVariablesAreNeverKept) {
  const std::string secret = "hf_supersecret_token_value";
  SlurmEnviron env =
      ParseSlurmEnviron(Env({"HF_TOKEN=" + secret, "SLURM_JOB_ID=5", "AWS_SECRET_ACCESS_KEY=" + secret,
                             "SLURM_JOB_PASSWORD=" + secret, "SLURM_JOB_IDX=" + secret}));
  EXPECT_EQ(env.job_id, "5");
  for (const std::string* field :
       {&env.job_id, &env.array_job_id, &env.array_task_id, &env.step_id, &env.proc_id, &env.local_id,
        &env.account, &env.user, &env.uid, &env.partition, &env.job_name}) {
    EXPECT_EQ(field->find("secret"), std::string::npos);
  }
}

TEST(ProcEnvironTest, SpecialStepIdsAreNamedLikeTheCgroup) {
  EXPECT_EQ(ParseSlurmEnviron(Env({"SLURM_STEP_ID=4294967291"})).step_id, "batch");
  EXPECT_EQ(ParseSlurmEnviron(Env({"SLURM_STEP_ID=4294967292"})).step_id, "extern");
  EXPECT_EQ(ParseSlurmEnviron(Env({"SLURM_STEP_ID=4294967290"})).step_id, "interactive");
  EXPECT_EQ(ParseSlurmEnviron(Env({"SLURM_STEP_ID=0"})).step_id, "0");
}

TEST(ProcEnvironTest, InvalidValuesAreDroppedAndCounted) {
  SlurmEnviron env = ParseSlurmEnviron(
      Env({"SLURM_JOB_ID=12ab", "SLURM_PROCID=-1", "SLURM_JOB_UID=", "SLURM_JOB_USER=al\x01ice",
           "SLURM_JOB_ACCOUNT=" + std::string(300, 'a'), "SLURM_ARRAY_TASK_ID=12345678901"}));
  EXPECT_EQ(env.job_id, "");
  EXPECT_EQ(env.proc_id, "");
  EXPECT_EQ(env.uid, "");
  EXPECT_EQ(env.user, "");
  EXPECT_EQ(env.account, "");
  EXPECT_EQ(env.array_task_id, "");
  EXPECT_EQ(env.rejected, 6u);
  EXPECT_TRUE(env.empty());
}

TEST(ProcEnvironTest, InvalidUtf8InTextValuesIsRejectedButValidUtf8Kept) {
  SlurmEnviron env =
      ParseSlurmEnviron(Env({"SLURM_JOB_NAME=bad\xff\xfename", "SLURM_JOB_PARTITION=gpu-\xc3\xa9t\xc3\xa9"}));
  EXPECT_EQ(env.job_name, "");
  EXPECT_EQ(env.partition, "gpu-\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(env.rejected, 1u);
}

TEST(ProcEnvironTest, InvalidUtf8InOtherVariablesDoesNotDisturbParsing) {
  SlurmEnviron env = ParseSlurmEnviron(Env({"JUNK=\xff\xff\xc0\x80", "SLURM_JOB_ID=77"}));
  EXPECT_EQ(env.job_id, "77");
}

TEST(ProcEnvironTest, FirstOccurrenceWinsLikeGetenv) {
  SlurmEnviron env = ParseSlurmEnviron(Env({"SLURM_JOB_ID=1", "SLURM_JOB_ID=2"}));
  EXPECT_EQ(env.job_id, "1");
}

TEST(ProcEnvironTest, LastEntryWithoutNulIsReadWhenNotTruncated) {
  SlurmEnviron env = ParseSlurmEnviron("PATH=/bin\0SLURM_JOB_ID=42");
  EXPECT_EQ(env.job_id, "");  // a string literal stops at the NUL: only PATH was passed
  std::string content("PATH=/bin\0SLURM_JOB_ID=42", 25);
  EXPECT_EQ(ParseSlurmEnviron(content).job_id, "42");
}

TEST(ProcEnvironTest, ContentWithoutAnyNulIsOneEntry) {
  EXPECT_EQ(ParseSlurmEnviron("SLURM_JOB_ID=42").job_id, "42");
  EXPECT_EQ(ParseSlurmEnviron("SLURM_JOB_ID=42 SLURM_PROCID=1").job_id, "");  // not digits: one value
}

TEST(ProcEnvironTest, OversizedContentIsCutAndTheCutOffEntryIgnored) {
  std::string content = Env({"SLURM_JOB_ID=9"});
  content += "FILLER=" + std::string(kMaxEnvironBytes, 'x');
  content.push_back('\0');
  content += Env({"SLURM_PROCID=3"});
  // The entry straddling the cap is cut: it must not be read as a (shorter, wrong) value.
  std::string straddle = std::string(kMaxEnvironBytes - 20, 'y');
  straddle.push_back('\0');
  straddle += "SLURM_JOB_ID=1234567890";  // crosses the cap after "SLURM_JOB_ID=123..."
  SlurmEnviron big = ParseSlurmEnviron(content);
  EXPECT_TRUE(big.truncated);
  EXPECT_EQ(big.job_id, "9");
  EXPECT_EQ(big.proc_id, "");  // beyond the cap
  SlurmEnviron cut = ParseSlurmEnviron(straddle + std::string(100, 'z'));
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.job_id, "");
}

TEST(ProcEnvironTest, EmptyAndGarbageGiveNothing) {
  EXPECT_TRUE(ParseSlurmEnviron("").empty());
  EXPECT_TRUE(ParseSlurmEnviron(std::string(5, '\0')).empty());
  EXPECT_TRUE(ParseSlurmEnviron(Env({"SLURM_JOB_ID", "=5", "SLURM_"})).empty());
}

TEST(ProcEnvironTest, TrainingRankPrefersTorchrunThenSlurmThenMpi) {
  EXPECT_EQ(ParseTrainingEnviron(Env({"SLURM_PROCID=3", "RANK=5", "PMI_RANK=9"})).rank, "5");
  EXPECT_EQ(ParseTrainingEnviron(Env({"PMI_RANK=9", "SLURM_PROCID=3"})).rank, "3");
  EXPECT_EQ(ParseTrainingEnviron(Env({"OMPI_COMM_WORLD_RANK=7", "PMI_RANK=9"})).rank, "7");
  EXPECT_EQ(ParseTrainingEnviron(Env({"RANK=x", "SLURM_PROCID=3"})).rank, "3") << "a bad value is skipped";
  EXPECT_EQ(ParseTrainingEnviron(Env({"RANK=1", "RANK=2"})).rank, "1") << "first occurrence, as getenv()";
  EXPECT_EQ(ParseTrainingEnviron(Env({"HOME=/root"})).rank, "");
}

TEST(ProcEnvironTest, TrainingGpusPreferSlurmsNodeIndicesAndSkipUuids) {
  TrainingEnviron env = ParseTrainingEnviron(
      Env({"CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=4,5", "LOCAL_RANK=1", "SLURM_LOCALID=0"}));
  EXPECT_EQ(env.gpus, (std::vector<std::string>{"4", "5"}));
  EXPECT_EQ(env.local_rank, "1");
  EXPECT_EQ(ParseTrainingEnviron(Env({"CUDA_VISIBLE_DEVICES=GPU-1234,GPU-5678"})).gpus,
            std::vector<std::string>{});
  EXPECT_EQ(ParseTrainingEnviron(Env({"CUDA_VISIBLE_DEVICES=GPU-1", "SLURM_JOB_GPUS=2"})).gpus,
            std::vector<std::string>{"2"});
  EXPECT_EQ(ParseTrainingEnviron(Env({"CUDA_VISIBLE_DEVICES=1,,2"})).gpus, std::vector<std::string>{});
}

TEST(ProcEnvironTest, TrainingJobIsSlurmsElseTheExplicitOne) {
  EXPECT_EQ(ParseTrainingEnviron(Env({"GPUSCOPE_JOB_ID=finetune-7", "SLURM_JOB_ID=42"})).job, "42");
  EXPECT_EQ(ParseTrainingEnviron(Env({"GPUSCOPE_JOB_ID=finetune-7"})).job, "finetune-7");
  EXPECT_EQ(ParseTrainingEnviron(Env({"GPUSCOPE_JOB_ID=bad\x01", "SLURM_JOB_ID=4x"})).job, "");
  std::string cut = std::string(kMaxEnvironBytes - 6, 'y');
  cut.push_back('\0');
  cut += "RANK=123456";  // crosses the cap after "RANK="
  EXPECT_EQ(ParseTrainingEnviron(cut).rank, "");
}

}  // namespace
}  // namespace gpuscope
