#include "src/parsers/slurm_scheduler.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "src/parsers/text.h"

namespace gpuscope {
namespace {

// Calls fn(line) for every line of `text` (without the '\n' and a trailing '\r').
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(line);
    pos = nl + 1;
  }
}

// Splits `line` at the first n-1 separators into n fields; the last field keeps any further separators.
// Returns false when there are fewer than n-1 separators.
template <size_t N>
bool SplitFields(std::string_view line, char sep, std::array<std::string_view, N>& fields) {
  size_t pos = 0;
  for (size_t i = 0; i + 1 < N; ++i) {
    size_t at = line.find(sep, pos);
    if (at == std::string_view::npos) return false;
    fields[i] = line.substr(pos, at - pos);
    pos = at + 1;
  }
  fields[N - 1] = line.substr(pos);
  return true;
}

std::optional<double> ParseUnsigned(std::string_view s) {
  s = text::Trim(s);
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return static_cast<double>(value);
}

// A decimal number as sshare prints it ("0.500000", "1", "1.2e-05"); no inf/nan/hex.
std::optional<double> ParseNumber(std::string_view s) {
  s = text::Trim(s);
  if (s.empty() || s.size() > 64) return std::nullopt;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      return std::nullopt;
    }
  }
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string Reject(std::string_view why, std::string_view line) {
  constexpr size_t kMax = 120;
  std::string out(why);
  out += ": ";
  out += line.substr(0, kMax);
  if (line.size() > kMax) out += "...";
  return out;
}

// The count of one gres item "gpu:8", "gpu:h100:8(S:0-1)", "gpu:(null):0" (the part before any '(').
// nullopt when the item is not a gpu or has no count.
std::optional<double> GpuItemCount(std::string_view item) {
  item = text::Trim(item);
  // The index list "(S:0-1)" / "(IDX:0-1)" follows the count; "gpu:(null):0" has "(null)" as its type.
  size_t paren = std::string_view::npos;
  for (size_t i = 1; i < item.size(); ++i) {
    if (item[i] == '(' && item[i - 1] >= '0' && item[i - 1] <= '9') {
      paren = i;
      break;
    }
  }
  if (paren != std::string_view::npos) item = item.substr(0, paren);
  if (item.substr(0, 4) != "gpu:" && item != "gpu") return std::nullopt;
  size_t colon = item.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view count = item.substr(colon + 1);
  // Counts may carry a unit suffix (K, M, G) for large gres; gpus never do, but accept K for safety.
  double scale = 1;
  if (!count.empty() && (count.back() == 'K' || count.back() == 'k')) {
    scale = 1024;
    count.remove_suffix(1);
  }
  std::optional<double> value = ParseUnsigned(count);
  if (!value) return std::nullopt;
  return *value * scale;
}

}  // namespace

// ---- squeue ------------------------------------------------------------------------------------------

double GpusInTresPerNode(std::string_view tres) {
  double total = 0;
  size_t pos = 0;
  while (pos <= tres.size()) {
    size_t comma = tres.find(',', pos);
    if (comma == std::string_view::npos) comma = tres.size();
    std::string_view item = text::Trim(tres.substr(pos, comma - pos));
    // 22.05 prints "gres:gpu:2"; later releases "gres/gpu:2"; a bare "gpu:2" is accepted too.
    if (item.substr(0, 5) == "gres:" || item.substr(0, 5) == "gres/") item.remove_prefix(5);
    if (std::optional<double> n = GpuItemCount(item)) total += *n;
    pos = comma + 1;
  }
  return total;
}

SqueueJobs ParseSqueue(std::string_view text) {
  SqueueJobs result;
  ForEachLine(text, [&](std::string_view line) {
    if (text::Trim(line).empty()) return;
    std::array<std::string_view, 8> f;
    if (!SplitFields(line, '|', f)) {
      result.rejected.push_back(Reject("fewer than 8 fields", line));
      return;
    }
    SqueueJob job;
    job.job_id = text::Trim(f[0]);
    job.state = text::Trim(f[1]);
    if (job.job_id.empty() || job.state.empty()) {
      result.rejected.push_back(Reject("no job id or state", line));
      return;
    }
    job.partition = text::Trim(f[2]);
    job.account = text::Trim(f[3]);
    job.user = text::Trim(f[4]);
    job.nodes = static_cast<uint32_t>(ParseUnsigned(f[5]).value_or(0));
    job.gpus_per_node = GpusInTresPerNode(f[6]);
    job.reason = text::Trim(f[7]);
    result.jobs.push_back(job);
  });
  return result;
}

// ---- sinfo -------------------------------------------------------------------------------------------

std::optional<double> GpusInGres(std::string_view gres) {
  std::optional<double> total;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c != ',' || (depth > 0 && i < gres.size())) continue;
    if (std::optional<double> n = GpuItemCount(gres.substr(start, i - start))) total = total.value_or(0) + *n;
    start = i + 1;
  }
  return total;
}

bool IsDrainState(std::string_view state) {
  return state.find("drain") != std::string_view::npos;  // drained, draining, idle+drain, mixed+drain
}

SinfoNodes ParseSinfo(std::string_view text) {
  SinfoNodes result;
  ForEachLine(text, [&](std::string_view line) {
    if (text::Trim(line).empty()) return;
    std::array<std::string_view, 6> f;
    if (!SplitFields(line, '|', f)) {
      result.rejected.push_back(Reject("fewer than 6 fields", line));
      return;
    }
    SinfoNode node;
    node.node = text::Trim(f[0]);
    node.partition = text::Trim(f[1]);
    if (!node.partition.empty() && node.partition.back() == '*') node.partition.remove_suffix(1);
    std::string_view state = text::Trim(f[2]);
    if (node.node.empty() || state.empty()) {
      result.rejected.push_back(Reject("no node name or state", line));
      return;
    }
    // Flags sinfo appends to the state: * not responding, ~ powered down, # powering up, ! pending power
    // down, % powering down, $ maintenance reservation, @ pending reboot, ^ rebooting, - planned.
    size_t end = state.size();
    while (end > 0 && std::string_view("*~#!%$@^-").find(state[end - 1]) != std::string_view::npos) --end;
    node.state_flags = state.substr(end);
    for (char c : state.substr(0, end)) {
      node.state.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    if (node.state.empty()) {
      result.rejected.push_back(Reject("state has only flags", line));
      return;
    }
    std::optional<double> total = GpusInGres(text::Trim(f[3]));
    node.has_gpus = total.has_value();
    node.gpus_total = total.value_or(0);
    node.gpus_allocated = GpusInGres(text::Trim(f[4])).value_or(0);
    std::string_view reason = text::Trim(f[5]);
    node.reason = reason == "none" || reason == "(null)" ? std::string_view() : reason;
    result.nodes.push_back(std::move(node));
  });
  return result;
}

// ---- sdiag -------------------------------------------------------------------------------------------

namespace {

// "Sun Nov 29 11:24:54 2026 (1795951494)" -> 1795951494; nullopt for "N/A" or no "(digits)".
std::optional<double> ParenthesizedEpoch(std::string_view value) {
  size_t open = value.rfind('(');
  size_t close = value.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  return ParseUnsigned(value.substr(open + 1, close - open - 1));
}

std::string KeyName(std::string_view label) {
  std::string key;
  for (char c : label) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      key.push_back(c);
    } else if (c >= 'A' && c <= 'Z') {
      key.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (!key.empty() && key.back() != '_') {
      key.push_back('_');
    }
  }
  while (!key.empty() && key.back() == '_') key.pop_back();
  return key;
}

// The parts of sdiag's output, each introduced by a heading line.
enum class SdiagSection { kTop, kMain, kBackfill, kRpcType, kOther };

// The section a heading line starts; nullopt when the line is no heading.
std::optional<SdiagSection> SdiagHeading(std::string_view line) {
  if (line.substr(0, 24) == "Main schedule statistics") return SdiagSection::kMain;
  if (line.substr(0, 17) == "Backfilling stats") return SdiagSection::kBackfill;
  if (line == "Remote Procedure Call statistics by message type") return SdiagSection::kRpcType;
  if (line.substr(0, 14) == "Remote Procedu" || line.substr(0, 15) == "Pending RPC sta" ||
      line.substr(0, 7) == "Latency") {
    return SdiagSection::kOther;
  }
  return std::nullopt;
}

using SdiagKeys = std::map<std::string, std::string, std::less<>>;

// The keys kept in a section (sdiag prints many more; these are the stable, useful ones), mapped to the
// metric suffixes of SdiagStats::values; nullptr for sections whose "key: value" lines are not kept.
const SdiagKeys* SdiagKeptKeys(SdiagSection section) {
  static const SdiagKeys kTop = {
      {"server_thread_count", "server_thread_count"},
      {"agent_queue_size", "agent_queue_size"},
      {"agent_count", "agent_count"},
      {"agent_thread_count", "agent_thread_count"},
      {"dbd_agent_queue_size", "dbd_agent_queue_size"},
      {"jobs_submitted", "jobs_submitted"},
      {"jobs_started", "jobs_started"},
      {"jobs_completed", "jobs_completed"},
      {"jobs_canceled", "jobs_canceled"},
      {"jobs_failed", "jobs_failed"},
  };
  static const SdiagKeys kMain = {
      {"last_cycle", "main_last_cycle_us"},          {"max_cycle", "main_max_cycle_us"},
      {"total_cycles", "main_total_cycles"},         {"mean_cycle", "main_mean_cycle_us"},
      {"mean_depth_cycle", "main_mean_depth_cycle"}, {"last_queue_length", "main_last_queue_length"},
  };
  static const SdiagKeys kBackfill = {
      {"total_backfilled_jobs_since_last_slurm_start", "backfill_total_backfilled_jobs"},
      {"total_cycles", "backfill_total_cycles"},
      {"last_cycle", "backfill_last_cycle_us"},
      {"max_cycle", "backfill_max_cycle_us"},
      {"mean_cycle", "backfill_mean_cycle_us"},
      {"last_depth_cycle", "backfill_last_depth_cycle"},
      {"last_queue_length", "backfill_last_queue_length"},
  };
  switch (section) {
    case SdiagSection::kTop:
      return &kTop;
    case SdiagSection::kMain:
      return &kMain;
    case SdiagSection::kBackfill:
      return &kBackfill;
    case SdiagSection::kRpcType:
    case SdiagSection::kOther:
      break;
  }
  return nullptr;
}

// One line of the RPC-by-type section into stats.rpcs_by_type, or into stats.rejected when malformed:
// "REQUEST_NODE_INFO   ( 2007) count:52  ave_time:321  total_time:16729".
void ParseSdiagRpcLine(std::string_view line, SdiagStats& stats) {
  size_t paren = line.find('(');
  size_t count_at = line.find("count:");
  size_t total_at = line.find("total_time:");
  if (paren == std::string_view::npos || count_at == std::string_view::npos ||
      total_at == std::string_view::npos) {
    stats.rejected.push_back(Reject("rpc line", line));
    return;
  }
  std::string_view type = text::Trim(line.substr(0, paren));
  std::string_view count = line.substr(count_at + 6);
  count = count.substr(0, count.find(' '));
  std::optional<double> n = ParseUnsigned(count);
  std::optional<double> total = ParseUnsigned(line.substr(total_at + 11));
  if (type.empty() || !n || !total) {
    stats.rejected.push_back(Reject("rpc line", line));
    return;
  }
  stats.rpcs_by_type[std::string(type)] = {*n, *total};
}

}  // namespace

SdiagStats ParseSdiag(std::string_view text) {
  SdiagStats stats;
  SdiagSection section = SdiagSection::kTop;
  ForEachLine(text, [&](std::string_view raw) {
    std::string_view line = text::Trim(raw);
    if (line.empty() || line.front() == '*') return;
    if (std::optional<SdiagSection> heading = SdiagHeading(line)) {
      section = *heading;
      return;
    }
    if (section == SdiagSection::kRpcType) {
      ParseSdiagRpcLine(line, stats);
      return;
    }
    if (line.substr(0, 10) == "Data since") {  // "Data since      Sun Nov 29 11:24:54 2026 (1795951494)"
      if (std::optional<double> t = ParenthesizedEpoch(line)) stats.values["data_since_timestamp"] = *t;
      return;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string key = KeyName(line.substr(0, colon));
    std::string_view value = text::Trim(line.substr(colon + 1));
    if (section == SdiagSection::kBackfill && key == "last_cycle_when") {
      if (std::optional<double> t = ParenthesizedEpoch(value))
        stats.values["backfill_last_cycle_when_timestamp"] = *t;
      return;
    }
    const SdiagKeys* keys = SdiagKeptKeys(section);
    if (keys == nullptr) return;
    auto it = keys->find(key);
    if (it == keys->end()) return;
    if (std::optional<double> n = ParseUnsigned(value)) stats.values[it->second] = *n;
  });
  return stats;
}

// ---- sshare ------------------------------------------------------------------------------------------

SshareRows ParseSshare(std::string_view text) {
  SshareRows result;
  ForEachLine(text, [&](std::string_view line) {
    if (text::Trim(line).empty()) return;
    std::array<std::string_view, 7> f;
    if (!SplitFields(line, '|', f)) {
      result.rejected.push_back(Reject("fewer than 7 fields", line));
      return;
    }
    SshareRow row;
    row.account = text::Trim(f[0]);  // sshare indents accounts by their depth in the tree
    row.user = text::Trim(f[1]);
    if (row.account.empty()) {
      result.rejected.push_back(Reject("no account", line));
      return;
    }
    row.raw_shares = ParseNumber(f[2]);  // "parent" (shares from the parent) is absent
    row.norm_shares = ParseNumber(f[3]);
    row.raw_usage = ParseNumber(f[4]);
    row.effective_usage = ParseNumber(f[5]);
    row.fairshare = ParseNumber(f[6]);
    result.rows.push_back(row);
  });
  return result;
}

}  // namespace gpuscope
