// Parsers for the job mapping files a Slurm prolog leaves in a directory for GPU exporters to read:
//   - dcgm-exporter (--hpc-job-mapping-dir): a file named by the GPU key ("3", or "3.1" for a MIG
//     instance), one job id per line; several lines = several jobs sharing the GPU.
//   - Princeton jobstats (/run/gpustat): a file named by the GPU key holding "<jobid> <uid>"; its prolog
//     also writes the same content under the GPU's UUID ("GPU-<uuid>") and, on MIG, only under the MIG
//     device's UUID ("MIG-<uuid>", from CUDA_VISIBLE_DEVICES).
//   - AMD Device Metrics Exporter (/var/run/exporter): a file named by the GPU id holding one flat JSON
//     object of the prolog's environment ("SLURM_JOB_ID", "SLURM_JOB_USER", "SLURM_JOB_PARTITION", ...).
//   - gpuscope's own record: "gpuscope-job.<jobid>", key=value lines (see ParseGpuscopeRecord).
// Pure functions: std::string_view in, struct out, no I/O. Bad input (binary bytes, NULs, over-long
// lines, oversized content, invalid job ids, malformed JSON) yields an error value, never an exception,
// a crash or a partially filled result that could become a wrong label.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

// Reading caps: the source reads at most kMaxMappingFileBytes + 1 bytes to detect oversized files.
inline constexpr size_t kMaxMappingFileBytes = 64 * 1024;
inline constexpr size_t kMaxMappingLineBytes = 4096;

enum class MappingFormat { kDcgm, kJobstats, kAmd, kGpuscope };
std::string_view MappingFormatName(MappingFormat format);  // "dcgm", "jobstats", "amd", "gpuscope"

enum class MappingError {
  kNone,
  kTooLarge,      // more than kMaxMappingFileBytes
  kBinary,        // NUL, control bytes other than \t \r \n, or invalid UTF-8
  kLineTooLong,   // a line longer than kMaxMappingLineBytes
  kInvalidJobId,  // a job id that is not ^[0-9]{1,20}(_[0-9]{1,10})?$
  kInvalidUid,    // a uid that is not ^[0-9]{1,10}$
  kInvalidGpu,    // a GPU key in a record that is not ^[0-9]{1,4}(\.[0-9]{1,4})?$
  kMalformed,     // structure wrong: bad JSON, missing or duplicate key, name/content mismatch
};
// Stable snake_case reason for logs and the ignored-files counter ("too_large", "binary", ...).
std::string_view MappingErrorReason(MappingError error);

// ^[0-9]{1,4}(\.[0-9]{1,4})?$: an NVML index, or "<index>.<GPU instance id>" for a MIG instance. The same
// names dcgm-exporter accepts (^\d+(\.\d+)?$), bounded in length.
bool IsValidGpuKey(std::string_view key);
// A file named by an NVML UUID: "GPU-" or "MIG-" followed by the 8-4-4-4-12 hexadecimal form NVML
// prints ("GPU-5f3e6c8a-1b2c-4d5e-8f90-0123456789ab"). The name is kept as is: NVML's own spelling.
struct GpuUuidName {
  enum class Kind { kNone, kGpu, kMig };
  Kind kind = Kind::kNone;  // kNone: not a UUID name
  std::string_view uuid;    // the whole name, prefix included, when kind != kNone
};
GpuUuidName ParseGpuUuidName(std::string_view name);

// ^[0-9]{1,20}(_[0-9]{1,10})?$: a Slurm job id, or "<array job id>_<task id>" as some prologs write it.
// Anything else (spaces, signs, "..", letters, step suffixes like "12.0") is rejected.
bool IsValidJobId(std::string_view job_id);

// "gpuscope-job.<jobid>" -> the job id; empty when `name` is not a gpuscope record name. Names of this
// form never match dcgm-exporter's ^\d+(\.\d+)?$, so dcgm-exporter ignores our records.
std::string_view GpuscopeRecordJobId(std::string_view name);
inline constexpr std::string_view kGpuscopeRecordPrefix = "gpuscope-job.";

// Checks shared by every format: size, binary content, line length. kNone when the text is acceptable.
MappingError CheckMappingText(std::string_view content);

struct DcgmMappingFile {
  MappingError error = MappingError::kNone;
  std::vector<std::string> job_ids;  // in file order, duplicates removed; empty when error != kNone
  bool terminated = true;            // false when the last line has no '\n' (a writer may be mid-write)
};
// One job id per line; blank lines and surrounding spaces/CR are ignored; an empty file means no jobs.
DcgmMappingFile ParseDcgmMapping(std::string_view content);

struct JobstatsMappingFile {
  MappingError error = MappingError::kNone;
  std::string job_id;
  std::string uid;
  bool terminated = true;
};
// Exactly one non-blank line "<jobid> <uid>" (separated by spaces or tabs).
JobstatsMappingFile ParseJobstatsMapping(std::string_view content);

struct MappingJob {
  std::string job_id;
  std::string user;
  std::string uid;
  std::string account;
  std::string partition;
  std::string job_name;
  std::string array_job_id;
  std::string array_task_id;
  std::string step_id;
  std::vector<std::string> gpus;    // GPU keys (NVML index or index.instance)
  std::vector<std::string> minors;  // /dev/nvidiaN minor numbers, same order as gpus (informational)
};

struct AmdMappingFile {
  MappingError error = MappingError::kNone;
  MappingJob job;  // job_id, user, uid, account, partition, job_name from SLURM_* keys; gpus empty
};
// One flat JSON object whose string (or number) values are the prolog's environment. Keys used:
// SLURM_JOB_ID (required), SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_ACCOUNT, SLURM_JOB_PARTITION,
// SLURM_JOB_NAME, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID. Other keys are ignored; nested values are
// skipped up to a depth of 8.
AmdMappingFile ParseAmdMapping(std::string_view content);

struct GpuscopeRecord {
  MappingError error = MappingError::kNone;
  MappingJob job;
  bool terminated = true;
};
// gpuscope's record, written by deploy/slurm/prolog.sh:
//   # comment lines and blank lines are ignored
//   version=1
//   job_id=1234            (required; must equal the job id in the file name when one is given)
//   user=alice  uid=1000  account=physics  partition=gpu  job_name=train
//   array_job_id=1230  array_task_id=4  step_id=
//   gpus=0,3               (GPU keys, comma-separated; may be empty)
//   minors=0,2             (the /dev/nvidiaN minors of those GPUs)
// Unknown keys are ignored (forward compatibility); a duplicate key or a line without '=' is malformed.
// `name_job_id` is the job id from the file name (empty: not checked).
GpuscopeRecord ParseGpuscopeRecord(std::string_view content, std::string_view name_job_id = {});

// Guesses the format of a GPU-key file from its content: '{' first -> kAmd; exactly one line with two
// fields -> kJobstats; otherwise kDcgm.
MappingFormat DetectGpuKeyFileFormat(std::string_view content);

}  // namespace gpuscope
