// The mapping-file parsers read every format on fixtures and turn every kind of bad input into an error.
#include "src/parsers/mapping_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;

std::string Fixture(const std::string& relative) {
  std::ifstream in(std::string(GPUSCOPE_MAPPING_FIXTURES) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(MappingNames, GpuKeysAreIndexOrIndexDotInstanceLikeDcgmExporter) {
  EXPECT_TRUE(IsValidGpuKey("0"));
  EXPECT_TRUE(IsValidGpuKey("7"));
  EXPECT_TRUE(IsValidGpuKey("3.1"));
  EXPECT_TRUE(IsValidGpuKey("3.10"));
  for (const char* bad : {"", ".", "3.", ".1", "3.1.2", "-1", "a", "..", "../3", "3 ", "12345", "0x1"})
    EXPECT_FALSE(IsValidGpuKey(bad)) << bad;
}

TEST(MappingNames, JobIdsAreDigitsWithAnOptionalArrayTask) {
  EXPECT_TRUE(IsValidJobId("1"));
  EXPECT_TRUE(IsValidJobId("45916256"));
  EXPECT_TRUE(IsValidJobId("1230_4"));
  for (const char* bad :
       {"", "-5", "+5", "12.0", "12_", "_4", "1_2_3", "12a", " 12", "123456789012345678901", "../1", "1;rm"})
    EXPECT_FALSE(IsValidJobId(bad)) << bad;
}

TEST(MappingNames, RecordNamesCarryAValidJobIdThatDcgmExporterIgnores) {
  EXPECT_EQ(GpuscopeRecordJobId("gpuscope-job.1234"), "1234");
  EXPECT_EQ(GpuscopeRecordJobId("gpuscope-job.1230_4"), "1230_4");
  EXPECT_EQ(GpuscopeRecordJobId("gpuscope-job."), "");
  EXPECT_EQ(GpuscopeRecordJobId("gpuscope-job.../x"), "");
  EXPECT_EQ(GpuscopeRecordJobId("1234"), "");
  EXPECT_FALSE(IsValidGpuKey("gpuscope-job.1234"));
}

TEST(MappingNames, UuidNamesAreNvmlsGpuAndMigUuids) {
  GpuUuidName gpu = ParseGpuUuidName("GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d");
  EXPECT_EQ(gpu.kind, GpuUuidName::Kind::kGpu);
  EXPECT_EQ(gpu.uuid, "GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d");
  GpuUuidName mig = ParseGpuUuidName("MIG-265a219d-a49f-578a-825d-222c72699c16");
  EXPECT_EQ(mig.kind, GpuUuidName::Kind::kMig);
  EXPECT_EQ(mig.uuid, "MIG-265a219d-a49f-578a-825d-222c72699c16");
  EXPECT_EQ(ParseGpuUuidName("GPU-8C6A1B2E-3D4F-4A5B-9C6D-7E8F9A0B1C2D").kind, GpuUuidName::Kind::kGpu);
  for (const char* bad :
       {"", "GPU-", "MIG-", "0", "3.1", "gpu-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d",
        "GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2",       // one digit short
        "GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d0",     // one too many
        "GPU-8c6a1b2e3d4f-4a5b-9c6d-7e8f9a0b1c2d-",      // a dash out of place
        "GPU-8c6a1b2g-3d4f-4a5b-9c6d-7e8f9a0b1c2d",      // not hex
        "MIG-GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d",  // legacy MIG form, without /gi/ci
        "GPU-../../../../etc/passwd-aaaaaaaaaaaaaaaaaa", "XYZ-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d"}) {
    EXPECT_EQ(ParseGpuUuidName(bad).kind, GpuUuidName::Kind::kNone) << bad;
    EXPECT_TRUE(ParseGpuUuidName(bad).uuid.empty()) << bad;
  }
  // A UUID name is neither a GPU key nor a record name: the three kinds of names never overlap.
  EXPECT_FALSE(IsValidGpuKey("GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d"));
  EXPECT_EQ(GpuscopeRecordJobId("MIG-265a219d-a49f-578a-825d-222c72699c16"), "");
}

TEST(JobstatsMapping, FilesNamedByUuidHoldTheSameJobAndUidAsTheIndexFile) {
  JobstatsMappingFile by_index = ParseJobstatsMapping(Fixture("jobstats/gpustat/1"));
  JobstatsMappingFile by_uuid =
      ParseJobstatsMapping(Fixture("jobstats/gpustat/GPU-8c6a1b2e-3d4f-4a5b-9c6d-7e8f9a0b1c2d"));
  ASSERT_EQ(by_uuid.error, MappingError::kNone);
  EXPECT_EQ(by_uuid.job_id, by_index.job_id);
  EXPECT_EQ(by_uuid.uid, by_index.uid);
  JobstatsMappingFile mig =
      ParseJobstatsMapping(Fixture("jobstats/gpustat-mig/MIG-265a219d-a49f-578a-825d-222c72699c16"));
  ASSERT_EQ(mig.error, MappingError::kNone);
  EXPECT_EQ(mig.job_id, "45916256");
  EXPECT_EQ(mig.uid, "262563");
}

TEST(DcgmMapping, ReadsOneJobPerLine) {
  DcgmMappingFile file = ParseDcgmMapping(Fixture("dcgm/single_job"));
  EXPECT_EQ(file.error, MappingError::kNone);
  EXPECT_THAT(file.job_ids, ElementsAre("1234"));
  EXPECT_TRUE(file.terminated);
}

TEST(DcgmMapping, SeveralLinesAreSeveralJobsSharingTheGpu) {
  EXPECT_THAT(ParseDcgmMapping(Fixture("dcgm/two_jobs_sharing")).job_ids, ElementsAre("1234", "1240"));
}

TEST(DcgmMapping, ToleratesCrlfBlankLinesAndDuplicates) {
  DcgmMappingFile file = ParseDcgmMapping(Fixture("dcgm/crlf_blank_duplicate"));
  EXPECT_EQ(file.error, MappingError::kNone);
  EXPECT_THAT(file.job_ids, ElementsAre("1234", "1240"));
}

TEST(DcgmMapping, AnEmptyFileMeansNoJobs) {
  DcgmMappingFile file = ParseDcgmMapping(Fixture("dcgm/empty"));
  EXPECT_EQ(file.error, MappingError::kNone);
  EXPECT_TRUE(file.job_ids.empty());
}

TEST(DcgmMapping, RejectsBinaryContent) {
  EXPECT_EQ(ParseDcgmMapping(Fixture("bad/nul_byte")).error, MappingError::kBinary);
  EXPECT_EQ(ParseDcgmMapping(Fixture("bad/binary_elf")).error, MappingError::kBinary);
  EXPECT_EQ(ParseDcgmMapping(Fixture("bad/utf16")).error, MappingError::kBinary);
  EXPECT_EQ(ParseDcgmMapping(std::string("1\x1b[31m\n")).error, MappingError::kBinary);
}

TEST(DcgmMapping, RejectsTheWholeFileOnAnyInvalidJobIdSoNoWrongLabelSlipsThrough) {
  for (const char* name :
       {"bad/path_in_content", "bad/shell_injection", "bad/negative_id", "bad/step_suffix"}) {
    DcgmMappingFile file = ParseDcgmMapping(Fixture(name));
    EXPECT_EQ(file.error, MappingError::kInvalidJobId) << name;
    EXPECT_TRUE(file.job_ids.empty()) << name;
  }
}

TEST(DcgmMapping, RejectsOverLongLinesAndOversizedFiles) {
  EXPECT_EQ(ParseDcgmMapping(std::string(kMaxMappingLineBytes + 1, '1') + "\n").error,
            MappingError::kLineTooLong);
  EXPECT_EQ(ParseDcgmMapping(std::string(kMaxMappingLineBytes + 1, '1')).error, MappingError::kLineTooLong);
  std::string huge;
  while (huge.size() <= kMaxMappingFileBytes) huge += "1234\n";
  EXPECT_EQ(ParseDcgmMapping(huge).error, MappingError::kTooLarge);
}

TEST(DcgmMapping, FlagsAnUnterminatedLastLineAsPossiblyMidWrite) {
  DcgmMappingFile file = ParseDcgmMapping(Fixture("bad/unterminated"));
  EXPECT_EQ(file.error, MappingError::kNone);
  EXPECT_FALSE(file.terminated);
}

TEST(JobstatsMapping, ReadsJobIdAndUid) {
  JobstatsMappingFile file = ParseJobstatsMapping(Fixture("jobstats/job_uid"));
  EXPECT_EQ(file.error, MappingError::kNone);
  EXPECT_EQ(file.job_id, "45916256");
  EXPECT_EQ(file.uid, "262563");
}

TEST(JobstatsMapping, RejectsBadUidsExtraLinesAndMissingFields) {
  EXPECT_EQ(ParseJobstatsMapping("12 abc\n").error, MappingError::kInvalidUid);
  EXPECT_EQ(ParseJobstatsMapping("12 -1\n").error, MappingError::kInvalidUid);
  EXPECT_EQ(ParseJobstatsMapping("1 2\n3 4\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseJobstatsMapping("12\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseJobstatsMapping("").error, MappingError::kMalformed);
  EXPECT_EQ(ParseJobstatsMapping("x1 2\n").error, MappingError::kInvalidJobId);
  EXPECT_EQ(ParseJobstatsMapping(Fixture("bad/nul_byte")).error, MappingError::kBinary);
}

TEST(AmdMapping, ReadsTheSlurmEnvironmentObject) {
  AmdMappingFile file = ParseAmdMapping(Fixture("amd/slurm_job.json"));
  ASSERT_EQ(file.error, MappingError::kNone);
  EXPECT_EQ(file.job.job_id, "742");
  EXPECT_EQ(file.job.user, "alice");
  EXPECT_EQ(file.job.partition, "gpu-mi300");
  EXPECT_EQ(file.job.account, "physics");
}

TEST(AmdMapping, SkipsNestedValuesAndAcceptsNumbersAndEscapes) {
  AmdMappingFile file =
      ParseAmdMapping(R"({"x":[1,{"y":[true,null]}],"SLURM_JOB_ID":42,"SLURM_JOB_USER":"j\u00e9r\u00f4me"})");
  ASSERT_EQ(file.error, MappingError::kNone);
  EXPECT_EQ(file.job.job_id, "42");
  EXPECT_EQ(file.job.user, "j\xC3\xA9r\xC3\xB4me");
}

TEST(AmdMapping, RejectsTruncatedDuplicatedDeepAndIdlessObjects) {
  EXPECT_EQ(ParseAmdMapping(Fixture("bad/amd_truncated_json")).error, MappingError::kMalformed);
  EXPECT_EQ(ParseAmdMapping(Fixture("bad/amd_duplicate_key")).error, MappingError::kMalformed);
  EXPECT_EQ(ParseAmdMapping(std::string(100, '[')).error, MappingError::kMalformed);
  EXPECT_EQ(ParseAmdMapping(R"({"a":)" + std::string(100, '[')).error, MappingError::kMalformed);
  EXPECT_EQ(ParseAmdMapping(R"({"SLURM_JOB_USER":"a"})").error, MappingError::kInvalidJobId);
  EXPECT_EQ(ParseAmdMapping(R"({"SLURM_JOB_ID":"../1"})").error, MappingError::kInvalidJobId);
  EXPECT_EQ(ParseAmdMapping(R"({"SLURM_JOB_ID":"1"} trailing)").error, MappingError::kMalformed);
  EXPECT_EQ(ParseAmdMapping(R"({"SLURM_JOB_ID":"1","SLURM_JOB_UID":"x"})").error, MappingError::kInvalidUid);
}

TEST(AmdMapping, ControlCharacterEscapesNeverReachAValue) {
  AmdMappingFile file = ParseAmdMapping(R"({"SLURM_JOB_ID":"1","SLURM_JOB_USER":"a\nb\u0000c"})");
  ASSERT_EQ(file.error, MappingError::kNone);
  EXPECT_EQ(file.job.user, "a b c");
}

TEST(GpuscopeRecord, ReadsEveryField) {
  GpuscopeRecord record = ParseGpuscopeRecord(Fixture("gpuscope/gpuscope-job.1234"), "1234");
  ASSERT_EQ(record.error, MappingError::kNone);
  const MappingJob& job = record.job;
  EXPECT_EQ(job.job_id, "1234");
  EXPECT_EQ(job.user, "alice");
  EXPECT_EQ(job.uid, "1001");
  EXPECT_EQ(job.account, "physics");
  EXPECT_EQ(job.partition, "gpu");
  EXPECT_EQ(job.job_name, "train-llm");
  EXPECT_EQ(job.array_job_id, "1230");
  EXPECT_EQ(job.array_task_id, "4");
  EXPECT_EQ(job.step_id, "");
  EXPECT_THAT(job.gpus, ElementsAre("0", "3"));
  EXPECT_THAT(job.minors, ElementsAre("0", "2"));
}

TEST(GpuscopeRecord, IgnoresUnknownKeysAndAcceptsNoGpus) {
  GpuscopeRecord record = ParseGpuscopeRecord(Fixture("gpuscope/gpuscope-job.99"), "99");
  ASSERT_EQ(record.error, MappingError::kNone);
  EXPECT_EQ(record.job.user, "bob");
  EXPECT_TRUE(record.job.gpus.empty());
}

TEST(GpuscopeRecord, RejectsBadGpuKeysMismatchedNamesAndMalformedLines) {
  EXPECT_EQ(ParseGpuscopeRecord(Fixture("bad/record_bad_gpu")).error, MappingError::kInvalidGpu);
  EXPECT_EQ(ParseGpuscopeRecord(Fixture("bad/record_name_mismatch"), "78").error, MappingError::kMalformed);
  EXPECT_EQ(ParseGpuscopeRecord("job_id=1\njob_id=2\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseGpuscopeRecord("job_id=1\nnonsense\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseGpuscopeRecord("user=a\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseGpuscopeRecord("version=2\njob_id=1\n").error, MappingError::kMalformed);
  EXPECT_EQ(ParseGpuscopeRecord("job_id=1 2\n").error, MappingError::kInvalidJobId);
  EXPECT_EQ(ParseGpuscopeRecord("job_id=1\nuid=root\n").error, MappingError::kInvalidUid);
  EXPECT_EQ(ParseGpuscopeRecord("job_id=1\ngpus=0,,1\n").error, MappingError::kInvalidGpu);
  EXPECT_EQ(ParseGpuscopeRecord(std::string("job_id=1\nuser=a\0b\n", 19)).error, MappingError::kBinary);
  GpuscopeRecord failed = ParseGpuscopeRecord("job_id=1\ngpus=0\nuid=x\n");
  EXPECT_TRUE(failed.job.gpus.empty()) << "a failed parse carries no partial result";
}

TEST(FormatDetection, TellsTheThreeGpuKeyFormatsApart) {
  EXPECT_EQ(DetectGpuKeyFileFormat(Fixture("dcgm/two_jobs_sharing")), MappingFormat::kDcgm);
  EXPECT_EQ(DetectGpuKeyFileFormat(Fixture("dcgm/single_job")), MappingFormat::kDcgm);
  EXPECT_EQ(DetectGpuKeyFileFormat(Fixture("dcgm/empty")), MappingFormat::kDcgm);
  EXPECT_EQ(DetectGpuKeyFileFormat(Fixture("jobstats/job_uid")), MappingFormat::kJobstats);
  EXPECT_EQ(DetectGpuKeyFileFormat(Fixture("amd/slurm_job.json")), MappingFormat::kAmd);
}

TEST(MappingErrors, ReasonsAreStableSnakeCase) {
  EXPECT_EQ(MappingErrorReason(MappingError::kInvalidJobId), "invalid_job_id");
  EXPECT_EQ(MappingErrorReason(MappingError::kTooLarge), "too_large");
  EXPECT_EQ(MappingFormatName(MappingFormat::kJobstats), "jobstats");
}

}  // namespace
}  // namespace gpuscope
