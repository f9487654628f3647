#include "src/cli/job_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace gpuscope {
namespace {

constexpr double kIdleNoteFraction = 0.5;    // idle at least this share of the life
constexpr double kMemoryNoteFraction = 0.5;  // peak under this share of the memory on every GPU
constexpr double kLowBusyPercent = 30;

std::string Fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
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

std::string Gigabytes(double mib) { return Fixed(mib / 1024, mib < 10240 ? 1 : 0) + " GB"; }

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
                       Fixed(100 * idle_sum / idle.size(), 0) + "% of the time: ";
    note += idle.size() == facts.gpus.size()
                ? "the job did no GPU work; release the allocation or use a CPU node"
                : "request " + std::to_string(needed) + (needed == 1 ? " GPU" : " GPUs");
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
    report.notes.push_back("memory never above " + Gigabytes(peak) + " of " + Gigabytes(total) +
                           ": a smaller GPU or MIG slice fits");
  }

  std::vector<std::string> low;
  for (const JobGpuFigures& g : facts.gpus) {
    const bool idle_gpu = g.idle_fraction >= kIdleNoteFraction;
    if (!idle_gpu && g.busy_percent() >= 0 && g.busy_percent() < kLowBusyPercent) low.push_back(name(g));
  }
  if (!low.empty()) {
    report.notes.push_back(GpuList(low) + " averaged under " + Fixed(kLowBusyPercent, 0) +
                           "% busy: the input pipeline or the CPU side does not keep them fed");
  }

  double xids = 0, ecc = 0;
  for (const JobGpuFigures& g : facts.gpus) {
    xids += g.xid_errors;
    ecc += g.ecc_dbe_errors;
  }
  if (xids > 0) {
    report.notes.push_back(Fixed(xids, 0) + " XID error(s) during the job: see gpuscope_xid_errors_total");
  }
  if (ecc > 0) {
    report.notes.push_back(Fixed(ecc, 0) +
                           " double-bit ECC error(s) during the job: the GPU may need a reset");
  }
  return report;
}

std::string RenderJobReportText(const JobFacts& facts, const JobReport& report) {
  std::ostringstream out;
  std::vector<std::string> hosts;
  for (const JobGpuFigures& g : facts.gpus) {
    if (std::find(hosts.begin(), hosts.end(), g.hostname) == hosts.end()) hosts.push_back(g.hostname);
  }
  out << "Job " << facts.job;
  if (!facts.job_name.empty()) out << " (" << facts.job_name << ")";
  out << "\n";
  if (!facts.user.empty()) out << "  user       " << facts.user << "\n";
  if (!facts.account.empty()) out << "  account    " << facts.account << "\n";
  if (!facts.partition.empty()) out << "  partition  " << facts.partition << "\n";
  out << "  run time   " << Duration(facts.last_seen - facts.first_seen) << "\n";
  out << "  nodes      " << hosts.size() << " (";
  for (size_t i = 0; i < hosts.size(); ++i) out << (i ? ", " : "") << hosts[i];
  out << ")\n  GPUs       " << facts.gpus.size() << "\n";
  out << "  grade      " << report.grade;
  if (report.busy_percent >= 0) out << " (" << Fixed(report.busy_percent, 0) << "% busy on average)";
  out << "\n\n";
  auto cell = [](double v, int decimals) { return v < 0 ? std::string("-") : Fixed(v, decimals); };
  char line[256];
  std::snprintf(line, sizeof(line), "%-16s %-5s %6s %6s %9s %9s %7s %9s %6s %4s\n", "node", "gpu", "util%",
                "sm%", "mem peak", "mem total", "power W", "energy kJ", "idle%", "xid");
  out << line;
  for (const JobGpuFigures& g : facts.gpus) {
    std::snprintf(line, sizeof(line), "%-16s %-5s %6s %6s %9s %9s %7s %9s %6s %4s\n", g.hostname.c_str(),
                  g.gpu.c_str(), cell(g.utilization_percent, 0).c_str(), cell(g.sm_active_percent, 0).c_str(),
                  (g.memory_peak_mib < 0 ? std::string("-") : Gigabytes(g.memory_peak_mib)).c_str(),
                  (g.memory_total_mib < 0 ? std::string("-") : Gigabytes(g.memory_total_mib)).c_str(),
                  cell(g.power_mean_watts, 0).c_str(),
                  (g.energy_joules < 0 ? std::string("-") : Fixed(g.energy_joules / 1000, 1)).c_str(),
                  (g.idle_fraction < 0 ? std::string("-") : Fixed(100 * g.idle_fraction, 0)).c_str(),
                  Fixed(g.xid_errors, 0).c_str());
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
  doc["user"] = facts.user;
  doc["account"] = facts.account;
  doc["partition"] = facts.partition;
  doc["job_name"] = facts.job_name;
  doc["first_seen"] = facts.first_seen;
  doc["last_seen"] = facts.last_seen;
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
                           {"xid_errors", g.xid_errors},
                           {"ecc_dbe_errors", g.ecc_dbe_errors}});
  }
  return doc.dump(2) + "\n";
}

}  // namespace gpuscope
