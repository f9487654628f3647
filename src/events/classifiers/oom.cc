// Formats from the Linux kernel's mm/oom_kill.c: __oom_kill_process() prints
// "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB, UID:%u
// pgtables:%lukB oom_score_adj:%hd" where %s is "Out of memory" or "Memory cgroup out of memory"
// (older kernels print fewer keys); dump_oom_summary() prints "oom-kill:constraint=%s,nodemask=...,
// cpuset=%s,mems_allowed=...,oom_memcg=%s,task_memcg=%s,task=%s,pid=%d,uid=%d".
#include "src/events/classifiers/oom.h"

#include "src/events/classifiers/kernel_text.h"
#include "src/events/classifiers/text.h"

namespace gpuscope {
namespace {

using classifier_text::Find;
using classifier_text::ParseDecimal;
using kernel_text::CleanField;
using kernel_text::kMaxMessageBytes;
using kernel_text::kMaxNameBytes;
using kernel_text::LeadingDigits;

// The number after "KEY" (e.g. "anon-rss:") in `s`, or nullopt.
std::optional<uint64_t> NumberAfter(std::string_view s, std::string_view key) {
  size_t pos = Find(s, key);
  if (pos == std::string_view::npos) return std::nullopt;
  return ParseDecimal(LeadingDigits(s.substr(pos + key.size())));
}

// "-1000".."1000" after "oom_score_adj:".
std::optional<std::string> SignedAfter(std::string_view s, std::string_view key) {
  size_t pos = Find(s, key);
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view v = s.substr(pos + key.size());
  bool negative = v.starts_with('-');
  if (negative) v.remove_prefix(1);
  std::string_view digits = LeadingDigits(v);
  if (!ParseDecimal(digits)) return std::nullopt;
  return (negative ? "-" : "") + std::string(digits);
}

// The value of "KEY=" in a comma-separated list (up to the next ','), or nullopt.
std::optional<std::string_view> ListValue(std::string_view list, std::string_view key) {
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(pos, end - pos);
    if (item.size() > key.size() && item.starts_with(key) && item[key.size()] == '=') {
      return item.substr(key.size() + 1);
    }
    pos = end + 1;
  }
  return std::nullopt;
}

// The identifier after "/PREFIX" up to the next '/', or empty: letters, digits and '_' only.
std::string_view PathComponentAfter(std::string_view path, std::string_view prefix) {
  size_t pos = Find(path, prefix);
  if (pos == std::string_view::npos) return {};
  std::string_view v = path.substr(pos + prefix.size());
  size_t n = 0;
  while (n < v.size() && n < 32 &&
         (classifier_text::IsDigit(v[n]) || (v[n] >= 'a' && v[n] <= 'z') || (v[n] >= 'A' && v[n] <= 'Z'))) {
    ++n;
  }
  if (n < v.size() && v[n] != '/' && v[n] != ',' && v[n] != ' ') return {};
  return v.substr(0, n);
}

}  // namespace

SlurmCgroupIds SlurmIdsFromCgroupPath(std::string_view path) {
  SlurmCgroupIds ids;
  std::string_view job = PathComponentAfter(path, "/job_");
  if (!job.empty() && ParseDecimal(job)) ids.job_id = std::string(job);
  if (!ids.job_id.empty()) ids.step_id = std::string(PathComponentAfter(path, "/step_"));
  return ids;
}

std::optional<Event> ClassifyOomKillLine(std::string_view line) {
  size_t pos = Find(line, "Killed process ");
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(pos + 15);
  std::string_view pid = LeadingDigits(rest);
  if (!ParseDecimal(pid)) return std::nullopt;
  rest.remove_prefix(pid.size());
  if (!rest.starts_with(" (")) return std::nullopt;
  rest.remove_prefix(2);
  // The command (at most 15 bytes in the kernel, but it may itself hold ')' or spaces): up to the last
  // ')' before the first key, or the last ')' on the line.
  size_t keys = Find(rest, ") total-vm:");
  size_t close = keys != std::string_view::npos ? keys : rest.rfind(')');
  if (close > kMaxNameBytes) return std::nullopt;  // npos too
  std::string process = CleanField(rest.substr(0, close), kMaxNameBytes);
  std::string_view stats = rest.substr(close + 1);

  std::string_view before = line.substr(0, pos);
  std::string scope = Find(before, "Memory cgroup out of memory") != std::string_view::npos ? "memcg"
                      : Find(before, "Out of memory") != std::string_view::npos             ? "system"
                                                                                            : "other";
  std::optional<uint64_t> anon = NumberAfter(stats, "anon-rss:");
  std::optional<uint64_t> file = NumberAfter(stats, "file-rss:");
  std::optional<uint64_t> shmem = NumberAfter(stats, "shmem-rss:");
  std::optional<uint64_t> total_vm = NumberAfter(stats, "total-vm:");
  std::optional<uint64_t> uid = NumberAfter(stats, "UID:");
  std::optional<std::string> adj = SignedAfter(stats, "oom_score_adj:");
  // kB figures of at most 19 digits: the sum in bytes could overflow only for absurd input; saturate.
  auto kib = [](std::optional<uint64_t> v) -> uint64_t {
    if (!v) return 0;
    return *v > (UINT64_MAX / 4096) ? UINT64_MAX / 4 : *v * 1024;
  };
  uint64_t rss = kib(anon) + kib(file) + kib(shmem);

  Event event;
  event.event_class = "oom";
  event.severity = EventSeverity::kError;
  event.summary = std::string(scope == "memcg" ? "Memory cgroup OOM" : "OOM") + " killer killed process " +
                  std::string(pid) + " (" + process + "), rss " + std::to_string(rss) + " bytes";
  event.fields.emplace_back("scope", scope);
  event.fields.emplace_back("pid", std::string(pid));
  event.fields.emplace_back("process", std::move(process));
  if (uid) event.fields.emplace_back("uid", std::to_string(*uid));
  event.fields.emplace_back("rss_bytes", std::to_string(rss));
  if (anon) event.fields.emplace_back("anon_rss_bytes", std::to_string(kib(anon)));
  if (total_vm) event.fields.emplace_back("total_vm_bytes", std::to_string(kib(total_vm)));
  if (adj) event.fields.emplace_back("oom_score_adj", *adj);
  return event;
}

std::optional<Event> ClassifyOomSummaryLine(std::string_view line) {
  size_t pos = Find(line, "oom-kill:");
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view list = line.substr(pos + 9);
  size_t end = list.find_first_of(" \n");
  if (end != std::string_view::npos) list = list.substr(0, end);
  std::optional<std::string_view> constraint = ListValue(list, "constraint");
  if (!constraint) return std::nullopt;
  std::optional<std::string_view> task_memcg = ListValue(list, "task_memcg");
  std::optional<std::string_view> oom_memcg = ListValue(list, "oom_memcg");
  std::optional<std::string_view> task = ListValue(list, "task");
  std::optional<std::string_view> pid = ListValue(list, "pid");
  std::optional<std::string_view> uid = ListValue(list, "uid");
  SlurmCgroupIds ids = SlurmIdsFromCgroupPath(task_memcg ? *task_memcg : std::string_view());
  if (ids.job_id.empty() && oom_memcg) ids = SlurmIdsFromCgroupPath(*oom_memcg);

  Event event;
  event.event_class = "oom_summary";
  event.severity = EventSeverity::kInfo;
  std::string constraint_text = CleanField(*constraint, kMaxNameBytes);
  event.summary = "OOM kill (" + constraint_text + ")";
  if (task) event.summary += " of " + CleanField(*task, kMaxNameBytes);
  if (!ids.job_id.empty()) event.summary += " in Slurm job " + ids.job_id;
  event.fields.emplace_back("constraint", std::move(constraint_text));
  if (pid && ParseDecimal(*pid)) event.fields.emplace_back("pid", std::string(*pid));
  if (task) event.fields.emplace_back("process", CleanField(*task, kMaxNameBytes));
  if (uid && ParseDecimal(*uid)) event.fields.emplace_back("uid", std::string(*uid));
  if (task_memcg) event.fields.emplace_back("cgroup", CleanField(*task_memcg, kMaxMessageBytes));
  if (!ids.job_id.empty()) event.fields.emplace_back("job_id", ids.job_id);
  if (!ids.step_id.empty()) event.fields.emplace_back("step_id", ids.step_id);
  return event;
}

}  // namespace gpuscope
