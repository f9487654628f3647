#include "src/parsers/proc_cgroup.h"

#include <cstddef>
#include <vector>

namespace gpuscope {
namespace {

// Slurm job ids are uint32; 10 digits is the longest. Task and uid numbers likewise.
constexpr size_t kMaxNumberDigits = 10;

bool IsDigits(std::string_view s) {
  if (s.empty() || s.size() > kMaxNumberDigits) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "slurm", "slurm_<nodename>" (v1, MultipleSlurmd), "slurmstepd.scope" or "<nodename>_slurmstepd.scope"
// (v2 under systemd).
bool IsSlurmRoot(std::string_view component) {
  if (component == "slurm" || component == "slurmstepd.scope") return true;
  if (StartsWith(component, "slurm_") && component.size() > 6) return true;
  return EndsWith(component, "_slurmstepd.scope");
}

// "0", "12", "0+1" (a heterogeneous step component), or a named step.
bool IsStepId(std::string_view s) {
  if (s == "batch" || s == "extern" || s == "interactive") return true;
  size_t plus = s.find('+');
  if (plus == std::string_view::npos) return IsDigits(s);
  return IsDigits(s.substr(0, plus)) && IsDigits(s.substr(plus + 1));
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > pos) parts.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return parts;
}

}  // namespace

std::optional<SlurmCgroup> ParseSlurmCgroupPath(std::string_view path) {
  std::vector<std::string_view> parts = SplitPath(path);
  size_t root = parts.size();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (IsSlurmRoot(parts[i])) {
      root = i;
      break;
    }
  }
  if (root == parts.size()) return std::nullopt;

  SlurmCgroup out;
  size_t i = root + 1;
  // v1 only: uid_<n> between the root and the job.
  if (i < parts.size() && StartsWith(parts[i], "uid_")) {
    std::string_view uid = parts[i].substr(4);
    if (!IsDigits(uid)) return std::nullopt;
    out.uid = std::string(uid);
    ++i;
  }
  if (i >= parts.size() || !StartsWith(parts[i], "job_")) return std::nullopt;
  std::string_view job = parts[i].substr(4);
  if (!IsDigits(job)) return std::nullopt;
  out.job_id = std::string(job);
  ++i;
  if (i < parts.size() && StartsWith(parts[i], "step_")) {
    std::string_view step = parts[i].substr(5);
    if (IsStepId(step)) {
      out.step_id = std::string(step);
      ++i;
      // v2 puts the tasks under "user" (slurmstepd itself sits in "slurm"); v1 directly under the step.
      if (i < parts.size() && parts[i] == "user") ++i;
      if (i < parts.size() && StartsWith(parts[i], "task_") && IsDigits(parts[i].substr(5))) {
        out.task_id = std::string(parts[i].substr(5));
      }
    }
  }
  return out;
}

std::optional<SlurmCgroup> ParseProcCgroup(std::string_view content) {
  std::optional<SlurmCgroup> unified;
  std::optional<SlurmCgroup> legacy;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    // hierarchy-ID:controller-list:cgroup-path; the path itself may contain ':'.
    size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view hierarchy = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::optional<SlurmCgroup> parsed = ParseSlurmCgroupPath(line.substr(second + 1));
    if (!parsed) continue;
    if (hierarchy == "0" && controllers.empty()) {
      if (!unified) unified = std::move(parsed);
    } else if (!legacy) {
      legacy = std::move(parsed);
    }
  }
  return unified ? unified : legacy;
}

}  // namespace gpuscope
