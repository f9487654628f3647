#include "src/parsers/proc_cgroup.h"

#include <cstddef>
#include <utility>
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

// The first hit of `parse` (a path parser) in a /proc/<pid>/cgroup file: the unified line ("0::...")
// first, then the v1 lines ("hierarchy-ID:controller-list:cgroup-path") in file order. Lines without two
// colons are skipped; the path itself may contain ':'.
template <typename Parse>
auto FirstInFile(std::string_view content, Parse parse) -> decltype(parse(content)) {
  decltype(parse(content)) unified;
  decltype(parse(content)) legacy;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view hierarchy = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    auto parsed = parse(line.substr(second + 1));
    if (!parsed) continue;
    if (hierarchy == "0" && controllers.empty()) {
      if (!unified) unified = std::move(parsed);
    } else if (!legacy) {
      legacy = std::move(parsed);
    }
  }
  return unified ? unified : legacy;
}

constexpr std::string_view kSliceSuffix = ".slice";

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "kubepods" (cgroupfs driver), "kubepods.slice" or "<parent>-kubepods.slice" (systemd driver, the
// kubelet's cgroup root under a parent slice as kind's nodes have it).
bool IsKubepodsRoot(std::string_view component) {
  return component == "kubepods" || component == "kubepods.slice" || EndsWith(component, "-kubepods.slice");
}

// A pod UID as the kubelet writes it in a cgroup name: 8-4-4-4-12 hex digits separated by `separator`
// ('-' for cgroupfs, '_' for systemd, which reserves '-' for its hierarchy). Returned lower-case and
// dashed, as metadata.uid; nullopt when it is not of that form.
std::optional<std::string> PodUid(std::string_view text, char separator) {
  constexpr size_t kUidLength = 36;
  if (text.size() != kUidLength) return std::nullopt;
  std::string uid(text);
  for (size_t i = 0; i < uid.size(); ++i) {
    const bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_position) {
      if (uid[i] != separator) return std::nullopt;
      uid[i] = '-';
    } else if (!IsHex(uid[i])) {
      return std::nullopt;
    } else if (uid[i] >= 'A' && uid[i] <= 'F') {
      uid[i] = static_cast<char>(uid[i] - 'A' + 'a');
    }
  }
  return uid;
}

// A container runtime's id: 64 hex digits (containerd, CRI-O, Docker), 12 in Docker's short form.
bool IsContainerId(std::string_view s) {
  if (s.size() < 12 || s.size() > 64) return false;
  for (char c : s) {
    if (!IsHex(c)) return false;
  }
  return true;
}

// The container id of a systemd scope the runtime created: "cri-containerd-<id>.scope",
// "crio-<id>.scope", "docker-<id>.scope"; empty for anything else (CRI-O's "crio-conmon-<id>.scope").
std::string ScopeContainerId(std::string_view scope) {
  constexpr std::string_view kScopeSuffix = ".scope";
  if (!EndsWith(scope, kScopeSuffix)) return {};
  scope.remove_suffix(kScopeSuffix.size());
  for (std::string_view prefix : {"cri-containerd-", "crio-", "docker-"}) {
    if (StartsWith(scope, prefix) && IsContainerId(scope.substr(prefix.size()))) {
      return std::string(scope.substr(prefix.size()));
    }
  }
  return {};
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
  return FirstInFile(content, ParseSlurmCgroupPath);
}

std::optional<PodCgroup> ParsePodCgroupPath(std::string_view path) {
  std::vector<std::string_view> parts = SplitPath(path);
  size_t i = 0;
  while (i < parts.size() && !IsKubepodsRoot(parts[i])) ++i;
  if (i == parts.size()) return std::nullopt;
  PodCgroup out;
  if (parts[i] == "kubepods") {  // cgroupfs driver: [burstable|besteffort/]pod<uid>/<id>
    ++i;
    if (i < parts.size() && (parts[i] == "burstable" || parts[i] == "besteffort")) ++i;
    if (i >= parts.size() || !StartsWith(parts[i], "pod")) return std::nullopt;
    std::optional<std::string> uid = PodUid(parts[i].substr(3), '-');
    if (!uid) return std::nullopt;
    out.pod_uid = std::move(*uid);
    ++i;
    if (i < parts.size() && IsContainerId(parts[i])) out.container_id = std::string(parts[i]);
    return out;
  }
  // systemd driver: each slice's name repeats its parent's ("kubepods-burstable.slice" under
  // "kubepods.slice"), then "<parent>-pod<u_i_d>.slice" and the runtime's "<prefix>-<id>.scope".
  std::string prefix(parts[i].substr(0, parts[i].size() - kSliceSuffix.size()));
  ++i;
  if (i < parts.size() &&
      (parts[i] == prefix + "-burstable.slice" || parts[i] == prefix + "-besteffort.slice")) {
    prefix = std::string(parts[i].substr(0, parts[i].size() - kSliceSuffix.size()));
    ++i;
  }
  prefix += "-pod";
  if (i >= parts.size() || !StartsWith(parts[i], prefix) || !EndsWith(parts[i], kSliceSuffix)) {
    return std::nullopt;
  }
  std::optional<std::string> uid =
      PodUid(parts[i].substr(prefix.size(), parts[i].size() - prefix.size() - kSliceSuffix.size()), '_');
  if (!uid) return std::nullopt;
  out.pod_uid = std::move(*uid);
  ++i;
  if (i < parts.size()) out.container_id = ScopeContainerId(parts[i]);
  return out;
}

std::optional<PodCgroup> ParseProcCgroupPod(std::string_view content) {
  return FirstInFile(content, ParsePodCgroupPath);
}

}  // namespace gpuscope
