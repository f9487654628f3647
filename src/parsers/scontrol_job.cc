#include "src/parsers/scontrol_job.h"

#include <algorithm>
#include <iterator>

namespace gpuscope {
namespace {

// Keys Slurm 22.05 prints in `scontrol show job` (src/api/job_info.c order), plus the -d detail keys.
// Only these end a free-text value.
constexpr std::string_view kKnownKeys[] = {"JobId",
                                           "ArrayJobId",
                                           "ArrayTaskId",
                                           "ArrayTaskThrottle",
                                           "HetJobId",
                                           "HetJobOffset",
                                           "HetJobIdSet",
                                           "JobName",
                                           "UserId",
                                           "GroupId",
                                           "MCS_label",
                                           "Priority",
                                           "Nice",
                                           "Account",
                                           "QOS",
                                           "JobState",
                                           "Reason",
                                           "Dependency",
                                           "Requeue",
                                           "Restarts",
                                           "BatchFlag",
                                           "Reboot",
                                           "ExitCode",
                                           "DerivedExitCode",
                                           "RunTime",
                                           "TimeLimit",
                                           "TimeMin",
                                           "SubmitTime",
                                           "EligibleTime",
                                           "AccrueTime",
                                           "StartTime",
                                           "EndTime",
                                           "Deadline",
                                           "PreemptEligibleTime",
                                           "PreemptTime",
                                           "SuspendTime",
                                           "SecsPreSuspend",
                                           "LastSchedEval",
                                           "Scheduler",
                                           "Partition",
                                           "AllocNode:Sid",
                                           "ReqNodeList",
                                           "ExcNodeList",
                                           "NodeList",
                                           "BatchHost",
                                           "NumNodes",
                                           "NumCPUs",
                                           "NumTasks",
                                           "CPUs/Task",
                                           "ReqB:S:C:T",
                                           "TRES",
                                           "Socks/Node",
                                           "NtasksPerN:B:S:C",
                                           "CoreSpec",
                                           "MinCPUsNode",
                                           "MinMemoryNode",
                                           "MinMemoryCPU",
                                           "MinTmpDiskNode",
                                           "Features",
                                           "DelayBoot",
                                           "OverSubscribe",
                                           "Contiguous",
                                           "Licenses",
                                           "Network",
                                           "Command",
                                           "WorkDir",
                                           "AdminComment",
                                           "SystemComment",
                                           "Comment",
                                           "StdErr",
                                           "StdIn",
                                           "StdOut",
                                           "Power",
                                           "TresPerNode",
                                           "TresPerJob",
                                           "TresPerTask",
                                           "MemPerTres",
                                           "CpusPerTres",
                                           "MailUser",
                                           "MailType",
                                           "Reservation",
                                           "Container",
                                           "JOB_GRES",
                                           "Nodes",
                                           "CPU_IDs",
                                           "Mem",
                                           "GRES",
                                           "Partition_Reason"};

// Keys whose values are free text and may contain spaces.
constexpr std::string_view kFreeTextKeys[] = {"JobName", "Comment", "AdminComment", "SystemComment",
                                              "Command", "WorkDir", "StdErr",       "StdIn",
                                              "StdOut",  "Reason",  "Dependency"};

// Keys whose value decides a label: each must appear at most once per record.
constexpr std::string_view kIdentityKeys[] = {"JobId",   "ArrayJobId", "ArrayTaskId", "JobName", "UserId",
                                              "Account", "Partition",  "JobState",    "NodeList"};

template <size_t N>
bool Contains(const std::string_view (&set)[N], std::string_view key) {
  return std::find(std::begin(set), std::end(set), key) != std::end(set);
}

bool IsKeyChar(char c, bool first) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return true;
  if (first) return false;
  return (c >= '0' && c <= '9') || c == '_' || c == ':' || c == '/';
}

// The key of a token "Key=..." or empty when the token does not start with one.
std::string_view TokenKey(std::string_view token) {
  size_t eq = token.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  for (size_t i = 0; i < eq; ++i) {
    if (!IsKeyChar(token[i], i == 0)) return {};
  }
  return token.substr(0, eq);
}

bool IsDigits(std::string_view s) {
  return !s.empty() && s.size() <= 20 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string NullToEmpty(std::string_view value) {
  if (value == "(null)" || value == "N/A") return {};
  return std::string(value);
}

}  // namespace

std::vector<std::pair<std::string_view, std::string_view>> SplitScontrolRecord(std::string_view line) {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  size_t value_begin = 0;
  size_t value_end = 0;  // end of the last token that belongs to the current value
  bool free_text = false;
  size_t pos = 0;
  while (pos < line.size()) {
    if (line[pos] == ' ' || line[pos] == '\t') {
      ++pos;
      continue;
    }
    size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    std::string_view token = line.substr(pos, end - pos);
    std::string_view key = TokenKey(token);
    bool starts_field = !key.empty() && (fields.empty() || !free_text || Contains(kKnownKeys, key));
    if (starts_field) {
      if (!fields.empty()) fields.back().second = line.substr(value_begin, value_end - value_begin);
      fields.emplace_back(key, std::string_view{});
      value_begin = pos + key.size() + 1;
      value_end = end;
      free_text = Contains(kFreeTextKeys, key);
    } else if (!fields.empty()) {
      value_end = end;  // a continuation of a value with spaces
    }
    pos = end;
  }
  if (!fields.empty()) fields.back().second = line.substr(value_begin, value_end - value_begin);
  return fields;
}

ScontrolJobs ParseScontrolShowJob(std::string_view text) {
  ScontrolJobs result;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line == "No jobs in the system") continue;

    ScontrolJob job;
    std::vector<std::string_view> seen;
    std::string reason;
    for (const auto& [key, value] : SplitScontrolRecord(line)) {
      if (Contains(kIdentityKeys, key)) {
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
          reason = "key " + std::string(key) + " appears twice (free text imitating a key?)";
          break;
        }
        seen.push_back(key);
      }
      if (key == "JobId") {
        job.job_id = value;
      } else if (key == "ArrayJobId") {
        job.array_job_id = value;
      } else if (key == "ArrayTaskId") {
        job.array_task_id = value;
      } else if (key == "JobName") {
        job.job_name = value;
      } else if (key == "UserId") {
        // "alice(1001)"; an unknown user is "(null)(1001)" or "1001(1001)".
        size_t open = value.rfind('(');
        if (open != std::string_view::npos && value.back() == ')') {
          job.user = NullToEmpty(value.substr(0, open));
          std::string_view uid = value.substr(open + 1, value.size() - open - 2);
          if (IsDigits(uid)) job.uid = uid;
        } else {
          job.user = NullToEmpty(value);
        }
      } else if (key == "Account") {
        job.account = NullToEmpty(value);
      } else if (key == "Partition") {
        job.partition = NullToEmpty(value);
      } else if (key == "JobState") {
        job.job_state = value;
      } else if (key == "NodeList") {
        job.node_list = NullToEmpty(value);
      }
    }
    if (reason.empty() && !IsDigits(job.job_id)) reason = "no numeric JobId";
    if (reason.empty() && !job.array_job_id.empty() && !IsDigits(job.array_job_id)) {
      reason = "ArrayJobId is not numeric";
    }
    if (!reason.empty()) {
      result.rejected.push_back(std::move(reason));
      continue;
    }
    result.jobs.push_back(std::move(job));
  }
  return result;
}

}  // namespace gpuscope
