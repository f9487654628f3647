#include "src/cli/job_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <utility>

#include "src/cli/text_format.h"

namespace gpuscope {
namespace {

constexpr double kIdleNoteFraction = 0.5;    // idle at least this share of the life
constexpr double kMemoryNoteFraction = 0.5;  // peak under this share of the memory on every GPU
constexpr double kLowBusyPercent = 30;
// Throttling worth a note, as the mixin's alerts judge it (deploy/mixin/config.libsonnet:
// powerThrottleRatio, thermalThrottleRatio): the power cap is a note at 20% of the life, thermal and
// hardware slowdowns at 5%.
constexpr double kPowerThrottleFraction = 0.2;
constexpr double kSlowdownThrottleFraction = 0.05;
// Event notes past this many are summed up in one line.
constexpr size_t kMaxEventNotes = 12;

struct ThrottleReason {
  const char* reason;  // gpuscope_gpu_clock_event_active's reason label
  const char* name;    // for people
  double note_fraction;
  const char* advice;
};
constexpr ThrottleReason kThrottleReasons[] = {
    {"sw_power_cap", "the power cap", kPowerThrottleFraction,
     "the work is power-bound; check the power limit (nvidia-smi -q -d POWER)"},
    {"hw_slowdown", "HW slowdown", kSlowdownThrottleFraction,
     "the board cut its clocks (overheating or a power supply signal): the node needs a look"},
    {"hw_thermal_slowdown", "HW thermal slowdown", kSlowdownThrottleFraction,
     "the GPU ran too hot: check the node's cooling"},
    {"sw_thermal_slowdown", "SW thermal slowdown", kSlowdownThrottleFraction,
     "the GPU ran too hot: check the node's cooling"},
    {"hw_power_brake_slowdown", "the power brake", kSlowdownThrottleFraction,
     "the power supply asked the GPUs to slow down: the node needs a look"},
};

// What the XID catalog's recommended action (gpuscope_xid_errors_total's action label) asks of people.
std::string XidActionText(const std::string& action) {
  if (action == "ignore") return "informational, no action needed";
  if (action == "restart_app") return "the application failed: restart the job";
  if (action == "reset_gpu") return "the GPU needs a reset: drain the node";
  if (action == "reboot") return "the node needs a reboot: drain it";
  if (action == "contact_support") return "contact the vendor: an RMA candidate";
  return "see the XID catalog";
}

// Node-level event classes of gpuscope_events_total, for people.
std::string EventClassText(const std::string& kind) {
  static const std::map<std::string, std::string> texts = {
      {"nccl", "NCCL errors"},
      {"nccl_watchdog", "NCCL watchdog timeouts"},
      {"oom", "host out-of-memory kills"},
      {"cuda_oom", "CUDA out-of-memory errors"},
      {"cuda", "CUDA errors"},
      {"ib_completion", "InfiniBand completion errors"},
      {"sxid", "NVSwitch errors (SXid)"},
      {"slurm_interruption", "Slurm interruptions"},
      {"training_hang", "hung training ranks"},
  };
  auto it = texts.find(kind);
  return it == texts.end() ? kind + " events" : it->second;
}

std::string Duration(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  const long h = total / 3600, m = total % 3600 / 60, s = total % 60;
  if (h > 0) return std::to_string(h) + "h" + (m < 10 ? "0" : "") + std::to_string(m) + "m";
  if (m > 0) return std::to_string(m) + "m" + (s < 10 ? "0" : "") + std::to_string(s) + "s";
  return std::to_string(s) + "s";
}

// "GPU 2", "GPUs 2 and 3", "GPUs 1, 2 and 3"; the host named when the job spans several.
std::string GpuList(const std::vector<std::string>& names) {
  std::string out = names.size() == 1 ? "GPU " : "GPUs ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// Memory sizes in GiB (2^30 bytes), labelled so: DCGM's FB figures are MiB. An 80 GB H100 (81920 MiB of
// board memory) reads "80 GiB".
std::string Gibibytes(double mib) { return FormatFixed(mib / 1024, mib < 10240 ? 1 : 0) + " GiB"; }

std::string Percent(double fraction) { return FormatFixed(100 * fraction, 0) + "%"; }

std::string Times(double count) { return count >= 2 ? " (" + FormatFixed(count, 0) + " times)" : ""; }

std::string Grade(double busy) {
  if (busy < 0) return "?";
  if (busy >= 70) return "A";
  if (busy >= 50) return "B";
  if (busy >= 30) return "C";
  if (busy >= 10) return "D";
  return "F";
}

}  // namespace

JobReport BuildJobReport(const JobFacts& facts) {
  JobReport report;
  bool multi_host = false;
  for (const JobGpuFigures& g : facts.gpus) multi_host |= g.hostname != facts.gpus.front().hostname;
  auto name = [&](const JobGpuFigures& g) { return multi_host ? g.hostname + ":" + g.gpu : g.gpu; };

  double busy_sum = 0;
  int busy_count = 0;
  for (const JobGpuFigures& g : facts.gpus) {
    if (g.busy_percent() >= 0) {
      busy_sum += g.busy_percent();
      ++busy_count;
    }
  }
  report.busy_percent = busy_count > 0 ? busy_sum / busy_count : -1;
  report.grade = Grade(report.busy_percent);

  std::vector<std::string> idle;
  double idle_sum = 0;
  for (const JobGpuFigures& g : facts.gpus) {
    if (g.idle_fraction >= kIdleNoteFraction) {
      idle.push_back(name(g));
      idle_sum += g.idle_fraction;
    }
  }
  if (!idle.empty()) {
    const size_t needed = std::max<size_t>(1, facts.gpus.size() - idle.size());
    std::string note = GpuList(idle) + (idle.size() == 1 ? " was" : " were") + " idle " +
                       FormatFixed(100 * idle_sum / idle.size(), 0) + "% of the time: ";
    if (idle.size() < facts.gpus.size()) {
      note += "request " + std::to_string(needed) + (needed == 1 ? " GPU" : " GPUs");
    } else if (facts.is_pod) {
      note += "the pod did no GPU work; lower its nvidia.com/gpu request or scale it down";
    } else {
      note += "the job did no GPU work; release the allocation or use a CPU node";
    }
    report.notes.push_back(note);
  }

  double peak = -1, total = -1;
  bool memory_known = !facts.gpus.empty();
  for (const JobGpuFigures& g : facts.gpus) {
    if (g.memory_peak_mib < 0 || g.memory_total_mib <= 0) {
      memory_known = false;
      break;
    }
    if (g.memory_peak_mib / g.memory_total_mib > (total > 0 ? peak / total : -1)) {
      peak = g.memory_peak_mib;
      total = g.memory_total_mib;
    }
  }
  if (memory_known && peak < kMemoryNoteFraction * total) {
    report.notes.push_back("memory never above " + Gibibytes(peak) + " of " + Gibibytes(total) +
                           ": a smaller GPU or MIG slice fits");
  }

  std::vector<std::string> low;
  for (const JobGpuFigures& g : facts.gpus) {
    const bool idle_gpu = g.idle_fraction >= kIdleNoteFraction;
    if (!idle_gpu && g.busy_percent() >= 0 && g.busy_percent() < kLowBusyPercent) low.push_back(name(g));
  }
  if (!low.empty()) {
    report.notes.push_back(GpuList(low) + " averaged under " + FormatFixed(kLowBusyPercent, 0) +
                           "% busy: the input pipeline or the CPU side does not keep them fed");
  }

  for (const ThrottleReason& reason : kThrottleReasons) {
    std::vector<std::string> held;
    double most = 0;
    for (const JobGpuFigures& g : facts.gpus) {
      auto it = g.throttle_fraction.find(reason.reason);
      if (it == g.throttle_fraction.end() || it->second < reason.note_fraction) continue;
      held.push_back(name(g));
      most = std::max(most, it->second);
    }
    if (held.empty()) continue;
    report.notes.push_back(GpuList(held) + (held.size() == 1 ? " was" : " were") + " held back by " +
                           reason.name + (held.size() == 1 ? " " : " up to ") + Percent(most) +
                           " of the time: " + reason.advice);
  }

  size_t event_notes = 0;
  for (const JobEvent& e : facts.events) {
    if (event_notes == kMaxEventNotes) {
      report.notes.push_back(std::to_string(facts.events.size() - kMaxEventNotes) +
                             " more kinds of events during the job (see --format json)");
      break;
    }
    ++event_notes;
    const std::string on_gpu = "GPU " + (multi_host ? e.hostname + ":" + e.gpu : e.gpu);
    const std::string when = ClockTimeUtc(e.time);
    std::string note;
    if (e.kind == "xid") {
      note.append("XID ").append(e.code).append(" on ").append(on_gpu).append(" at ").append(when);
      note.append(Times(e.count)).append(": ").append(XidActionText(e.action));
    } else if (e.kind == "ecc_dbe") {
      note.append("double-bit ECC error on ")
          .append(on_gpu)
          .append(" at ")
          .append(when)
          .append(Times(e.count));
      note.append(": the GPU needs a reset; check its retired pages and row remaps");
    } else if (e.kind == "nvlink") {
      note.append("NVLink errors on ").append(on_gpu).append(" from ").append(when).append(" (");
      note.append(FormatFixed(e.count, 0))
          .append(" in all): a degrading link slows every collective; the node needs a look");
    } else {
      note.append(EventClassText(e.kind)).append(" on ").append(e.hostname).append(" from ").append(when);
      note.append(" (").append(FormatFixed(e.count, 0)).append(" on the node during the job)");
    }
    report.notes.push_back(std::move(note));
  }

  std::vector<double> medians;
  for (const JobRank& r : facts.ranks) {
    if (r.compute_median_seconds > 0) medians.push_back(r.compute_median_seconds);
  }
  if (medians.size() >= 2) {
    std::sort(medians.begin(), medians.end());
    const size_t n = medians.size();
    const double median = n % 2 == 1 ? medians[n / 2] : (medians[n / 2 - 1] + medians[n / 2]) / 2;
    for (const JobRank& r : facts.ranks) {
      if (r.compute_median_seconds <= median * (1 + kStragglerSlowerFraction)) continue;
      const std::string where = multi_host ? r.hostname + " GPU " + r.gpu : "GPU " + r.gpu;
      report.notes.push_back(
          "rank " + r.rank + " (" + where + ") is a straggler: its own work per step took " +
          Percent(r.compute_median_seconds / median - 1) + " longer than the median rank's (" +
          FormatFixed(r.compute_median_seconds, 3) + " s against " + FormatFixed(median, 3) +
          " s); every other rank waits for it in the collectives");
    }
  }

  const JobAccounting& slurm = facts.accounting;
  if (slurm.reachable && slurm.gpus >= 0 && static_cast<size_t>(slurm.gpus) != facts.gpus.size()) {
    report.notes.push_back("Slurm accounting says " + std::to_string(slurm.gpus) +
                           " GPU(s) but Prometheus saw " + std::to_string(facts.gpus.size()) +
                           ": a node's agent did not attribute or export the rest (check its mapping files "
                           "and scrape)");
  }
  return report;
}

std::string ClockTimeUtc(double unix_seconds) { return FormatUtc(unix_seconds, "%H:%M:%S UTC"); }

namespace {

// The largest share of the life any throttling reason held the GPU's clocks down; -1 when unknown.
double MostThrottled(const JobGpuFigures& g) {
  double most = -1;
  for (const auto& [reason, fraction] : g.throttle_fraction) most = std::max(most, fraction);
  return most;
}

std::string DateTimeUtc(double unix_seconds) { return FormatUtc(unix_seconds, "%Y-%m-%d %H:%M:%S UTC"); }

}  // namespace

std::string RenderJobReportText(const JobFacts& facts, const JobReport& report) {
  std::ostringstream out;
  std::vector<std::string> hosts;
  for (const JobGpuFigures& g : facts.gpus) {
    if (std::find(hosts.begin(), hosts.end(), g.hostname) == hosts.end()) hosts.push_back(g.hostname);
  }
  out << (facts.is_pod ? "Pod " : "Job ") << facts.job;
  if (!facts.job_name.empty()) out << " (" << facts.job_name << ")";
  out << "\n";
  if (!facts.user.empty()) out << "  user       " << facts.user << "\n";
  if (!facts.account.empty())
    out << (facts.is_pod ? "  team       " : "  account    ") << facts.account << "\n";
  if (!facts.partition.empty()) out << "  partition  " << facts.partition << "\n";
  out << "  seen       " << DateTimeUtc(facts.first_seen) << " to "
      << (facts.running ? "now" : DateTimeUtc(facts.last_seen)) << "\n";
  out << "  run time   " << Duration(facts.last_seen - facts.first_seen)
      << (facts.running ? " so far (running: every figure is up to now)" : "") << "\n";
  const JobAccounting& slurm = facts.accounting;
  if (slurm.queried) {
    out << "  slurm      ";
    if (slurm.reachable) {
      out << slurm.state << ", elapsed " << slurm.elapsed << ", exit code " << slurm.exit_code;
      if (slurm.gpus >= 0) out << ", " << slurm.gpus << " GPU(s) allocated";
    } else {
      // sacct's own words can be long: wrapped under the column so a line fits 80 columns.
      const std::string reason = "(sacct not reachable: " + slurm.error + ")";
      constexpr size_t kWidth = 80 - 13;
      for (size_t at = 0; at < reason.size();) {
        size_t end = std::min(reason.size(), at + kWidth);
        size_t next = end;
        if (end < reason.size()) {
          const size_t space = reason.rfind(' ', end);
          if (space != std::string::npos && space > at) end = space, next = space + 1;
        }
        if (at > 0) out << "\n             ";
        out << std::string_view(reason).substr(at, end - at);
        at = next;
      }
    }
    out << "\n";
  }
  out << "  nodes      " << hosts.size() << " (";
  for (size_t i = 0; i < hosts.size(); ++i) out << (i ? ", " : "") << hosts[i];
  out << ")\n  GPUs       " << facts.gpus.size() << "\n";
  out << "  grade      " << report.grade;
  if (report.busy_percent >= 0) out << " (" << FormatFixed(report.busy_percent, 0) << "% busy on average)";
  out << "\n\n";
  auto cell = [](double v, int decimals) { return v < 0 ? std::string("-") : FormatFixed(v, decimals); };
  char line[320];
  std::snprintf(line, sizeof(line), "%-16s %-5s %6s %6s %9s %9s %7s %9s %6s %6s %4s\n", "node", "gpu",
                "util%", "sm%", "mem peak", "mem total", "power W", "energy kJ", "idle%", "thrtl%", "xid");
  out << line;
  for (const JobGpuFigures& g : facts.gpus) {
    const double throttled = MostThrottled(g);
    std::snprintf(line, sizeof(line), "%-16s %-5s %6s %6s %9s %9s %7s %9s %6s %6s %4s\n", g.hostname.c_str(),
                  g.gpu.c_str(), cell(g.utilization_percent, 0).c_str(), cell(g.sm_active_percent, 0).c_str(),
                  (g.memory_peak_mib < 0 ? std::string("-") : Gibibytes(g.memory_peak_mib)).c_str(),
                  (g.memory_total_mib < 0 ? std::string("-") : Gibibytes(g.memory_total_mib)).c_str(),
                  cell(g.power_mean_watts, 0).c_str(),
                  (g.energy_joules < 0 ? std::string("-") : FormatFixed(g.energy_joules / 1000, 1)).c_str(),
                  (g.idle_fraction < 0 ? std::string("-") : FormatFixed(100 * g.idle_fraction, 0)).c_str(),
                  (throttled < 0 ? std::string("-") : FormatFixed(100 * throttled, 0)).c_str(),
                  FormatFixed(g.xid_errors, 0).c_str());
    out << line;
  }
  if (!report.notes.empty()) {
    out << "\nNotes\n";
    for (const std::string& note : report.notes) out << "  - " << note << "\n";
  }
  return out.str();
}

std::string RenderJobReportJson(const JobFacts& facts, const JobReport& report) {
  auto figure = [](double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json doc;
  doc["job"] = facts.job;
  doc["kind"] = facts.is_pod ? "pod" : "slurm_job";
  doc["user"] = facts.user;
  doc["account"] = facts.account;
  doc["partition"] = facts.partition;
  doc["job_name"] = facts.job_name;
  doc["first_seen"] = facts.first_seen;
  doc["last_seen"] = facts.last_seen;
  doc["running"] = facts.running;
  doc["run_time_seconds"] = facts.last_seen - facts.first_seen;
  doc["window_seconds"] = facts.window_seconds;
  doc["grade"] = report.grade;
  doc["busy_percent"] = figure(report.busy_percent);
  doc["notes"] = report.notes;
  doc["gpus"] = nlohmann::json::array();
  for (const JobGpuFigures& g : facts.gpus) {
    doc["gpus"].push_back({{"hostname", g.hostname},
                           {"gpu", g.gpu},
                           {"uuid", g.uuid},
                           {"model", g.model},
                           {"utilization_percent", figure(g.utilization_percent)},
                           {"sm_active_percent", figure(g.sm_active_percent)},
                           {"memory_peak_mib", figure(g.memory_peak_mib)},
                           {"memory_total_mib", figure(g.memory_total_mib)},
                           {"power_mean_watts", figure(g.power_mean_watts)},
                           {"energy_joules", figure(g.energy_joules)},
                           {"idle_fraction", figure(g.idle_fraction)},
                           {"throttle_fraction", g.throttle_fraction},
                           {"throttle_seconds", g.throttle_seconds},
                           {"xid_errors", g.xid_errors},
                           {"ecc_dbe_errors", g.ecc_dbe_errors},
                           {"nvlink_errors", g.nvlink_errors}});
  }
  doc["events"] = nlohmann::json::array();
  for (const JobEvent& e : facts.events) {
    doc["events"].push_back({{"time", e.time},
                             {"kind", e.kind},
                             {"hostname", e.hostname},
                             {"gpu", e.gpu},
                             {"code", e.code},
                             {"action", e.action},
                             {"count", e.count}});
  }
  doc["ranks"] = nlohmann::json::array();
  for (const JobRank& r : facts.ranks) {
    doc["ranks"].push_back({{"rank", r.rank},
                            {"hostname", r.hostname},
                            {"gpu", r.gpu},
                            {"compute_median_seconds", figure(r.compute_median_seconds)}});
  }
  const JobAccounting& slurm = facts.accounting;
  if (!slurm.queried) {
    doc["slurm"] = nullptr;
  } else if (!slurm.reachable) {
    doc["slurm"] = {{"reachable", false}, {"error", slurm.error}};
  } else {
    doc["slurm"] = {{"reachable", true},
                    {"state", slurm.state},
                    {"elapsed", slurm.elapsed},
                    {"exit_code", slurm.exit_code},
                    {"alloc_tres", slurm.alloc_tres},
                    {"gpus", slurm.gpus < 0 ? nlohmann::json(nullptr) : nlohmann::json(slurm.gpus)}};
  }
  return doc.dump(2) + "\n";
}

}  // namespace gpuscope
