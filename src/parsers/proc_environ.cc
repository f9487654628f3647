#include "src/parsers/proc_environ.h"

#include <cstdint>
#include <iterator>

#include "src/core/utf8.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxDigits = 10;      // Slurm ids are uint32
constexpr size_t kMaxTextBytes = 256;  // names, accounts, partitions
constexpr size_t kMaxJobNameBytes = 512;

bool IsDigits(std::string_view s) {
  if (s.empty() || s.size() > kMaxDigits) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Valid UTF-8, no control bytes, not empty, not longer than `max`.
bool IsCleanText(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    size_t n = ValidUtf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// SLURM_STEP_ID carries Slurm's special step ids as numbers (slurm.h); name them as the cgroup does.
std::string StepName(std::string_view digits) {
  if (digits == "4294967290") return "interactive";  // SLURM_INTERACTIVE_STEP 0xfffffffa
  if (digits == "4294967291") return "batch";        // SLURM_BATCH_SCRIPT 0xfffffffb
  if (digits == "4294967292") return "extern";       // SLURM_EXTERN_CONT 0xfffffffc
  return std::string(digits);
}

enum class Kind { kDigits, kStep, kText, kJobName };

struct Field {
  std::string_view name;
  std::string SlurmEnviron::*member;
  Kind kind;
};

// The whitelist: nothing outside it is ever copied out of environ.
constexpr Field kFields[] = {
    {"SLURM_JOB_ID", &SlurmEnviron::job_id, Kind::kDigits},
    {"SLURM_ARRAY_JOB_ID", &SlurmEnviron::array_job_id, Kind::kDigits},
    {"SLURM_ARRAY_TASK_ID", &SlurmEnviron::array_task_id, Kind::kDigits},
    {"SLURM_STEP_ID", &SlurmEnviron::step_id, Kind::kStep},
    {"SLURM_PROCID", &SlurmEnviron::proc_id, Kind::kDigits},
    {"SLURM_LOCALID", &SlurmEnviron::local_id, Kind::kDigits},
    {"SLURM_JOB_ACCOUNT", &SlurmEnviron::account, Kind::kText},
    {"SLURM_JOB_USER", &SlurmEnviron::user, Kind::kText},
    {"SLURM_JOB_UID", &SlurmEnviron::uid, Kind::kDigits},
    {"SLURM_JOB_PARTITION", &SlurmEnviron::partition, Kind::kText},
    {"SLURM_JOB_NAME", &SlurmEnviron::job_name, Kind::kJobName},
};
constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

void Consider(std::string_view entry, SlurmEnviron& out, uint32_t& seen) {
  if (entry.substr(0, 6) != "SLURM_") return;
  size_t eq = entry.find('=');
  if (eq == std::string_view::npos) return;
  std::string_view name = entry.substr(0, eq);
  std::string_view value = entry.substr(eq + 1);
  for (size_t f = 0; f < kFieldCount; ++f) {
    if (kFields[f].name != name) continue;
    if (seen & (1u << f)) return;  // first occurrence wins, as with getenv()
    seen |= 1u << f;
    bool valid = false;
    switch (kFields[f].kind) {
      case Kind::kDigits:
      case Kind::kStep:
        valid = IsDigits(value);
        break;
      case Kind::kText:
        valid = IsCleanText(value, kMaxTextBytes);
        break;
      case Kind::kJobName:
        valid = IsCleanText(value, kMaxJobNameBytes);
        break;
    }
    if (!valid) {
      ++out.rejected;
      return;
    }
    out.*(kFields[f].member) = kFields[f].kind == Kind::kStep ? StepName(value) : std::string(value);
    return;
  }
}

}  // namespace

SlurmEnviron ParseSlurmEnviron(std::string_view content) {
  SlurmEnviron out;
  bool cut = false;
  if (content.size() > kMaxEnvironBytes) {
    content = content.substr(0, kMaxEnvironBytes);
    out.truncated = true;
    cut = true;
  }
  uint32_t seen = 0;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\0', pos);
    if (end == std::string_view::npos) {
      // The last entry has no NUL: complete when the file simply lacks one, cut off when we capped it.
      if (!cut) Consider(content.substr(pos), out, seen);
      break;
    }
    Consider(content.substr(pos, end - pos), out, seen);
    pos = end + 1;
  }
  return out;
}

namespace {

// "0,1,3" -> {"0", "1", "3"}; empty unless every element is digits (at most 16 of them).
std::vector<std::string> GpuIndexList(std::string_view value) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= value.size() && out.size() <= 16) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view item = value.substr(pos, comma - pos);
    if (!IsDigits(item)) return {};
    out.emplace_back(item);
    pos = comma + 1;
  }
  return out.size() > 16 ? std::vector<std::string>{} : out;
}

// The first non-empty of `values`, in the order of preference.
template <size_t N>
std::string_view First(const std::string_view (&values)[N]) {
  for (std::string_view value : values) {
    if (!value.empty()) return value;
  }
  return {};
}

}  // namespace

TrainingEnviron ParseTrainingEnviron(std::string_view content) {
  // Names in order of preference; the first occurrence of each name wins, as with getenv().
  static constexpr std::string_view kRankNames[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                                    "PMI_RANK"};
  static constexpr std::string_view kLocalNames[] = {"LOCAL_RANK", "SLURM_LOCALID",
                                                     "OMPI_COMM_WORLD_LOCAL_RANK"};
  static constexpr std::string_view kGpuNames[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
                                                   "CUDA_VISIBLE_DEVICES"};
  std::string_view ranks[std::size(kRankNames)];
  std::string_view locals[std::size(kLocalNames)];
  std::string_view gpus[std::size(kGpuNames)];
  std::string_view slurm_job, named_job;
  const bool cut = content.size() > kMaxEnvironBytes;
  content = content.substr(0, kMaxEnvironBytes);
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\0', pos);
    if (end == std::string_view::npos) {
      if (cut) break;  // the last entry was cut off by the cap: its value may be a prefix
      end = content.size();
    }
    const std::string_view entry = content.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    for (size_t i = 0; i < std::size(kRankNames); ++i) {
      if (name == kRankNames[i] && ranks[i].empty() && IsDigits(value)) ranks[i] = value;
    }
    for (size_t i = 0; i < std::size(kLocalNames); ++i) {
      if (name == kLocalNames[i] && locals[i].empty() && IsDigits(value)) locals[i] = value;
    }
    for (size_t i = 0; i < std::size(kGpuNames); ++i) {
      if (name == kGpuNames[i] && gpus[i].empty() && !GpuIndexList(value).empty()) gpus[i] = value;
    }
    if (name == "SLURM_JOB_ID" && slurm_job.empty() && IsDigits(value)) slurm_job = value;
    if (name == "GPUSCOPE_JOB_ID" && named_job.empty() && IsCleanText(value, 128)) named_job = value;
  }
  TrainingEnviron out;
  out.rank = std::string(First(ranks));
  out.local_rank = std::string(First(locals));
  out.job = std::string(slurm_job.empty() ? named_job : slurm_job);
  out.gpus = GpuIndexList(First(gpus));
  return out;
}

}  // namespace gpuscope
